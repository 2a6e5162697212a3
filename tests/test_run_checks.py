"""`run` refuses everything `validate` refuses: the CI recipe calls only `run`, so a mistake
`validate` would catch must not run (and pass) instead. Each case through the real CLI, both
commands: exit 4 with the file, line and key of the mistake and how to fix it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.runs_support import QUESTIONS, write_project
from tracegrade.cli import main

DATA = "data/questions.yaml"


def _line_of(path: Path, needle: str, after: str | None = None) -> int:
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if after in line) if after else 0
    for number, line in enumerate(lines[start:], start=start + 1):
        if needle in line:
            return number
    raise AssertionError(needle)


def _both(path: Path, capsys) -> list[str]:
    """stderr of `validate` and of `run`, each asserted exit 4 with no run directory made."""
    errors = []
    for argv in (["validate", str(path)], ["run", "--config", str(path), "--quiet"]):
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 4, (argv[0], err)
        errors.append(err)
    runs = path.parent / "runs"
    assert not runs.exists() or not any(runs.iterdir())
    return errors


def _question(**row) -> dict:
    return {"id": "q", "input": "weather in Paris?", **row}


def test_a_misspelt_tool_under_should_run_false(tmp_path, capsys):
    question = _question(expected_tools=[{"tool": "lookpu", "should_run": False}])
    path = write_project(tmp_path, questions=[], extra_questions=[question])
    for err in _both(path, capsys):
        line = _line_of(tmp_path / DATA, "tool: lookpu")
        assert f"{tmp_path / DATA}:{line}" in err
        assert "/questions/0/expected_tools/0/tool" in err
        assert "no tool 'lookpu'" in err and "did you mean 'lookup'?" in err


def test_an_argument_the_tool_does_not_take(tmp_path, capsys):
    question = _question(
        expected_tools=[{"tool": "lookup", "should_run": True, "args": {"cty": "Paris"}}]
    )
    path = write_project(tmp_path, questions=[], extra_questions=[question])
    for err in _both(path, capsys):
        line = _line_of(tmp_path / DATA, "cty: Paris")
        assert f"{tmp_path / DATA}:{line}" in err
        assert "/questions/0/expected_tools/0/args/cty" in err
        assert "tool 'lookup' has no argument 'cty'" in err
        assert "did you mean 'city'?" in err and "its arguments: api_token, city" in err


def test_a_trajectory_argument_the_tool_does_not_take(tmp_path, capsys):
    question = _question(trajectory={"calls": [{"tool": "lookup", "args": {"town": "Paris"}}]})
    path = write_project(tmp_path, questions=[], extra_questions=[question])
    for err in _both(path, capsys):
        assert "/questions/0/trajectory/calls/0/args/town" in err
        assert "tool 'lookup' has no argument 'town'" in err


def test_an_unknown_matcher_keyword(tmp_path, capsys):
    question = _question(
        trajectory={"calls": [{"tool": "lookup", "args": {"city": {"regexp": "^P"}}}]}
    )
    path = write_project(tmp_path, questions=[], extra_questions=[question])
    for err in _both(path, capsys):
        line = _line_of(tmp_path / DATA, "regexp:")
        assert f"{tmp_path / DATA}:{line}" in err
        assert "/questions/0/trajectory/calls/0/args/city/regexp" in err
        assert "unknown matcher keyword 'regexp'" in err and "did you mean 'regex'?" in err


def test_a_literal_mapping_for_an_object_argument_is_no_matcher_mistake(tmp_path, capsys):
    # An argument that holds an object may be compared with a literal mapping.
    path = write_project(tmp_path, questions=["paris"])
    agent = (tmp_path / "agent.py").read_text()
    agent = agent.replace(
        'def lookup(city: str, api_token: str = "") -> str:',
        'def lookup(city: str, api_token: str = "", options: dict | None = None) -> str:',
    )
    (tmp_path / "agent.py").write_text(agent)
    data = yaml.safe_load((tmp_path / DATA).read_text())
    data["questions"][0]["trajectory"] = {
        "calls": [{"tool": "lookup", "args": {"options": {"units": "metric"}}}]
    }
    (tmp_path / DATA).write_text(yaml.safe_dump(data))
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err


def test_a_factory_returning_an_uncompiled_state_graph(tmp_path, capsys):
    path = write_project(tmp_path, questions=["paris"])
    agent = (tmp_path / "agent.py").read_text()
    assert 'return graph.compile(name="helper")' in agent
    (tmp_path / "agent.py").write_text(
        agent.replace('return graph.compile(name="helper")', "return graph")
    )
    for err in _both(path, capsys):
        line = _line_of(path, "agent: agent.py:build_graph")
        assert f"{path}:{line}" in err and "/targets/t/agent" in err
        assert "returned an uncompiled StateGraph" in err and ".compile(name=" in err


def test_state_assertions_on_a_target_without_an_environment(tmp_path, capsys):
    graders = ["tool_usage_grader", "state_grader"]
    path = write_project(tmp_path, questions=["paris", "remember"], target={"graders": graders})
    for err in _both(path, capsys):
        line = _line_of(tmp_path / DATA, "state:")
        assert f"{tmp_path / DATA}:{line}" in err and "/questions/1/metadata/state" in err
        assert "declares no `environment:` factory" in err and "add `environment:" in err


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"telemetry": {"otlp_endpoint": "localhost:4318"}}, "/telemetry/otlp_endpoint"),
        (
            {
                "judge": {
                    "provider": "openai-compatible",
                    "base_url": "127.0.0.1:8000/v1",
                    "model": "m",
                }
            },
            "/judge/base_url",
        ),
    ],
    ids=["otlp-endpoint", "judge-base-url"],
)
def test_an_endpoint_url_without_a_scheme(tmp_path, capsys, config, key):
    path = write_project(tmp_path, questions=["paris"], config=config)
    for err in _both(path, capsys):
        assert key in err and "no http:// or https:// scheme" in err
        assert "http://" in err.split(key, 1)[1]  # the fix, spelt out


def test_an_endpoint_variable_without_a_scheme(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")
    path = write_project(tmp_path, questions=["paris"])
    assert main(["run", "--config", str(path), "--quiet"]) == 4
    err = capsys.readouterr().err
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in err and "no http:// or https:// scheme" in err


def test_export_to_an_endpoint_without_a_scheme_is_exit_4(tmp_path, capsys):
    path = write_project(tmp_path, questions=["paris"])
    assert main(["run", "--config", str(path), "--quiet"]) == 0
    run_id = next((tmp_path / "runs").iterdir()).name
    capsys.readouterr()
    argv = ["export", "--config", str(path), run_id, "--endpoint", "localhost:4318"]
    assert main(argv) == 4
    assert "--endpoint" in capsys.readouterr().err


def test_the_fixture_questions_are_valid(tmp_path, capsys):
    # The cases above differ from a valid project by their one mistake only.
    path = write_project(tmp_path, questions=["paris"], extra_questions=[_question()])
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err
    assert "remember" in QUESTIONS
