"""Scoring rules (seed 000 scales, skips and errors; seed 003 objective, must-pass, threshold)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracegrade import GradeResult, QuestionResult
from tracegrade.inputs.config import GateConfig
from tracegrade.verdicts.gate import combine_exit_codes, evaluate_gate
from tracegrade.verdicts.scoring import (
    GraderVerdict,
    aggregate_samples,
    passes,
    score_question,
)


def g(gid="g", score=5.0, lo=0.0, hi=5.0, **kw) -> GraderVerdict:
    return GraderVerdict(grader_id=gid, score=score, min_score=lo, max_score=hi, reason="r", **kw)


def q(qid="q", graders=(), error=None, **kw) -> QuestionResult:
    kw.setdefault("target", "t")
    return score_question(QuestionResult(id=qid, graders=list(graders), error=error, **kw))


@pytest.mark.parametrize(
    ("score", "binary", "threshold", "hi", "expected"),
    [
        (1.0, True, 0.0, 1.0, True),  # binary passes only at its max
        (0.0, True, 0.0, 1.0, False),  # ... even with threshold 0
        (0.9, True, 0.5, 1.0, False),
        (0.0, False, 0.0, 5.0, True),  # scalar default threshold 0: any score passes
        (2.9, False, 3.0, 5.0, False),
        (3.0, False, 3.0, 5.0, True),
    ],
)
def test_pass_rule(score, binary, threshold, hi, expected):
    assert (
        passes(score, min_score=0.0, max_score=hi, binary=binary, threshold=threshold) is expected
    )


@pytest.mark.parametrize(
    ("graders", "composite"),
    [
        ([g(score=5.0), g(score=1.0, hi=1.0)], 5.0),  # a yes from a binary judge counts as 5
        ([g(score=4.0), g(score=0.0, hi=1.0)], 2.0),
        ([g(score=3.75), g(score=None)], 3.75),  # skip excluded silently, not counted as 0
        ([g(score=None)], None),
    ],
)
def test_composite_is_the_mean_of_mapped_non_null_scores(graders, composite):
    assert q(graders=graders).composite == composite


def test_objective_is_the_weighted_mean_of_normalised_scores():
    question = q(graders=[g(score=5.0, weight=1.0), g(score=0.0, hi=1.0, weight=3.0)])
    assert question.objective == pytest.approx(0.25)


def test_must_pass_failure_zeroes_the_objective_and_fails_the_gate():
    question = q(graders=[g(score=5.0), g("must", score=2.0, must_pass=True, threshold=3.0)])
    assert question.objective == 0.0
    assert question.composite == pytest.approx(3.5)  # composite is not gated
    verdict = evaluate_gate([question], GateConfig())
    assert not verdict.passed and verdict.exit_code == 2
    assert "must-pass" in verdict.reasons[0]


def test_agent_error_scores_zero_is_counted_and_exits_3_beyond_budget():
    ok = q("a", graders=[g(score=5.0)])
    crashed = q("b", error="RuntimeError: boom")
    assert crashed.composite == 0.0 and crashed.objective == 0.0
    verdict = evaluate_gate([ok, crashed], GateConfig(min_mean_composite=4.0))
    assert verdict.errored == 1 and verdict.degraded == 1
    assert verdict.mean_composite == 2.5  # the errored question counts as 0 in the mean
    assert verdict.exit_code == 3
    # within the budget it is still a failed gate: an errored test fails every gate
    assert (
        evaluate_gate([ok, crashed], GateConfig(min_mean_composite=2.0, max_errored=1)).exit_code
        == 2
    )


def test_grader_error_degrades_the_question_and_is_excluded_from_the_mean():
    degraded = q("a", graders=[g(score=1.0), g("judge", score=None, error=True)])
    clean = q("b", graders=[g(score=5.0), g("judge", score=5.0)])
    verdict = evaluate_gate([degraded, clean], GateConfig(min_mean_composite=4.5, max_errored=1))
    assert degraded.degraded and verdict.degraded == 1
    assert verdict.mean_composite == 5.0 and verdict.exit_code == 0


def test_min_mean_composite_gate():
    verdict = evaluate_gate([q(graders=[g(score=3.0)])], GateConfig(min_mean_composite=3.5))
    assert (
        verdict.exit_code == 2 and "mean composite 3.00 < min_mean_composite 3.5" in verdict.reasons
    )


@pytest.mark.parametrize(
    ("check", "gate", "code"),
    [
        ({"status": "fail", "required": True, "severity": "minor"}, GateConfig(), 2),
        ({"status": "fail", "required": False, "severity": "minor"}, GateConfig(), 0),
        ({"status": "fail", "required": False, "severity": "critical"}, GateConfig(), 2),
        (
            {"status": "fail", "required": False, "severity": "critical"},
            GateConfig(zero_critical_failures=False),
            0,
        ),
        ({"status": "review", "required": True, "severity": "major"}, GateConfig(), 2),
        (
            {"status": "review", "required": True, "severity": "major"},
            GateConfig(allow_review=True),
            0,
        ),
        ({"status": "pass", "required": True, "severity": "critical"}, GateConfig(), 0),
    ],
)
def test_rubric_checks_in_the_gate(check, gate, code):
    grader = g("rubric_checks", score=5.0, checks=[{"id": "c", "version": "1.0.0", **check}])
    verdict = evaluate_gate([q(graders=[grader])], gate)
    assert verdict.exit_code == code
    assert verdict.critical_failures == (
        1 if check["severity"] == "critical" and check["status"] == "fail" else 0
    )


def _result(score, error=False, **details):
    return GradeResult(
        grader_id="g", score=score, reason="r", error=error, max_score=1.0, details=details
    )


def test_samples_average_with_spread_and_an_errored_sample_errors():
    agg = aggregate_samples([_result(1.0), _result(0.5), _result(0.0)])
    assert agg.score == pytest.approx(0.5) and agg.spread == 1.0
    assert "mean of 3 samples, spread 1" in agg.reason
    errored = aggregate_samples([_result(1.0), _result(None, error=True)])
    assert errored.error and errored.score is None


def test_bool_code_grader_is_binary():
    agg = aggregate_samples([_result(0.0, binary=True)])
    assert agg.binary and agg.passed is False
    assert aggregate_samples([_result(0.0)]).passed is True  # a plain 0-1 scalar at threshold 0


@pytest.mark.parametrize(
    ("codes", "expected"),
    [([0, 2, 3], 3), ([2, 0], 2), ([0, 0], 0), ([3, 5], 5), ([5, 4, 3, 2], 4), ([], 0)],
)
def test_exit_code_precedence(codes, expected):
    assert combine_exit_codes(codes) == expected


scores = st.floats(min_value=0, max_value=5, allow_nan=False)
graders = st.lists(
    st.tuples(
        scores | st.none(), st.sampled_from([1.0, 5.0]), st.floats(min_value=0.1, max_value=10)
    ),
    min_size=1,
    max_size=6,
)


@given(graders, st.randoms())
def test_scores_stay_in_range_and_ignore_grader_order(specs, rnd):
    built = [
        g(f"g{i}", score=None if s is None else min(s, hi), hi=hi, weight=w)
        for i, (s, hi, w) in enumerate(specs)
    ]
    question = q(graders=built)
    shuffled = list(built)
    rnd.shuffle(shuffled)
    other = q(graders=shuffled)
    if question.composite is not None:
        assert 0.0 <= question.composite <= 5.0
        assert other.composite == pytest.approx(question.composite)
    if question.objective is not None:
        assert 0.0 <= question.objective <= 1.0 + 1e-9
        assert other.objective == pytest.approx(question.objective)
