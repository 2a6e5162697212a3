"""One plugin loader for the three entry-point groups, one loader for user code.

Plugins are real distributions here: a `.dist-info` folder with `entry_points.txt` on a
temporary `sys.path` entry, found by `importlib.metadata` exactly as an installed wheel is.
"""

from __future__ import annotations

import sys
import textwrap

import pytest

from tracegrade import ConfigError, InputError, PluginError, build_provider
from tracegrade.graders import load_registry
from tracegrade.inputs.sources import dataset_sources
from tracegrade.judging import load_chat_model, provider_backends
from tracegrade.usercode.loading import import_file, load_object
from tracegrade.usercode.plugins import installed_entry_points, load_plugins

PROVIDER = """
class Backend:
    @classmethod
    def from_config(cls, config, *, base_dir=None):
        return cls()
"""

SOURCE = """
class Source:
    name = "file"

    def materialize(self, what, *, base_dir, store_path):
        return what
"""

GRADER = """
from tracegrade.graders import Grader


class Mine(Grader):
    id = "exact_match"
    label = "Not the built-in"

    def grade(self, input, response, context):
        return self.result(1.0, "ok")
"""


def distribution(tmp_path, monkeypatch, name: str, entry_points: str, module: str = "") -> None:
    """Install distribution `name` (one module of the same name) on a fresh sys.path entry."""
    root = tmp_path / f"site-{name}"
    info = root / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    (root / f"{name}.py").write_text(textwrap.dedent(module))
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delitem(sys.modules, name, raising=False)


@pytest.fixture(autouse=True)
def _fresh_caches():
    dataset_sources.cache_clear()
    load_registry.cache_clear()
    yield
    dataset_sources.cache_clear()
    load_registry.cache_clear()


def test_two_distributions_registering_one_provider_kind_is_an_error_naming_both(
    tmp_path, monkeypatch
):
    # Before: the provider group kept whichever entry point came first, silently.
    for name in ("acme_judges", "other_judges"):
        ep = f"[tracegrade.providers]\nshared = {name}:Backend\n"
        distribution(tmp_path, monkeypatch, name, ep, PROVIDER)
    with pytest.raises(PluginError) as raised:
        provider_backends()
    message = str(raised.value)
    assert "duplicate judge provider 'shared'" in message
    assert "'acme_judges'" in message and "'other_judges'" in message
    assert raised.value.exit_code == 4
    with pytest.raises(PluginError):
        build_provider({"provider": "openai-compatible", "model": "m"})


def test_a_dataset_source_shadowing_a_built_in_names_both_distributions(tmp_path, monkeypatch):
    distribution(
        tmp_path,
        monkeypatch,
        "acme_sources",
        "[tracegrade.datasets]\nmine = acme_sources:Source\n",
        SOURCE,
    )
    with pytest.raises(PluginError) as raised:
        dataset_sources()
    message = str(raised.value)
    assert "duplicate dataset source 'file'" in message
    assert "'acme_sources'" in message and "'tracegrade'" in message


def test_a_grader_id_shadowing_a_built_in_names_both_distributions(tmp_path, monkeypatch):
    distribution(
        tmp_path, monkeypatch, "acme_graders", "[tracegrade.graders]\nmine = acme_graders:Mine\n"
    )
    (tmp_path / "site-acme_graders" / "acme_graders.py").write_text(GRADER)
    with pytest.raises(PluginError) as raised:
        load_registry()
    message = str(raised.value)
    assert "duplicate grader id 'exact_match'" in message
    assert "'acme_graders'" in message and "'tracegrade'" in message


def test_a_provider_plugin_is_validated_when_it_registers(tmp_path, monkeypatch):
    # Before: a provider was only loaded when a config asked for its kind.
    distribution(
        tmp_path,
        monkeypatch,
        "lame_judges",
        "[tracegrade.providers]\nlame = lame_judges:Backend\n",
        "class Backend:\n    pass\n",
    )
    with pytest.raises(PluginError, match=r"'lame_judges'.*has no from_config"):
        provider_backends()


def test_the_same_entry_point_seen_twice_counts_once(tmp_path, monkeypatch):
    # An editable install beside its source tree: one distribution, visible twice.
    for folder in ("a", "b"):
        root = tmp_path / folder
        info = root / "twice-1.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: twice\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text("[tracegrade.providers]\ntwice = twice:Backend\n")
        (root / "twice.py").write_text(PROVIDER)
        monkeypatch.syspath_prepend(str(root))
    monkeypatch.delitem(sys.modules, "twice", raising=False)
    assert [e.name for e in installed_entry_points("tracegrade.providers")].count("twice") == 1
    assert "twice" in provider_backends()


