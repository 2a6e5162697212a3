"""Repeated trials: a question run k times (`repeats: k`), summarised per question.

pass@k: at least one of the k trials passed; pass^k: every trial passed (what a user who runs
the agent once can count on). A trial passes by `tracegrade.verdicts.scoring.question_passed`. Each
grader's mean and spread (max minus min) over the trials that scored show how steady it is.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .result import QuestionResult
from .scoring import question_passed

__all__ = ["TrialSummary", "TrialsFold", "pass_at_k_rate", "summarise_trials"]


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


class _Trials:
    """One question's trials folded: verdict counts, composites and each grader's scores."""

    def __init__(self, q: QuestionResult) -> None:
        self.target, self.question_id = q.target, q.id
        self.trials = self.passed = self.undecided = 0
        self.failed = False
        self.composites = array("d")  # doubles: 8 bytes a trial
        self.scores: dict[str, array[float]] = {}
        self.max_scores: dict[str, float] = {}

    def add(self, q: QuestionResult) -> None:
        verdict = question_passed(q)
        self.trials += 1
        self.passed += verdict is True
        self.undecided += verdict is None
        self.failed = self.failed or verdict is False
        if q.composite is not None:
            self.composites.append(q.composite)
        for g in q.graders:
            self.max_scores.setdefault(g.grader_id, g.max_score)
            values = self.scores.setdefault(g.grader_id, array("d"))
            if g.score is not None:
                values.append(g.score)

    def summary(self) -> TrialSummary:
        if self.passed:
            at_k: bool | None = True
        else:
            at_k = None if self.undecided else False
        hat_k = False if self.failed else (None if self.undecided else True)
        return TrialSummary(
            target=self.target,
            question_id=self.question_id,
            trials=self.trials,
            passed=self.passed,
            undecided=self.undecided,
            pass_at_k=at_k,
            pass_hat_k=hat_k,
            composite_mean=_mean(self.composites),
            composite_spread=_spread(self.composites),
            graders=[
                GraderTrials(gid, _mean(vs), _spread(vs), self.max_scores[gid])
                for gid, vs in self.scores.items()
            ],
        )


class TrialsFold:
    """`summarise_trials` one question run at a time (a streamed run's trials): per question
    its counts and scores, never the runs."""

    def __init__(self) -> None:
        self.questions: dict[tuple[str, str], _Trials] = {}
        self.repeated = False
        """Some run is a trial past the first (the reports show trials only then)."""

    def add(self, q: QuestionResult) -> None:
        self.repeated = self.repeated or bool(q.trial)
        key = (q.target, q.id)
        if key not in self.questions:
            self.questions[key] = _Trials(q)
        self.questions[key].add(q)

    def summaries(self) -> list[TrialSummary]:
        return [t.summary() for t in self.questions.values()]


def summarise_trials(questions: Iterable[QuestionResult]) -> list[TrialSummary]:
    """One summary per question (in the order questions first appear), trials in order."""
    questions = list(questions)
    fold = TrialsFold()
    for q in sorted(questions, key=lambda q: (q.target, q.id, q.trial)):
        fold.add(q)
    order = list(dict.fromkeys((q.target, q.id) for q in questions))
    return [fold.questions[key].summary() for key in order]


def pass_at_k_rate(summaries: Sequence[TrialSummary]) -> float | None:
    """Share of questions with some passing trial, over questions with a pass@k verdict."""
    decided = [s.pass_at_k for s in summaries if s.pass_at_k is not None]
    return sum(decided) / len(decided) if decided else None
