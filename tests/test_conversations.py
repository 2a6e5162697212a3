"""Conversations over several turns, on the refund desk (agents/refund_desk.py): each user turn
sent after the agent's previous answer on the same thread, each graded on its own calls; the
whole conversation in the record, the store and the graders' input; a conversation killed
midway re-runs from its start on resume with nothing duplicated."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from tracegrade import load_config, read_records, regrade_run, start_run
from tracegrade.rundir.directory import RunDirectory
from tracegrade.rundir.store import ResultStore

ROOT = Path(__file__).resolve().parents[1]
AGENT = ROOT / "agents" / "refund_desk.py"

THREE_TURNS = {
    "id": "three_turns",
    "turns": [
        {
            "content": "I'd like a refund for my order.",
            "expected_tools": [{"tool": "issue_refund", "should_run": False}],
        },
        {
            "content": "Order A-17.",
            "resume": [{"approve": True}],
            "expected_tools": [
                {"tool": "lookup_order", "should_run": True, "args": {"order_id": "A-17"}},
                {"tool": "issue_refund", "should_run": True, "after": "lookup_order"},
            ],
            "trajectory": {
                "match": "strict",
                "calls": [
                    {"tool": "lookup_order"},
                    {"interrupt": {"action": "issue_refund"}},
                    {"tool": "issue_refund"},
                ],
            },
        },
        {
            "content": "Thanks!",
            # this turn's calls only: the lookup of turn 2 is not one of them
            "expected_tools": [{"tool": "lookup_order", "should_run": False}],
        },
    ],
    "expected_interrupts": {"count": 1},
}


def project(tmp_path: Path, questions: list[dict], *, factory: str = "build_graph") -> Path:
    (tmp_path / "data.yaml").write_text(yaml.safe_dump({"questions": questions}))
    config = {
        "version": 1,
        "runs_dir": "runs",
        "telemetry": {"trace_file": True},
        "targets": {
            "refunds": {
                "agent": f"{AGENT}:{factory}",
                "environment": f"{AGENT}:make_environment",
                "dataset": "data.yaml",
                "timeout_s": 60,
                "graders": [
                    {"id": "tool_usage_grader", "must_pass": True, "threshold": 5},
                    {"id": "trajectory_grader", "must_pass": True},
                    {"id": "interrupt_grader", "must_pass": True},
                ],
            }
        },
    }
    path = tmp_path / "tracegrade.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def test_a_three_turn_conversation_is_graded_turn_by_turn(tmp_path):
    outcome = start_run(load_config(project(tmp_path, [THREE_TURNS])))
    ((q,),) = [t.questions for t in outcome.targets]
    assert outcome.exit_code == 0, [g.reason for g in q.graders]
    tool_usage, trajectory, interrupts = q.graders
    assert set(tool_usage.details["turns"]) == {"turn 1", "turn 2", "turn 3"}
    assert set(trajectory.details["turns"]) == {"turn 2"}  # the only turn with a trajectory
    assert interrupts.reason.startswith("all 1 interrupt constraint(s) met")  # whole conversation
    with ResultStore.in_run_dir(outcome.run_dir) as store:
        (run,) = store.load_runs()
    # the graders saw (and the store keeps) the whole conversation, in order
    assert [(m["role"], m["content"]) for m in run.answer.messages] == [
        ("user", "I'd like a refund for my order."),
        ("assistant", "Sure. Which order is it?"),
        ("user", "Order A-17."),
        ("assistant", "Done: $40.00 is refunded to order A-17."),
        ("user", "Thanks!"),
    ]
    assert run.answer.response == "You're welcome. Goodbye!"
    record = read_records(RunDirectory(outcome.run_dir).trace_file("refunds"))["three_turns"]
    assert len(record.turn_starts) == 3
    assert [c.name for c in record.turn(1)] == ["lookup_order", "issue_refund"]
    assert list(record.turn(0)) == [] and list(record.turn(2)) == []


def test_a_turn_that_breaks_its_own_checks_fails_naming_the_turn(tmp_path):
    wrong = yaml.safe_load(yaml.safe_dump(THREE_TURNS))
    wrong["turns"][2]["expected_tools"] = [{"tool": "lookup_order", "should_run": True}]
    outcome = start_run(load_config(project(tmp_path, [wrong])))
    ((q,),) = [t.questions for t in outcome.targets]
    assert outcome.exit_code == 2
    tool_usage = q.graders[0]
    assert tool_usage.passed is False and tool_usage.must_pass
    assert "turn 3: " in tool_usage.reason and "lookup_order" in tool_usage.reason
    assert tool_usage.details["turns"]["turn 2"]["score"] == 5.0
    # a re-grade from the stored run and its trace file reaches the same verdict, turn by turn
    config = load_config(tmp_path / "tracegrade.yaml")
    ((again,),) = [t.questions for t in regrade_run(config, outcome.run_dir).targets]
    assert [(g.grader_id, g.score, g.reason) for g in again.graders] == [
        (g.grader_id, g.score, g.reason) for g in q.graders
    ]


def test_a_turn_left_waiting_ends_the_conversation_interrupted(tmp_path):
    unanswered = yaml.safe_load(yaml.safe_dump(THREE_TURNS))
    del unanswered["turns"][1]["resume"]
    outcome = start_run(load_config(project(tmp_path, [unanswered])))
    ((q,),) = [t.questions for t in outcome.targets]
    assert (q.outcome, outcome.exit_code) == ("interrupted", 2)
    with ResultStore.in_run_dir(outcome.run_dir) as store:
        (run,) = store.load_runs()
    assert [m["content"] for m in run.answer.messages if m["role"] == "user"] == [
        "I'd like a refund for my order.",
        "Order A-17.",
    ]  # the third turn was never sent


def _rows(run_dir: Path) -> int:
    import sqlite3

    db = run_dir / "results.sqlite"
    if not db.is_file():
        return 0
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT count(*) FROM questions").fetchone()[0]


def test_kill_9_mid_conversation_then_resume_reruns_it_from_the_start(tmp_path):
    config = project(tmp_path, [THREE_TURNS])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRACEGRADE_DEMO_LATENCY": "1.5"}
    cli = [sys.executable, "-m", "tracegrade"]
    proc = subprocess.Popen(
        [*cli, "run", "--config", str(config), "--quiet"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    runs = tmp_path / "runs"
    deadline = time.monotonic() + 120  # generous: the machine may be loaded
    run_dir = None
    while time.monotonic() < deadline:
        found = list(runs.iterdir()) if runs.is_dir() else []
        trace = RunDirectory(found[0]).trace_file("refunds") if found else None
        if (
            trace is not None
            and trace.is_file()
            and "execute_tool lookup_order" in trace.read_text()
        ):
            run_dir = found[0]
            break  # turn 2 is under way: the lookup ran, the conversation is not over
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    assert run_dir is not None, "the conversation never reached its second turn"
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert _rows(run_dir) == 0  # killed mid-conversation: nothing committed
    env["TRACEGRADE_DEMO_LATENCY"] = "0"
    resume = subprocess.run(
        [*cli, "run", "--config", str(config), "--resume", run_dir.name, "--quiet"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resume.returncode == 0, resume.stdout + resume.stderr
    assert _rows(run_dir) == 1
    record = read_records(RunDirectory(run_dir).trace_file("refunds"))["three_turns"]
    assert [c.name for c in record] == ["lookup_order", "issue_refund"]  # nothing duplicated
    assert len(record.interruptions) == 1 and len(record.turn_starts) == 3
    with ResultStore.in_run_dir(run_dir) as store:
        (run,) = store.load_runs()
    assert [m["content"] for m in run.answer.messages if m["role"] == "user"] == [
        t["content"] for t in THREE_TURNS["turns"]
    ]
