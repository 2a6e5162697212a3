"""The grader registry: validation at registration, lookup, and a real plugin package installed
with pip and found through the `tracegrade.graders` entry point group."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest

from tracegrade import InputError, Outcome, PluginError, ToolCall, ToolRecord
from tracegrade.graders import Grader, GraderRegistry, GraderServices, build_context, load_registry
from tracegrade.graders.registry import GROUP, validate_grader_class

SAMPLE = Path(__file__).parent / "plugins" / "tracegrade_sample_plugin"


class Valid(Grader):
    id = "valid_grader"
    label = "Valid"

    def grade(self, input, response, context):
        return self.result(5.0, "ok")


class AsyncOnly(Grader):
    id = "async_only"
    label = "Async only"
    min_score = 0
    max_score = 1

    async def agrade(self, input, response, context):
        return self.result(1, "ok")


def variant(**declarations):
    return type("Variant", (Valid,), declarations)


class NoGrade(Grader):
    id = "no_grade"
    label = "No grade"


class NoId(Grader):
    label = "No id"

    def grade(self, input, response, context):
        return self.result(1, "")


@pytest.mark.parametrize(
    ("candidate", "problem"),
    [
        (object, "not a Grader subclass"),
        (Valid(), "not a Grader subclass"),
        (NoId, "missing `id` declaration"),
        (variant(id=""), "missing `id` declaration"),
        (variant(id="has space"), "id 'has space' must be letters"),
        (variant(label=""), "grader 'valid_grader' is missing a `label` declaration"),
        (variant(min_score=5.0, max_score=5.0), "min_score (5.0) must be below max_score (5.0)"),
        (variant(min_score=3, max_score=1), "min_score (3) must be below max_score (1)"),
        (variant(max_score="5"), "`max_score` must be a number, got '5'"),
        (variant(min_score=True), "`min_score` must be a number, got True"),
        (variant(max_score=float("nan")), "`max_score` must be finite"),
        (variant(sees_tool_calls=True), "sees_tool_calls is only meaningful for an LLM judge"),
        (variant(observes_actions="yes"), "`observes_actions` must be true or false"),
        (variant(description=None), "`description` must be a string"),
        (NoGrade, "grader 'no_grade' implements neither grade() nor agrade()"),
    ],
)
def test_invalid_declarations_name_the_plugin(candidate, problem):
    with pytest.raises(PluginError) as info:
        validate_grader_class(candidate, source="plugin 'acme'")
    assert info.value.exit_code == 4
    assert str(info.value).startswith("plugin 'acme': ")
    assert problem in str(info.value)


def test_valid_declarations_register():
    registry = GraderRegistry.from_classes(
        [Valid, AsyncOnly, variant(id="judge_x", llm=True, sees_tool_calls=True)]
    )
    assert registry.ids() == ["valid_grader", "async_only", "judge_x"]
    assert registry.create("async_only").grade("", "", {}).score == 1.0


def test_duplicate_id_names_both_sources():
    registry = GraderRegistry()
    registry.register(Valid, source="plugin 'one'")
    registry.register(Valid, source="plugin 'one'")  # the same class twice is harmless
    with pytest.raises(
        PluginError,
        match="plugin 'two': duplicate grader id 'valid_grader', "
        "already registered by plugin 'one'",
    ):
        registry.register(variant(), source="plugin 'two'")


def test_builtins_through_entry_points_and_lookup():
    registry = load_registry()
    assert load_registry() is registry  # cached
    for grader_id in (
        "tool_usage_grader",
        "format_grader",
        "state_grader",
        "exact_match",
        "contains",
        "similarity",
    ):
        assert grader_id in registry
        assert "'tracegrade'" in registry.source_of(grader_id)
    services = GraderServices()
    made = registry.create("format_grader", services=services)
    assert made.services is services
    with pytest.raises(InputError) as info:
        registry.get("tool_usage")
    assert info.value.hint == "did you mean 'tool_usage_grader'?"
    assert info.value.exit_code == 4
    with pytest.raises(InputError) as info:
        registry.get("zzzzzz")
    assert info.value.hint == "run `tracegrade graders` for the list"


def test_catalog_rows_from_declarations():
    rows = {row.id: row for row in load_registry().catalog()}
    tool_usage = rows["tool_usage_grader"]
    assert (
        tool_usage.kind,
        tool_usage.scale,
        tool_usage.observes_actions,
        tool_usage.sees_tool_calls,
    ) == ("Deterministic", "(0-5)", True, None)
    assert tool_usage.needs == "`expected_tools` (required, else skips)"
    assert rows["exact_match"].scale == "(binary, 0-1)"
    assert rows["state_grader"].observes_actions and not rows["format_grader"].observes_actions


def test_entry_point_objects_list_class_and_load_failure():
    listed = metadata.EntryPoint("mine", "tests.test_registry:LISTED", GROUP)
    single = metadata.EntryPoint("one", "tests.test_registry:SAME_ID", GROUP)
    registry = GraderRegistry.from_entry_points([listed])
    assert registry.ids() == ["valid_grader", "async_only"]
    with pytest.raises(PluginError, match="duplicate grader id 'valid_grader'"):
        GraderRegistry.from_entry_points([listed, single])
    missing = metadata.EntryPoint("gone", "no_such_module_xyz:GRADERS", GROUP)
    with pytest.raises(
        PluginError,
        match="entry point gone = no_such_module_xyz:GRADERS: cannot "
        "be loaded: ModuleNotFoundError",
    ):
        GraderRegistry.from_entry_points([missing])
    bad = metadata.EntryPoint("bad", "tests.test_registry:BAD_LIST", GROUP)
    with pytest.raises(PluginError, match="not a Grader subclass"):
        GraderRegistry.from_entry_points([bad])


LISTED = [Valid, AsyncOnly]
BAD_LIST = [Valid, "not a grader"]
SAME_ID = variant(label="Another class, same id")


# -- a real plugin package, installed with pip -------------------------------------------------
def pip_install(source: Path, target: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--no-cache-dir",
            "--quiet",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )


@pytest.fixture
def installed(tmp_path):
    """Install packages into a fresh target dir on sys.path; undo everything afterwards."""
    target = tmp_path / "site"
    before = set(sys.modules)

    def install(source: Path) -> None:
        pip_install(source, target)
        if str(target) not in sys.path:
            sys.path.insert(0, str(target))
        importlib.invalidate_caches()
        load_registry.cache_clear()

    yield install
    if str(target) in sys.path:
        sys.path.remove(str(target))
    for name in set(sys.modules) - before:
        if name.startswith("tracegrade_"):
            del sys.modules[name]
    importlib.invalidate_caches()
    load_registry.cache_clear()


def test_installed_plugin_is_found_and_grades(installed):
    assert "read_only_run" not in load_registry()
    installed(SAMPLE)
    registry = load_registry()
    assert "read_only_run" in registry
    assert registry.source_of("read_only_run") == (
        "plugin 'tracegrade-sample-plugin', entry point read_only_run = "
        "tracegrade_sample_plugin:ReadOnlyRunGrader"
    )
    row = next(r for r in registry.catalog() if r.id == "read_only_run")
    assert (row.scale, row.observes_actions) == ("(binary, 0-1)", True)
    plugin = registry.create("read_only_run")

    def call(name, seq):
        return ToolCall(
            seq=seq,
            name=name,
            qualified_id=f"desk:{name}",
            call_id=None,
            arguments={},
            outcome=Outcome.OK,
        )

    record = ToolRecord([call("list_users", 0), call("delete_user", 1)])
    result = plugin.grade("", "", build_context({"id": "q"}, messages=[], tool_calls=record))
    assert (result.score, result.reason) == (
        0.0,
        "mutating tools called: delete_user (from the agent tool-call record)",
    )
    clean = plugin.grade("", "", build_context({"id": "q"}, messages=[], tool_calls=ToolRecord()))
    assert clean.score == 1.0
    absent = plugin.grade("", "I only read things", build_context({"id": "q"}, messages=[]))
    assert absent.error and absent.score is None


BROKEN_PYPROJECT = """\
[build-system]
requires = []
build-backend = "plugin_backend"
backend-path = ["_backend"]

