"""A trace policy grades the traces that match no dataset question (production traffic nobody
wrote a question for) with the graders that need no expectation: forbidden tools, a cap on
calls, from the command line, a policy file or a target's `trace_policy:`, in grade-traces
and in receive alike."""

from __future__ import annotations

import json

import httpx
import yaml

from tests.loopback_timeout import LOOPBACK_TIMEOUT_S
from tests.test_grade_traces import _genai_request, _genai_trace, _project
from tests.test_receive import _graded, receiving
from tracegrade import load_config
from tracegrade.cli import main
from tracegrade.rundir.store import ResultStore
from tracegrade.traces.policy import trace_policy


def _stranger(trace_id: str, tools: list[str], text: str = "delete my account") -> dict:
    """A trace whose input is no dataset question's (it pairs with none)."""
    calls = [(tool, f"c{n}", {}) for n, tool in enumerate(tools)]
    request = _genai_request(
        _genai_trace(trace_id, "prod-session", calls=calls, ran=[(t, c, 0) for t, c, _ in calls])
    )
    spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    for attribute in spans[0]["attributes"]:
        if attribute["key"] == "gen_ai.input.messages":
            attribute["value"] = {
                "stringValue": json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": text}]}]
                )
            }
    return request


def _archive(tmp_path, *requests):
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in requests))
    return path


def _policy_verdicts(report: dict) -> dict[str, tuple]:
    return {
        q["id"]: tuple(
            (g["id"], g["passed"], g["reason"])
            for g in q["graders"]
            if g["id"] == "trajectory_grader"
        )
        for q in report["questions"]
        if q["id"].startswith("trace-")
    }


def test_traces_matching_no_question_are_graded_by_the_command_line_policy(tmp_path):
    config = _project(tmp_path / "proj")
    archive = _archive(
        tmp_path, _stranger("1" * 32, ["lookup"]), _stranger("2" * 32, ["lookup", "cancel"])
    )
    report = tmp_path / "r.json"
    argv = ["grade-traces", str(archive), "--config", str(config), "--target", "t", "--quiet"]
    # without a policy they match nothing: nothing to grade
    assert main(argv) == 5
    code = main([*argv, "--forbid", "cancel", "--max-calls", "3", "--json", str(report)])
    data = json.loads(report.read_text())
    verdicts = _policy_verdicts(data)
    assert code == 2  # the trace that called the forbidden tool fails the gate
    assert verdicts["trace-" + "1" * 32][0][1] is True
    failed = verdicts["trace-" + "2" * 32][0]
    assert failed[1] is False and "cancel" in failed[2] and "forbidden" in failed[2]
    notes = " ".join(data["notes"])
    assert "paired 0 trace(s) with 0 of 3 question(s)" in notes
    assert "2 trace(s) graded by the trace policy" in notes and "forbid ['cancel']" in notes
    # the run is a run like any other: its rows say what the trace was asked, show gives the
    # same verdict
    run_dir = tmp_path / "proj" / "runs" / data["run_id"]
    with ResultStore.open_readonly(run_dir) as store:
        inputs = {r.id: r.answer.input for r in store.load_runs("t")}
    assert inputs["trace-" + "2" * 32] == "delete my account"
    assert main(["show", str(run_dir), "--quiet"]) == 2


def test_a_targets_trace_policy_with_a_policy_file_and_its_errors(tmp_path, capsys):
    config = _project(tmp_path / "proj")
    (tmp_path / "proj" / "policy.yaml").write_text(yaml.safe_dump({"forbid": ["cancel"]}))
    raw = yaml.safe_load(config.read_text())
    raw["targets"]["t"]["trace_policy"] = {"file": "policy.yaml", "max_calls": 1}
    config.write_text(yaml.safe_dump(raw))
    policy = trace_policy(load_config(config), "t")
    assert dict(policy.trajectory) == {"forbid": ["cancel"], "max_calls": 1}
    both = trace_policy(load_config(config), "t", forbid=["refund"], max_calls=4)
    assert dict(both.trajectory) == {"forbid": ["cancel", "refund"], "max_calls": 4}
    archive = _archive(tmp_path, _stranger("3" * 32, ["lookup", "lookup"]))
    argv = ["grade-traces", str(archive), "--config", str(config), "--target", "t", "--quiet"]
    assert main(argv) == 2  # two calls against max_calls 1
    # a policy file with a key the policy does not have is invalid input naming file and key
    (tmp_path / "proj" / "policy.yaml").write_text(yaml.safe_dump({"forbidden": ["cancel"]}))
    assert main(argv) == 4
    err = capsys.readouterr().err
    assert "policy.yaml" in err and "unknown trace policy key 'forbidden'" in err
    # the schema refuses an unknown key in the config itself
    raw["targets"]["t"]["trace_policy"] = {"forbidd": ["x"]}
    config.write_text(yaml.safe_dump(raw))
    assert main(["validate", str(config), "--no-build"]) == 4
    assert "forbidd" in capsys.readouterr().err


def test_receive_grades_an_unmatched_trace_by_the_policy(tmp_path):
    config = _project(tmp_path / "proj")
    policy = trace_policy(load_config(config), "t", forbid=["cancel"])
    with receiving(config, policy=policy) as (receiver, url):
        assert (
            httpx.post(
                url, json=_stranger("4" * 32, ["cancel"]), timeout=LOOPBACK_TIMEOUT_S
            ).status_code
            == 200
        )
        _wait = __import__("tests.test_receive", fromlist=["_wait_for"])._wait_for
        _wait(lambda: _graded(receiver) == 1)
    assert receiver.outcome.exit_code == 2
    (question,) = receiver.outcome.targets[0].questions
    assert question.id == "trace-" + "4" * 32
    hour = next(iter(receiver.monitor.rollups.values()))
    assert hour["policy"] == 1 and hour["failed"] == 1
