"""The record checks and the claims table on traces nobody wrote a question for: from the
command line of grade-traces (`--check`, `--claim`) and from a target's `trace_policy:`, with
the reason of each finding; a malformed one is invalid input naming its key."""

from __future__ import annotations

import json

import yaml

from tests.test_grade_traces import _project
from tests.test_trace_policy import _archive, _stranger
from tracegrade.cli import main


def _verdicts(report: dict, grader: str) -> dict[str, tuple]:
    return {
        q["id"]: (g["passed"], g["reason"])
        for q in report["questions"]
        for g in q["graders"]
        if g["id"] == grader and q["id"].startswith("trace-")
    }


def test_repeated_calls_and_a_step_budget_from_the_command_line(tmp_path):
    config = _project(tmp_path / "proj")
    archive = _archive(
        tmp_path, _stranger("1" * 32, ["lookup"]), _stranger("2" * 32, ["lookup", "lookup"])
    )
    report = tmp_path / "r.json"
    argv = ["grade-traces", str(archive), "--config", str(config), "--target", "t", "--quiet"]
    code = main([*argv, "--check", "max_steps=5", "--json", str(report)])
    verdicts = _verdicts(json.loads(report.read_text()), "record_checks")
    assert code == 2
    assert verdicts["trace-" + "1" * 32][0] is True
    passed, reason = verdicts["trace-" + "2" * 32]
    assert passed is False
    assert "repeats: #1 `lookup` repeats #0 `lookup` with the same arguments {}" in reason


def test_a_claim_with_no_call_from_a_targets_trace_policy(tmp_path):
    config = _project(tmp_path / "proj")
    raw = yaml.safe_load(config.read_text())
    raw["targets"]["t"]["trace_policy"] = {
        "checks": True,
        "claims": {"opened (a )?ticket": "create_ticket"},
    }
    config.write_text(yaml.safe_dump(raw))
    archive = _archive(tmp_path, _stranger("3" * 32, ["lookup"]))
    # the genai trace's answer: the agent's output messages
    request = json.loads(archive.read_text())
    spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": "I opened a ticket."}]}]
    for attribute in spans[0]["attributes"]:
        if attribute["key"] == "gen_ai.output.messages":
            attribute["value"] = {"stringValue": json.dumps(answer)}
    if not any(a["key"] == "gen_ai.output.messages" for a in spans[0]["attributes"]):
        spans[0]["attributes"].append(
            {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(answer)}}
        )
    archive.write_text(json.dumps(request) + "\n")
    report = tmp_path / "r.json"
    argv = ["grade-traces", str(archive), "--config", str(config), "--target", "t", "--quiet"]
    assert main([*argv, "--json", str(report)]) == 2
    passed, reason = _verdicts(json.loads(report.read_text()), "claims_grader")["trace-" + "3" * 32]
    assert (
        passed is False and "'opened a ticket': the record has no call of create_ticket" in reason
    )


def test_a_bad_check_is_invalid_input_naming_the_key(tmp_path, capsys):
    config = _project(tmp_path / "proj")
    archive = _archive(tmp_path, _stranger("4" * 32, ["lookup"]))
    argv = ["grade-traces", str(archive), "--config", str(config), "--target", "t", "--quiet"]
    assert main([*argv, "--check", "max_steps=0"]) == 4
    err = capsys.readouterr().err
    assert "trace_policy/checks/max_steps" in err and "max_steps must be a positive integer" in err
    assert main([*argv, "--claim", "(?<=x)y=create_ticket"]) == 4
    assert "not a valid RE2 pattern" in capsys.readouterr().err
