"""From probabilities to statuses (seed 002): every boundary of the threshold rule, threshold
validation, and outcome probabilities from logprobs over the option letters."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from tracegrade.graders.rubrics import CheckStatus, Thresholds, decide_status
from tracegrade.graders.rubrics.probabilities import (
    letter_probabilities,
    sample_probabilities,
    token_at,
)
from tracegrade.judging.provider import TokenLogprob

DEFAULT = Thresholds()


def status(a, u, i, t=DEFAULT) -> CheckStatus:
    return decide_status(acceptable=a, unacceptable=u, insufficient=i, thresholds=t).status


def test_defaults_are_pass_075_fail_05():
    assert (DEFAULT.pass_, DEFAULT.fail) == (0.75, 0.5)


@pytest.mark.parametrize(
    ("a", "u", "i", "expected"),
    [
        (0.0, 0.5, 0.5, CheckStatus.FAIL),  # p(unacceptable) == fail: Fail (>=)
        (0.5, 0.5, 0.0, CheckStatus.FAIL),  # Fail is checked first
        (0.51, 0.49, 0.0, CheckStatus.REVIEW),  # just under fail, far under pass
        (0.75, 0.25, 0.0, CheckStatus.PASS),  # p(acceptable) == pass: Pass (>=)
        (0.74, 0.26, 0.0, CheckStatus.REVIEW),  # just under pass
        (0.75, 0.0, 0.25, CheckStatus.PASS),
        (1.0, 0.0, 0.0, CheckStatus.PASS),
        (0.0, 1.0, 0.0, CheckStatus.FAIL),
        (0.3, 0.2, 0.5, CheckStatus.REVIEW),  # insufficient leads
        (0.0, 0.0, 1.0, CheckStatus.REVIEW),
        (0.0, 0.49, 0.51, CheckStatus.REVIEW),
    ],
)
def test_threshold_rule_boundaries_with_defaults(a, u, i, expected):
    assert status(a, u, i) == expected


def test_insufficient_leading_is_review_even_over_a_low_pass_bar():
    low = Thresholds.model_validate({"pass": 0.3, "fail": 0.8})
    assert status(0.35, 0.2, 0.45, low) == CheckStatus.REVIEW
    assert status(0.4, 0.2, 0.4, low) == CheckStatus.REVIEW  # a tie for the lead is not a lead won
    assert status(0.45, 0.2, 0.35, low) == CheckStatus.PASS


def test_the_rule_applied_is_stated():
    decision = decide_status(acceptable=0.8, unacceptable=0.1, insufficient=0.1, thresholds=DEFAULT)
    assert decision.rule == "p(unacceptable)=0.100 < fail 0.5; p(acceptable)=0.800 >= pass 0.75"


@pytest.mark.parametrize(("p", "f"), [(0.5, 0.5), (0.75, 0.25), (0.0, 1.0), (0.2, 0.3)])
def test_thresholds_are_rejected_unless_pass_plus_fail_exceeds_one(p, f):
    with pytest.raises(ValidationError, match="must be greater than 1"):
        Thresholds.model_validate({"pass": p, "fail": f})


@pytest.mark.parametrize("bad", [{"pass": 1.2, "fail": 0.5}, {"pass": 0.8, "fail": -0.1}])
def test_thresholds_outside_0_1_are_rejected(bad):
    with pytest.raises(ValidationError):
        Thresholds.model_validate(bad)


probabilities = (
    st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))
    .filter(lambda t: sum(t) > 1e-6)
    .map(lambda t: tuple(x / sum(t) for x in t))
)
thresholds = (
    st.tuples(st.floats(0, 1), st.floats(0, 1))
    .filter(lambda t: t[0] + t[1] > 1)
    .map(lambda t: Thresholds.model_validate({"pass": t[0], "fail": t[1]}))
)


@given(probabilities, thresholds)
def test_status_is_exactly_the_seed_rule(p, t):
    a, u, i = p
    got = status(a, u, i, t)
    fail = u >= t.fail
    passes = a >= t.pass_
    assert not (fail and passes and a + u <= 1 + 1e-9)  # pass + fail > 1: never both
    if fail:
        assert got == CheckStatus.FAIL
    elif i >= max(a, u):
        assert got == CheckStatus.REVIEW
    elif passes:
        assert got == CheckStatus.PASS
    else:
        assert got == CheckStatus.REVIEW


@given(probabilities, thresholds)
def test_pass_never_when_unacceptable_reached_fail_and_review_when_insufficient_leads(p, t):
    a, u, i = p
    got = status(a, u, i, t)
    if got == CheckStatus.PASS:
        assert u < t.fail and a >= t.pass_ and i < max(a, u)
    if i > max(a, u):
        assert got in (CheckStatus.REVIEW, CheckStatus.FAIL)


# -- logprobs ---------------------------------------------------------------------------------
def lp(p: float) -> float:
    return math.log(p) if p > 0 else float("-inf")


def test_letter_probabilities_normalise_over_offered_letters_and_merge_spellings():
    token = TokenLogprob(
        " A",
        lp(0.5),
        top=((" A", lp(0.5)), ("A", lp(0.1)), (" B", lp(0.2)), (" X", lp(0.15)), (" C", lp(0.05))),
    )
    probs = letter_probabilities(token, ["A", "B", "C"])
    assert probs == pytest.approx({"A": 0.6 / 0.85, "B": 0.2 / 0.85, "C": 0.05 / 0.85})


def test_a_chosen_token_missing_from_top_still_counts():
    token = TokenLogprob("B", lp(0.3), top=(("A", lp(0.6)),))
    assert letter_probabilities(token, ["A", "B", "C"]) == pytest.approx(
        {"A": 2 / 3, "B": 1 / 3, "C": 0.0}
    )


def test_a_position_that_is_not_a_letter_gives_nothing():
    assert letter_probabilities(TokenLogprob(": A", 0.0), ["A", "B", "C"]) is None


def test_token_at_finds_the_token_covering_an_offset():
    tokens = (
        TokenLogprob("Q1", 0),
        TokenLogprob(":", 0),
        TokenLogprob(" B", -0.1),
        TokenLogprob("\n", 0),
    )
    assert token_at(tokens, "Q1: B\n", 4).token == " B"
    assert token_at(tokens, "something else", 4) is None


def test_sample_probabilities_are_shares():
    assert sample_probabilities(["A", "A", "C", "A"], ["A", "B", "C"]) == {
        "A": 0.75,
        "B": 0.0,
        "C": 0.25,
    }
