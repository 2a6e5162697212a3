"""Paired statistics for comparing two runs of the same questions: the exact McNemar test on
pass/fail and a seeded paired bootstrap interval on the mean of per-question deltas.

Both are small enough to write exactly here (a binomial sum; resampling with the standard
library's seeded generator), so no statistics package is needed.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["BootstrapInterval", "McNemar", "mcnemar_exact", "paired_bootstrap"]


@dataclass(frozen=True, slots=True)
class McNemar:
    """The exact McNemar test on paired pass/fail outcomes."""

    pass_to_fail: int
    """Questions that passed in the baseline and fail in the candidate (b)."""
    fail_to_pass: int
    """Questions that failed in the baseline and pass in the candidate (c)."""
    p_value: float
    """Two-sided exact p: 2 * P(X <= min(b, c)) for X ~ Binomial(b + c, 1/2), capped at 1;
    1 when no question changed."""


def mcnemar_exact(pass_to_fail: int, fail_to_pass: int) -> McNemar:
    """Only the discordant pairs carry information: under "no change", each is as likely to
    go either way, so the smaller count is a Binomial(b + c, 1/2) tail."""
    if pass_to_fail < 0 or fail_to_pass < 0:
        raise ValueError("counts must be non-negative")
    n = pass_to_fail + fail_to_pass
    if n == 0:
        return McNemar(pass_to_fail, fail_to_pass, 1.0)
    k = min(pass_to_fail, fail_to_pass)
    tail = Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2**n)
    return McNemar(pass_to_fail, fail_to_pass, float(min(Fraction(1), 2 * tail)))


@dataclass(frozen=True, slots=True)
class BootstrapInterval:
    """A percentile bootstrap interval on the mean of paired deltas."""

    mean: float
    """The observed mean delta (candidate minus baseline)."""
    low: float
    """Lower bound of the interval."""
    high: float
    """Upper bound of the interval."""
    n: int
    """Number of paired deltas."""
    resamples: int
    """Bootstrap resamples drawn."""
    seed: int
    """Seed of the generator (the same seed and deltas give the same interval)."""
    confidence: float
    """Nominal coverage, e.g. 0.95."""

    def as_dict(self) -> dict[str, float | int]:
        """The interval as the comparison's JSON writes it."""
        return {
            "mean": self.mean,
            "low": self.low,
            "high": self.high,
            "n": self.n,
            "confidence": self.confidence,
            "resamples": self.resamples,
            "seed": self.seed,
        }

    @property
    def below_zero(self) -> bool:
        """The whole interval lies below zero: the candidate is worse beyond resampling noise."""
        return self.high < 0


def paired_bootstrap(
    deltas: Sequence[float],
    *,
    resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> BootstrapInterval | None:
    """Resample the deltas with replacement `resamples` times (a `random.Random(seed)`), take
    each resample's mean, sort them; the interval is the means at positions
    `floor(alpha/2 * resamples)` and `ceil((1 - alpha/2) * resamples) - 1`, alpha = 1 -
    confidence. None without deltas."""
    values = [float(d) for d in deltas]
    n = len(values)
    if n == 0:
        return None
    if resamples < 1 or not 0 < confidence < 1:
        raise ValueError("resamples must be >= 1 and confidence in (0, 1)")
    rng = random.Random(seed)
    means = sorted(math.fsum(rng.choices(values, k=n)) / n for _ in range(resamples))
    alpha = 1 - confidence
    low_index = math.floor(alpha / 2 * resamples)
    high_index = max(low_index, math.ceil((1 - alpha / 2) * resamples) - 1)
    return BootstrapInterval(
        mean=math.fsum(values) / n,
        low=means[low_index],
        high=means[high_index],
        n=n,
        resamples=resamples,
        seed=seed,
        confidence=confidence,
    )
