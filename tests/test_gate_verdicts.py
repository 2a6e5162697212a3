"""Gate verdicts that must never be green when the agent did not pass (issue: gate integrity).

An errored question scores 0, counts in the mean and fails the gate (seed 003: an errored test
fails every gate); a run that scored nothing never passes; every decided rubric check counts
whatever its sibling checks did."""

from __future__ import annotations

import pytest

from tracegrade import QuestionResult
from tracegrade.inputs.config import GateConfig
from tracegrade.verdicts.gate import evaluate_gate
from tracegrade.verdicts.scoring import GraderVerdict, score_question


def g(gid="g", score=5.0, lo=0.0, hi=5.0, **kw) -> GraderVerdict:
    return GraderVerdict(grader_id=gid, score=score, min_score=lo, max_score=hi, reason="r", **kw)


def q(qid="q", graders=(), error=None, **kw) -> QuestionResult:
    kw.setdefault("target", "t")
    return score_question(QuestionResult(id=qid, graders=list(graders), error=error, **kw))


def test_an_errored_question_within_the_budget_fails_the_gate_and_counts_zero_in_the_mean():
    ok = q("a", graders=[g(score=5.0)])
    crashed = q("b", error="RuntimeError: boom")
    verdict = evaluate_gate([ok, crashed], GateConfig(max_errored=1))
    assert verdict.exit_code == 2 and not verdict.passed
    assert verdict.mean_composite == 2.5  # the errored question counts as 0
    assert any("errored" in r and "b" in r for r in verdict.reasons)


def test_an_errored_question_fails_the_targets_must_pass_graders():
    ok = q("a", graders=[g("must", score=5.0, must_pass=True, threshold=5.0)])
    crashed = q("b", error="RuntimeError: boom")
    verdict = evaluate_gate([ok, crashed], GateConfig(max_errored=1), must_pass=["must"])
    assert verdict.must_pass_failures == 1
    assert "b: must" in " ".join(verdict.reasons)


def test_an_errored_question_beyond_the_budget_is_incomplete():
    verdict = evaluate_gate([q("a", graders=[g()]), q("b", error="x")], GateConfig())
    assert verdict.exit_code == 3


def test_degraded_questions_stay_out_of_the_mean():
    degraded = q("a", graders=[g(score=1.0), g("judge", score=None, error=True)])
    clean = q("b", graders=[g(score=5.0)])
    verdict = evaluate_gate([degraded, clean], GateConfig(min_mean_composite=4.5, max_errored=1))
    assert verdict.mean_composite == 5.0 and verdict.exit_code == 0


@pytest.mark.parametrize(
    "questions",
    [
        [q("a", graders=[g("judge", score=None, error=True)])],
        [
            q("a", graders=[g("judge", score=None, error=True)]),
            q("b", graders=[g("judge", score=None, error=True)]),
        ],
        [q("a", graders=[g(score=None)])],  # every grader skipped: nothing scored
    ],
)
def test_a_run_that_scored_nothing_never_passes(questions):
    verdict = evaluate_gate(questions, GateConfig(max_errored=100))
    assert verdict.exit_code == 3 and verdict.incomplete
    assert any("nothing was scored" in r for r in verdict.reasons)


def test_a_decided_critical_check_counts_when_a_sibling_check_errored():
    checks = [
        {"id": "safe", "version": "1.0.0", "status": "fail", "severity": "critical"},
        {"id": "tone", "version": "1.0.0", "status": "error", "severity": "minor"},
    ]
    rubric = g("rubric_judge", score=None, error=True, checks=checks)
    other = q("b", graders=[g(score=5.0)])
    verdict = evaluate_gate([q("a", graders=[rubric]), other], GateConfig(max_errored=1))
    assert verdict.critical_failures == 1
    assert verdict.exit_code == 2
