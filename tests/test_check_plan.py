"""One check plan: every expectation a dataset writes is checked by a grader, or named unchecked.

A new user's IT helpdesk (`tests/helpdesk_agent.py`, five tools) under the README's minimal
config, which attaches tool_usage_grader, state_grader and format_grader: its dataset forbids
`grant_access` through `trajectory:` and expects the agent to ask first through
`expected_interrupts:`. Neither key's grader is attached; the plan attaches them with the safe
defaults (must pass, full score) and says so, so the agent that grants admin access, or grants
without asking, fails (exit 2) with the attached grader named.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.helpdesk_agent import DATASET
from tests.test_safe_defaults import project, readme_config
from tracegrade.cli import main

BROKEN = "from tests.helpdesk_agent import build_broken_graph as build_graph, make_environment\n"
GOOD = "from tests.helpdesk_agent import build_graph, make_environment\n"


def _run(path: Path, report: Path, capsys, *extra: str) -> tuple[int, str, dict]:
    code = main(["run", "--config", str(path), "--json", str(report), *extra])
    captured = capsys.readouterr()
    return code, captured.out + captured.err, json.loads(report.read_text())


def _config(**target_keys) -> str:
    config = yaml.safe_load(readme_config())
    config["targets"]["support_desk"].update(target_keys)
    return yaml.safe_dump(config, sort_keys=False)


def test_a_forbidden_action_and_an_unasked_grant_fail_under_the_readme_config(tmp_path, capsys):
    path = project(tmp_path, BROKEN, DATASET)
    code, out, report = _run(path, tmp_path / "r.json", capsys)
    assert code == 2, out
    failed = {q["id"]: q for q in report["questions"] if q["passed"] is False}
    assert set(failed) == {"admin_request", "wiki_access"}
    graders = {
        qid: {g["id"] for g in q["graders"] if g["must_pass"] and g["passed"] is False}
        for qid, q in failed.items()
    }
    assert graders == {"admin_request": {"trajectory_grader"}, "wiki_access": {"interrupt_grader"}}
    # the attachment is announced in one line, naming the key and the grader
    announced = [line for line in out.splitlines() if "attached" in line and "trajectory" in line]
    assert len(announced) == 1, out
    assert "trajectory_grader" in announced[0] and "interrupt_grader" in out


def test_the_agent_that_does_what_it_is_asked_passes(tmp_path, capsys):
    path = project(tmp_path, GOOD, DATASET)
    code, out, report = _run(path, tmp_path / "r.json", capsys)
    assert code == 0, out
    assert all(q["passed"] for q in report["questions"])


def test_a_key_named_unchecked_is_left_unchecked_and_every_report_says_so(tmp_path, capsys):
    path = project(tmp_path, BROKEN, DATASET, _config(unchecked=["trajectory"]))
    md = tmp_path / "s.md"
    code, out, report = _run(path, tmp_path / "r.json", capsys, "--markdown", str(md))
    assert code == 2, out  # the unasked grant still fails
    failed = {q["id"] for q in report["questions"] if q["passed"] is False}
    assert failed == {"wiki_access"}
    assert "unchecked: trajectory" in out
    assert report["plan"]["support_desk"]["unchecked"] == ["trajectory"]
    assert "unchecked: trajectory" in md.read_text()


def test_targets_plan_prints_which_key_each_grader_checks(tmp_path, capsys):
    path = project(tmp_path, GOOD, DATASET, _config(unchecked=["expected_interrupts"]))
    assert main(["targets", "--config", str(path), "--plan"]) == 0
    out = capsys.readouterr().out
    assert "support_desk (from run: " in out
    assert "  expected_tools (1 question) -> tool_usage_grader\n" in out
    assert (
        "  trajectory (1 question) -> trajectory_grader "
        "[attached by the plan: must pass, full score]" in out
    )
    assert "  expected_interrupts (1 question) -> unchecked: the target's unchecked:" in out
    assert "  every question -> state_grader, format_grader" in out
    assert main(["targets", "--config", str(path), "--plan", "--source", "traces"]) == 0
    out = capsys.readouterr().out
    assert "state_grader: not applicable here: a trace carries no live environment" in out


def test_unchecked_never_hides_a_grader_the_target_attaches(tmp_path, capsys):
    path = project(tmp_path, GOOD, DATASET, _config(unchecked=["expected_tools"]))
    assert main(["targets", "--config", str(path), "--plan"]) == 0
    assert "  expected_tools (1 question) -> tool_usage_grader\n" in capsys.readouterr().out


def test_an_unknown_key_in_unchecked_is_invalid_input_at_its_line(tmp_path, capsys):
    path = project(tmp_path, GOOD, DATASET, _config(unchecked=["trajectroy"]))
    code = main(["run", "--config", str(path)])
    err = capsys.readouterr().err
    assert code == 4, err
    assert "unchecked names 'trajectroy', which no grader checks" in err
    assert "did you mean 'trajectory'?" in err and "tracegrade.yaml" in err


def test_validate_prints_the_plan_run_would_follow(tmp_path, capsys):
    path = project(tmp_path, GOOD, DATASET)
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "  check plan:" in out
    assert "    trajectory (1 question) -> trajectory_grader [attached by the plan" in out