[project]
name = "tracegrade-broken-plugin"
version = "0.0.1"

[project.entry-points."tracegrade.graders"]
broken = "tracegrade_broken_plugin:GRADERS"

[tool.plugin-backend]
packages = ["tracegrade_broken_plugin"]
"""

BROKEN_MODULE = """\
from tracegrade.graders import Grader


class Inverted(Grader):
    id = "inverted"
    label = "Inverted"
    min_score = 5.0
    max_score = 0.0

    def grade(self, input, response, context):
        return self.result(0.0, "")


GRADERS = [Inverted]
"""


def test_broken_plugin_is_reported_by_name(installed, tmp_path):
    source = tmp_path / "broken"
    shutil.copytree(
        SAMPLE / "_backend", source / "_backend", ignore=shutil.ignore_patterns("__pycache__")
    )
    (source / "pyproject.toml").write_text(BROKEN_PYPROJECT)
    (source / "tracegrade_broken_plugin").mkdir()
    (source / "tracegrade_broken_plugin" / "__init__.py").write_text(textwrap.dedent(BROKEN_MODULE))
    installed(source)
    with pytest.raises(PluginError) as info:
        load_registry()
    assert str(info.value) == (
        "plugin 'tracegrade-broken-plugin', entry point broken = tracegrade_broken_plugin:GRADERS: "
        "Inverted: grader 'inverted': min_score (5.0) must be below max_score (0.0)"
    )


@pytest.mark.parametrize(
    "grader_id",
    ["tool_usage_grader", "format_grader", "state_grader", "exact_match", "contains", "similarity"],
)
def test_unknown_options_are_refused_not_ignored(grader_id):
    with pytest.raises(TypeError, match="unexpected keyword argument 'strictness'"):
        load_registry().create(grader_id, strictness=3)
