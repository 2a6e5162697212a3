"""The paired statistics of `compare`, against values computed independently here: McNemar
from a fixed table of exact binomial tails (worked by hand below) and from a Pascal triangle
built in the test; the bootstrap interval against the exact bootstrap distribution, enumerated
over every resample of a small sample."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracegrade.comparison.stats import mcnemar_exact, paired_bootstrap

# (b, c) -> exact two-sided p, worked by hand: p = 2 * sum_{i<=min(b,c)} C(b+c, i) / 2^(b+c).
MCNEMAR_TABLE = {
    (0, 0): Fraction(1),  # nothing changed
    (0, 4): Fraction(2 * 1, 16),  # 2 * C(4,0)/16 = 0.125
    (4, 0): Fraction(2 * 1, 16),
    (1, 5): Fraction(2 * (1 + 6), 64),  # 2 * (C(6,0)+C(6,1))/64 = 0.21875
    (2, 10): Fraction(2 * (1 + 12 + 66), 4096),  # 0.03857421875
    (0, 10): Fraction(2, 1024),  # 0.001953125
    (3, 3): Fraction(1),  # 2 * (1+6+15+20)/64 = 84/64, capped at 1
    (1, 2): Fraction(1),  # 2 * (1+3)/8 = 1
    (6, 1): Fraction(2 * (1 + 7), 128),  # 0.125
}


@pytest.mark.parametrize(("b", "c"), sorted(MCNEMAR_TABLE))
def test_mcnemar_against_the_hand_worked_table(b, c):
    result = mcnemar_exact(b, c)
    assert (result.pass_to_fail, result.fail_to_pass) == (b, c)
    assert result.p_value == pytest.approx(float(MCNEMAR_TABLE[(b, c)]), abs=1e-15)


def _pascal(n: int) -> list[int]:
    row = [1]
    for _ in range(n):
        row = [a + b for a, b in zip([0, *row], [*row, 0], strict=True)]
    return row


@given(st.integers(0, 40), st.integers(0, 40))
def test_mcnemar_against_a_pascal_triangle(b, c):
    n = b + c
    row = _pascal(n)
    tail = Fraction(sum(row[: min(b, c) + 1]), 2**n)
    expected = min(Fraction(1), 2 * tail)
    assert mcnemar_exact(b, c).p_value == pytest.approx(float(expected), rel=1e-12)
    assert mcnemar_exact(b, c).p_value == mcnemar_exact(c, b).p_value


def _exact_bootstrap_quantiles(deltas: list[float], confidence: float) -> tuple[float, float]:
    """The exact bootstrap distribution of the resample mean (all n^n resamples equally
    likely), and its alpha/2 and 1 - alpha/2 quantiles."""
    n = len(deltas)
    means = sorted(sum(s) / n for s in itertools.product(deltas, repeat=n))
    alpha = 1 - confidence
    return means[math.floor(alpha / 2 * len(means))], means[
        math.ceil((1 - alpha / 2) * len(means)) - 1
    ]


@pytest.mark.parametrize(
    "deltas",
    [
        [-2.0, -1.0, 0.0, 3.0, -0.5],
        [-5.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [1.5, -0.25, 0.75, 2.0, -1.0],
    ],
)
def test_bootstrap_interval_matches_the_exact_bootstrap_distribution(deltas):
    low, high = _exact_bootstrap_quantiles(deltas, 0.95)
    got = paired_bootstrap(deltas, resamples=20_000, seed=7)
    assert got is not None
    assert got.mean == pytest.approx(sum(deltas) / len(deltas))
    # 20 000 seeded resamples estimate each quantile to well within one step of the
    # distribution's support (steps are 1/n of a delta gap here).
    step = min(abs(a - b) for a in deltas for b in deltas if a != b) / len(deltas)
    assert got.low == pytest.approx(low, abs=step + 1e-9)
    assert got.high == pytest.approx(high, abs=step + 1e-9)


def test_bootstrap_is_seeded_and_constant_deltas_give_a_point():
    deltas = [-1.0, -0.5, 0.25, -2.0, 0.0, -1.5]
    assert paired_bootstrap(deltas, seed=3) == paired_bootstrap(deltas, seed=3)
    point = paired_bootstrap([-0.5] * 8, resamples=500)
    assert (point.low, point.high, point.mean) == (-0.5, -0.5, -0.5)
    assert point.below_zero
    assert paired_bootstrap([]) is None


def test_an_interval_straddling_zero_is_not_below_zero():
    got = paired_bootstrap([-3.0, 3.0, -2.0, 2.0, 0.0, -1.0, 1.0], seed=1)
    assert got.low < 0 < got.high
    assert not got.below_zero


@given(st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=30), st.integers(0, 99))
def test_bootstrap_interval_lies_within_the_sample_range(deltas, seed):
    got = paired_bootstrap(deltas, resamples=200, seed=seed)
    assert min(deltas) - 1e-9 <= got.low <= got.high <= max(deltas) + 1e-9
