"""Repeated trials: a question run k times (`repeats: k`), summarised per question.

pass@k: at least one of the k trials passed; pass^k: every trial passed (what a user who runs
the agent once can count on). A trial passes by `tracegrade.verdicts.scoring.question_passed`. Each
grader's mean and spread (max minus min) over the trials that scored show how steady it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .scoring import QuestionScore, all_passed, question_passed

__all__ = ["TrialSummary", "pass_at_k_rate", "summarise_trials"]


@dataclass(frozen=True, slots=True)
class GraderTrials:
    """One grader over a question's trials."""

    grader_id: str
    """The grader's id."""
    mean: float | None
    """Mean score over the trials it scored, on its own scale."""
    spread: float | None
    """Max minus min over those trials; None with fewer than two."""
    max_score: float
    """Top of its scale."""


@dataclass(frozen=True, slots=True)
class TrialSummary:
    """One question's k trials."""

    target: str
    """The target."""
    question_id: str
    """The question."""
    trials: int
    """How many trials are stored."""
    passed: int
    """Trials that passed."""
    undecided: int
    """Trials whose evaluation failed (a grader error)."""
    pass_at_k: bool | None
    """Some trial passed; None when none passed and some were undecided."""
    pass_hat_k: bool | None
    """Every trial passed; None when none failed and some were undecided."""
    composite_mean: float | None
    """Mean composite over the trials that have one."""
    composite_spread: float | None
    """Max minus min composite; None with fewer than two."""
    graders: list[GraderTrials] = field(default_factory=list)
    """Each grader's mean and spread."""


def _spread(values: Sequence[float]) -> float | None:
    return max(values) - min(values) if len(values) > 1 else None


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _summary(trials: Sequence[QuestionScore]) -> TrialSummary:
    verdicts = [question_passed(t) for t in trials]
    if any(v is True for v in verdicts):
        at_k: bool | None = True
    else:
        at_k = None if any(v is None for v in verdicts) else False
    composites = [t.composite for t in trials if t.composite is not None]
    ids = list(dict.fromkeys(g.grader_id for t in trials for g in t.graders))
    graders = []
    for gid in ids:
        scored = [g for t in trials for g in t.graders if g.grader_id == gid]
        values = [g.score for g in scored if g.score is not None]
        graders.append(GraderTrials(gid, _mean(values), _spread(values), scored[0].max_score))
    return TrialSummary(
        target=trials[0].target,
        question_id=trials[0].question_id,
        trials=len(trials),
        passed=sum(v is True for v in verdicts),
        undecided=sum(v is None for v in verdicts),
        pass_at_k=at_k,
        pass_hat_k=all_passed(verdicts),
        composite_mean=_mean(composites),
        composite_spread=_spread(composites),
        graders=graders,
    )


def summarise_trials(questions: Sequence[QuestionScore]) -> list[TrialSummary]:
    """One summary per question (in the order questions first appear), trials in order."""
    grouped: dict[tuple[str, str], list[QuestionScore]] = {}
    for q in questions:
        grouped.setdefault((q.target, q.question_id), []).append(q)
    return [_summary(sorted(t, key=lambda q: q.trial)) for t in grouped.values()]


def pass_at_k_rate(summaries: Sequence[TrialSummary]) -> float | None:
    """Share of questions with some passing trial, over questions with a pass@k verdict."""
    decided = [s.pass_at_k for s in summaries if s.pass_at_k is not None]
    return sum(decided) / len(decided) if decided else None