def test_load_plugins_rules_for_any_group(tmp_path, monkeypatch):
    distribution(
        tmp_path,
        monkeypatch,
        "many_things",
        "[tracegrade.test]\nboth = many_things:BOTH\nagain = many_things:BOTH\n",
        "A = 1\nB = 2\nBOTH = [A, B]\n",
    )
    seen = []
    plugins = load_plugins(
        "tracegrade.test",
        kind="thing",
        validate=lambda obj, source: seen.append((obj, source)),
        name_of=lambda obj, _ep: f"n{obj}",
        many=True,
    )
    # The same object under the same name twice (two entry points naming one list) counts once.
    assert {name: p.obj for name, p in plugins.items()} == {"n1": 1, "n2": 2}
    assert plugins["n1"].distribution == "many_things"
    assert all("plugin 'many_things', entry point" in source for _, source in seen)

    def refuse(obj, source):
        raise PluginError(f"{source}: not a thing")

    with pytest.raises(PluginError, match="not a thing"):
        load_plugins("tracegrade.test", kind="thing", validate=refuse)


# -- one loader for user code ------------------------------------------------------------------
def test_file_and_module_references_resolve_through_one_loader(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "factory.py").write_text("class Box:\n    VALUE = 7\n")
    assert load_object("pkg/factory.py:Box.VALUE", base_dir=tmp_path) == 7
    assert load_object("json:dumps", base_dir=tmp_path) is __import__("json").dumps
    with pytest.raises(ConfigError, match="bad reference 'nocolon'") as info:
        load_object("nocolon", base_dir=tmp_path, file="c.yaml", line=2, key="/targets/t/agent")
    assert (info.value.file, info.value.line, info.value.key) == ("c.yaml", 2, "/targets/t/agent")
    with pytest.raises(ConfigError, match="did you mean 'Box'"):
        load_object("pkg/factory.py:Bx", base_dir=tmp_path)


@pytest.mark.parametrize(
    ("source", "message", "line"),
    [
        ("import sys\n\nsys.exit(0)\n", "SystemExit", 3),
        ("x = (\n", "syntax error", 1),
        ("\nraise KeyError('k')\n", "KeyError", 2),
    ],
)
def test_user_code_failing_at_import_is_invalid_input_with_file_and_line(
    tmp_path, source, message, line
):
    file = tmp_path / "user_code.py"
    file.write_text(source)
    with pytest.raises(InputError, match=message) as info:
        import_file(file, namespace="t_user")
    assert (info.value.file, info.value.line, info.value.exit_code) == (str(file), line, 4)
    assert not [m for m in sys.modules if m.startswith("t_user_user_code")]


def test_a_chat_model_file_calling_sys_exit_is_a_config_error(tmp_path):
    # Before: the judge's chat_model loader caught Exception only, so sys.exit() at import
    # ended the process (with exit 0) instead of reporting the bad reference.
    (tmp_path / "model.py").write_text("import sys\nsys.exit(0)\n")
    with pytest.raises(ConfigError, match=r"cannot load chat_model.*SystemExit") as info:
        load_chat_model("model.py:MODEL", base_dir=tmp_path)
    assert info.value.key == "judge.chat_model"
    assert info.value.exit_code == 4


def test_a_file_runs_under_a_private_name_and_once_when_cached(tmp_path):
    file = tmp_path / "graders.py"
    file.write_text("import itertools\nCOUNT = next(itertools.count())\n")
    first = import_file(file, namespace="t_cached")
    assert first.__name__.startswith("t_cached_graders_")
    assert sys.modules.get("graders") is None or sys.modules["graders"] is not first
    assert import_file(file, namespace="t_cached") is first
    assert import_file(file, namespace="t_fresh", cache=False) is not first


def test_the_cli_stops_with_exit_4_naming_both_distributions(tmp_path, monkeypatch, capsys):
    from tracegrade.cli import main

    for name in ("acme_one", "acme_two"):
        ep = f"[tracegrade.graders]\nmine = {name}:Mine\n"
        distribution(tmp_path, monkeypatch, name, ep, GRADER.replace("exact_match", "twin"))
    assert main(["graders"]) == 4
    err = capsys.readouterr().err
    assert "duplicate grader id 'twin'" in err
    assert "'acme_one'" in err and "'acme_two'" in err
