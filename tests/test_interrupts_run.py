"""Agents that stop to ask, graded end to end on the refund desk (agents/refund_desk.py): the
approval interrupt asserted by `expected_interrupts` and as a trajectory step, answered from the
question's `resume` script; a refund issued without asking fails by its trajectory; a question
whose interrupt nobody answers ends `interrupted` (a named outcome, exit 2 on a must-pass
grader), never "no AI message"."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tracegrade import load_config, start_run
from tracegrade.reports.common import question_reasons
from tracegrade.rundir.store import ResultStore

AGENT = Path(__file__).resolve().parents[1] / "agents" / "refund_desk.py"

APPROVED = {
    "id": "refund_approved",
    "input": "Please refund order A-17.",
    "resume": [{"when": {"action": "issue_refund"}, "value": {"approve": True}}],
    "trajectory": {
        "match": "subsequence",
        "calls": [
            {"tool": "lookup_order", "args": {"order_id": "A-17"}},
            {"interrupt": {"question": {"contains": "Approve a refund"}}},
            {"tool": "issue_refund", "outcome": "ok"},
        ],
    },
    "expected_interrupts": {
        "count": 1,
        "includes": [
            {
                "payload": {"action": "issue_refund", "amount": {"min": 1}},
                "node": "approval",
                "before": "issue_refund",
                "after": "lookup_order",
            }
        ],
    },
    "metadata": {
        "state": {
            "assertions": [{"kind": "sql", "query": "SELECT count(*) FROM refunds", "equals": 1}]
        }
    },
}


def project(tmp_path: Path, questions: list[dict], *, factory: str = "build_graph") -> Path:
    (tmp_path / "data.yaml").write_text(yaml.safe_dump({"questions": questions}))
    config = {
        "version": 1,
        "runs_dir": "runs",
        "targets": {
            "refunds": {
                "agent": f"{AGENT}:{factory}",
                "environment": f"{AGENT}:make_environment",
                "dataset": "data.yaml",
                "graders": [
                    {"id": "trajectory_grader", "must_pass": True},
                    {"id": "interrupt_grader", "must_pass": True},
                    {"id": "state_grader", "must_pass": True},
                ],
            }
        },
    }
    path = tmp_path / "tracegrade.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def only_question(outcome):
    ((q,),) = [t.questions for t in outcome.targets]
    return q


def test_approval_asked_before_the_refund_passes(tmp_path):
    outcome = start_run(load_config(project(tmp_path, [APPROVED])))
    q = only_question(outcome)
    assert outcome.exit_code == 0, [g.reason for g in q.graders]
    assert q.outcome is None and [g.score for g in q.graders] == [1.0, 1.0, 5.0]
    with ResultStore.in_run_dir(outcome.run_dir) as store:
        (run,) = store.load_runs()
    assert run.answer.response == "Done: $40.00 is refunded to order A-17."


def test_a_refund_issued_without_asking_fails_by_its_trajectory(tmp_path):
    outcome = start_run(load_config(project(tmp_path, [APPROVED], factory="build_regressed_graph")))
    q = only_question(outcome)
    assert outcome.exit_code == 2
    trajectory, interrupts, state = q.graders
    assert trajectory.score < 1.0
    assert "calls[1] interrupt: expected the run to stop and ask, it never did" in trajectory.reason
    assert "never stopped to ask" in interrupts.reason and "count 1" in json.dumps(
        interrupts.details
    )
    assert state.score == 5.0  # the refund did happen: only the record shows nobody was asked
    assert q.must_pass_failures == ["trajectory_grader", "interrupt_grader"]


def test_an_unanswered_interrupt_ends_interrupted_and_fails_the_gate(tmp_path):
    unanswered = {"id": "no_answer", "input": "Please refund order A-17."}
    outcome = start_run(load_config(project(tmp_path, [unanswered])))
    q = only_question(outcome)
    assert outcome.exit_code == 2  # a failed gate, not an agent error (3)
    assert not q.errored and q.error is None
    assert q.outcome == "interrupted" and q.ended_early
    assert "Approve a refund of $40.00 for order A-17?" in q.outcome_reason
    assert question_reasons(q)[0].startswith("interrupted: waiting on interrupt")
    assert all(g.grader_id in q.must_pass_failures for g in q.graders)
    verdict = outcome.targets[0].verdict
    assert any("ended before an answer (no_answer (interrupted))" in r for r in verdict.reasons)
    assert verdict.errored == 0
    with ResultStore.in_run_dir(outcome.run_dir) as store:
        (run,) = store.load_runs()
        (score,) = store.load_scores()
    assert (run.outcome, score.outcome, score.ended_early) == ("interrupted", "interrupted", True)


def test_an_interruption_the_question_expects_is_no_failure(tmp_path):
    expected = {
        "id": "waits",
        "input": "Please refund order A-17.",
        "expected_interrupts": {"count": 1, "ends_interrupted": True},
        "metadata": {
            "state": {
                "assertions": [
                    {"kind": "sql", "query": "SELECT count(*) FROM refunds", "equals": 0}
                ]
            }
        },
    }
    outcome = start_run(load_config(project(tmp_path, [expected])))
    q = only_question(outcome)
    assert (q.outcome, q.outcome_expected, q.ended_early) == ("interrupted", True, False)
    assert outcome.exit_code == 0, [g.reason for g in q.graders]


def test_a_declined_refund_is_not_issued(tmp_path):
    declined = {
        **APPROVED,
        "id": "declined",
        "resume": [{"approve": False}],
        "expected_interrupts": {"count": 1},
        "trajectory": {"forbid": ["issue_refund"]},
        "metadata": {
            "state": {
                "assertions": [
                    {"kind": "sql", "query": "SELECT count(*) FROM refunds", "equals": 0}
                ]
            }
        },
    }
    outcome = start_run(load_config(project(tmp_path, [declined])))
    q = only_question(outcome)
    assert outcome.exit_code == 0, [g.reason for g in q.graders]
    with ResultStore.in_run_dir(outcome.run_dir) as store:
        (run,) = store.load_runs()
    assert run.answer.response == "The refund was not approved, so I did not issue it."


def test_a_store_from_before_outcomes_migrates_keeping_its_rows(tmp_path):
    import sqlite3

    from tracegrade.rundir.store import SCHEMA_VERSION

    outcome = start_run(load_config(project(tmp_path, [APPROVED])))
    path = outcome.run_dir / "results.sqlite"
    with sqlite3.connect(path) as db:  # as a release before outcomes (schema 2) wrote it
        for column in ("outcome", "outcome_reason", "outcome_expected"):
            db.execute(f"ALTER TABLE questions DROP COLUMN {column}")
        db.execute("PRAGMA user_version = 2")
    with ResultStore.open_readonly(outcome.run_dir) as store:  # reading changes nothing
        (score,) = store.load_scores()
        assert score.outcome is None and not score.ended_early
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 2
    with ResultStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION == 4
        (run,) = store.load_runs()
        assert (
            run.answer.response == "Done: $40.00 is refunded to order A-17." and run.outcome is None
        )
