"""From judge answers to outcome probabilities, and from probabilities to statuses (seed 002).

Three sources, best first: the provider's logprobs over the option letters (normalised over the
options offered), the answers of `samples` independent requests, and a single answer counted as
probability 1. The source is always disclosed with the probabilities.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from ...judging.provider import TokenLogprob
from .model import Thresholds

__all__ = [
    "CheckStatus",
    "Decision",
    "decide_status",
    "letter_probabilities",
    "sample_probabilities",
    "token_at",
]


class CheckStatus(StrEnum):
    """The five statuses of a check (seed 002 "Statuses")."""

    PASS = "pass"
    FAIL = "fail"
    REVIEW = "review"
    """Undecided: needs a person (includes missing evidence)."""
    SKIPPED = "skipped"
    """Explicitly inapplicable, with a reason."""
    ERROR = "error"
    """The judge request failed or its answer was malformed; never an evaluated failure."""


@dataclass(frozen=True, slots=True)
class Decision:
    status: CheckStatus
    rule: str
    """The threshold rule that decided it, in words (shown in results)."""


def decide_status(
    *, acceptable: float, unacceptable: float, insufficient: float, thresholds: Thresholds
) -> Decision:
    """The seed's rule: Fail when p(unacceptable) >= fail; otherwise Pass when p(acceptable)
    >= pass; otherwise Review — including whenever the insufficient outcome leads (or ties
    for the lead), even if p(acceptable) reached a low pass bar."""
    t_pass, t_fail = thresholds.pass_, thresholds.fail
    if unacceptable >= t_fail:
        return Decision(CheckStatus.FAIL, f"p(unacceptable)={unacceptable:.3f} >= fail {t_fail}")
    if insufficient >= max(acceptable, unacceptable) and insufficient > 0:
        return Decision(
            CheckStatus.REVIEW,
            f"insufficient context leads (p={insufficient:.3f}); p(unacceptable)="
            f"{unacceptable:.3f} < fail {t_fail}",
        )
    if acceptable >= t_pass:
        return Decision(
            CheckStatus.PASS,
            f"p(unacceptable)={unacceptable:.3f} < fail {t_fail}; "
            f"p(acceptable)={acceptable:.3f} >= pass {t_pass}",
        )
    return Decision(
        CheckStatus.REVIEW,
        f"p(unacceptable)={unacceptable:.3f} < fail {t_fail}; "
        f"p(acceptable)={acceptable:.3f} < pass {t_pass}",
    )


def token_at(logprobs: Sequence[TokenLogprob], text: str, offset: int) -> TokenLogprob | None:
    """The token covering character `offset` of `text`, when the tokens spell out `text`.

    Returns None when the tokens do not reproduce the text (then positions mean nothing)."""
    joined = "".join(t.token for t in logprobs)
    if not text.startswith(joined) and not joined.startswith(text):
        return None
    position = 0
    for token in logprobs:
        end = position + len(token.token)
        if position <= offset < end:
            return token
        position = end
    return None


def letter_probabilities(token: TokenLogprob, letters: Sequence[str]) -> dict[str, float] | None:
    """Probabilities of the offered `letters` at one token position, normalised over them.

    Alternatives spelling the same letter (" A", "A") are summed. None when the chosen token
    is not itself an offered letter (the position is not an answer letter)."""
    chosen = token.token.strip().upper()  # "a" and "A" name the same option
    if chosen not in letters:
        return None
    mass: dict[str, float] = dict.fromkeys(letters, 0.0)
    seen: set[str] = set()
    candidates = [*token.top]
    if all(t != token.token for t, _ in token.top):
        candidates.append((token.token, token.logprob))
    for text, logprob in candidates:
        if text in seen:
            continue
        seen.add(text)
        letter = text.strip().upper()
        if letter in mass and math.isfinite(logprob):
            mass[letter] += math.exp(logprob)
    total = sum(mass.values())
    if total <= 0.0:
        return None
    return {letter: value / total for letter, value in mass.items()}


def sample_probabilities(answers: Sequence[str], letters: Sequence[str]) -> dict[str, float]:
    """Share of independent answers choosing each offered letter."""
    counts = Counter(answers)
    n = len(answers)
    return {letter: counts.get(letter, 0) / n for letter in letters}


def leading(probabilities: Mapping[str, float]) -> str:
    """The most probable key (the first listed on a tie)."""
    return max(probabilities, key=lambda k: probabilities[k])
