"""The public facades: `tracegrade` and `tracegrade.graders` export exactly what `__all__` says, and every
name resolves (a renamed function would otherwise break users at import time, not in CI)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import types

import pytest

import tracegrade
import tracegrade.graders as graders


@pytest.mark.parametrize("package", [tracegrade, graders], ids=lambda p: p.__name__)
def test_all_is_sorted_unique_and_every_name_resolves(package):
    names = package.__all__
    assert names == sorted(set(names), key=names.index)  # no duplicates
    for name in names:
        assert getattr(package, name) is not None, name


def test_graders_namespace_holds_exactly_all():
    for name in graders.__all__:  # the facade is lazy: resolve every name, whatever ran before
        getattr(graders, name)
    public = {
        name
        for name, value in vars(graders).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(graders.__all__)


@pytest.mark.parametrize("package", [tracegrade, graders], ids=lambda p: p.__name__)
def test_facade_names_the_defining_module(package):
    for name in package.__all__:
        value = getattr(package, name)
        module = importlib.import_module(package._EXPORTS[name])
        assert getattr(module, name) is value
        assert name in getattr(module, "__all__", [name]), f"{name} is not public in {module}"


def test_a_question_results_answer_part_is_public():
    # A user reading `result.answer` (or building a QuestionResult with one) names its type
    # from the facade, as they name QuestionResult's.
    result = tracegrade.QuestionResult(target="t", id="q", answer={"response": "Paris"})
    assert type(result.answer) is tracegrade.QuestionAnswer
    assert result.answer == tracegrade.QuestionAnswer(response="Paris")


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_thing"):
        tracegrade.no_such_thing  # noqa: B018


# What a light entry point must not pay for: LangGraph, the judges and their HTTP client, the
# schema validator, the runner.
HEAVY = (
    "langgraph",
    "langchain_core",
    "tracegrade.graders.judges",
    "httpx",
    "jsonschema",
    "tracegrade.execution",
    "tracegrade.rundir",
    "tracegrade.verdicts",
)


def _heavy_modules_after(code: str) -> list[str]:
    probe = code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = out.stdout.split()
    return [m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY)]


@pytest.mark.parametrize(
    "package", ["tracegrade", "tracegrade.graders", "tracegrade.pytest_plugin"]
)
def test_importing_a_facade_imports_nothing_heavy(package):
    # The facades are lazy: a user importing one name, or the CLI, stays light; so does the
    # pytest plugin, which every pytest run of a project that installs tracegrade loads.
    assert _heavy_modules_after(f"import {package}") == []


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["validate", "--help"]])
def test_the_cli_help_imports_nothing_heavy(argv):
    # `tracegrade --help` starts in a few tens of milliseconds (bench/startup.py): the parser is
    # built from the subcommand modules alone, each importing its machinery when it runs.
    code = (
        f"from tracegrade.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass"
    )
    assert _heavy_modules_after(code) == []


def test_the_probe_sees_a_heavy_import():
    # The check above can fail: asking for a judge loads the judges.
    assert "tracegrade.graders.judges" in _heavy_modules_after(
        "from tracegrade.graders import LlmJudge"
    )
