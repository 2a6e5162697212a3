"""Gates that can never fail are invalid input: `run` and `validate` exit 4 naming file, line
and key (a scalar must-pass grader without a threshold, unless it observes actions: then its
bar is its full score; a non-finite or out-of-scale gate value). Each grader's pass bar is shown
by `targets` and the reports."""

from __future__ import annotations

import json

import pytest

from tests.runs_support import write_project
from tracegrade.cli import main

MUST_PASS_NO_THRESHOLD = [{"id": "format_grader", "must_pass": True}, "contains"]


def _line_of(path, needle):
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(needle)


@pytest.mark.parametrize("command", ["run", "validate", "targets"])
def test_must_pass_on_a_scalar_grader_without_threshold_is_exit_4(tmp_path, capsys, command):
    path = write_project(tmp_path, target={"graders": MUST_PASS_NO_THRESHOLD})
    argv = ["validate", str(path)] if command == "validate" else [command, "--config", str(path)]
    assert main(argv) == 4
    err = capsys.readouterr().err
    line = _line_of(path, "- id: format_grader")
    assert f"{path}:{line}" in err
    assert "/targets/t/graders/0/must_pass" in err
    assert "threshold: 5" in err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_must_pass_on_a_grader_that_observes_actions_bars_at_its_full_score(tmp_path, capsys):
    graders = [{"id": "tool_usage_grader", "must_pass": True}]
    path = write_project(tmp_path, target={"graders": graders})
    assert main(["targets", "--config", str(path)]) == 0
    assert "[must pass, pass bar >= 5]" in capsys.readouterr().out
    assert main(["run", "--config", str(path), "--quiet"]) == 2  # rome calls no tool: 0 of 5


def test_must_pass_with_a_threshold_at_the_bottom_of_the_scale_is_exit_4(tmp_path, capsys):
    graders = [{"id": "tool_usage_grader", "must_pass": True, "threshold": 0}]
    path = write_project(tmp_path, target={"graders": graders})
    assert main(["run", "--config", str(path)]) == 4
    assert "can never fail" in capsys.readouterr().err


def test_a_threshold_above_the_scale_is_exit_4(tmp_path, capsys):
    graders = [{"id": "tool_usage_grader", "must_pass": True, "threshold": 6}]
    path = write_project(tmp_path, target={"graders": graders})
    assert main(["validate", str(path)]) == 4
    assert "/targets/t/graders/0/threshold" in capsys.readouterr().err


def test_must_pass_with_a_threshold_fails_questions_below_it(tmp_path, capsys):
    graders = [{"id": "tool_usage_grader", "must_pass": True, "threshold": 5}]
    path = write_project(tmp_path, target={"graders": graders})
    assert main(["validate", str(path)]) == 0
    assert main(["run", "--config", str(path), "--quiet"]) == 2


@pytest.mark.parametrize(
    ("gate", "key"),
    [
        ({"min_mean_composite": float("nan")}, "/targets/t/gate/min_mean_composite"),
        ({"min_mean_composite": float("inf")}, "/targets/t/gate/min_mean_composite"),
        ({"min_mean_composite": 7}, "/targets/t/gate/min_mean_composite"),
        ({"max_errored": -1}, "/targets/t/gate/max_errored"),
    ],
)
@pytest.mark.parametrize("command", ["run", "validate"])
def test_non_finite_or_out_of_scale_gate_values_are_exit_4(tmp_path, capsys, gate, key, command):
    path = write_project(tmp_path, questions=["paris"], target={"gate": gate})
    argv = ["validate", str(path)] if command == "validate" else [command, "--config", str(path)]
    assert main(argv) == 4
    err = capsys.readouterr().err
    assert f"{path}:{_line_of(path, key.rsplit('/', 1)[1])}" in err and key in err


def test_targets_and_reports_show_each_graders_pass_bar(tmp_path, capsys):
    graders = [
        {"id": "tool_usage_grader", "must_pass": True, "threshold": 5},
        {"id": "contains", "match_on": ["expected", "keyword"]},
    ]
    path = write_project(tmp_path, questions=["paris"], target={"graders": graders})
    assert main(["targets", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        "tool_usage_grader: Tool usage (0-5) (observes actions) [must pass, pass bar >= 5]" in out
    )
    assert "contains: Contains (binary, 0-1) [pass bar = 1]" in out
    report = tmp_path / "r.json"
    assert main(["run", "--config", str(path), "--quiet", "--json", str(report)]) == 0
    console = capsys.readouterr().out
    assert ">= 5" in console and "= 1" in console
    summary = json.loads(report.read_text())["summary"]["t"]
    graders_json = {g["grader_id"]: g for g in summary["graders"]}
    assert graders_json["tool_usage_grader"]["pass_bar"] == ">= 5"
    assert graders_json["contains"]["pass_bar"] == "= 1"
