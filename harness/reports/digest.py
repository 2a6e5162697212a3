"""What the console report shows of a streamed run's questions, folded one score at a time.

A run graded from an archive (`grade-traces`) can hold more question runs than memory: its
verdict is folded from one pass over the store (`decide_run`'s `digest`) and this fold rides
the same pass, keeping only what the console prints: the accounting's sums, the few costliest
and worst questions, the rubric findings and labels (lines), the injected variants, the trials
per question, and for the advisories a witness question per grader. The reports' own functions
then run over those few, so a streamed report says what a held one says.
"""

from __future__ import annotations

from typing import Any

from ..usage import RunTotals, TotalsFold
from ..verdicts.result import QuestionResult
from ..verdicts.trials import TrialsFold
from .common import annotation_lines, rubric_findings, worst_questions

__all__ = ["KEPT", "ReportDigest", "digest_of"]

KEPT = 25
"""The worst and the costliest questions kept (the console shows 5 and 3, the HTML 10)."""
_INJECTED = "injection:"
_FALLBACK = "no tool-call record available"  # graders.tool_usage.FALLBACK_MARKER


def _costly_key(q: QuestionResult) -> tuple[float, int, str]:
    usage = q.usage
    assert usage is not None
    return (-(usage.cost or 0.0), -(usage.tokens or 0), q.question_id)


class ReportDigest:
    """One target's console report, folded (`add` each score, in selection order)."""

    def __init__(self) -> None:
        self.fold = TotalsFold()
        self.trials = TrialsFold()
        self.findings: list[str] = []
        self.labels: list[str] = []
        self.injected: list[QuestionResult] = []
        self.unavailable = 0
        """Question runs whose trace carried no token counts."""
        self._worst: list[QuestionResult] = []
        self._costly: list[QuestionResult] = []
        self._witnesses: dict[tuple[str, str], QuestionResult] = {}

    def add(self, q: QuestionResult) -> None:
        """Fold one score (its `over_budget` already set by the verdict's fold)."""
        self.fold.add(q.usage)
        self.trials.add(q)
        self.findings += rubric_findings([q])
        self.labels += annotation_lines([q])
        if any(t.startswith(_INJECTED) for t in q.tags or ()):
            self.injected.append(q)
        if q.usage is not None and q.usage.unavailable:
            self.unavailable += 1
        if q.usage is not None and q.usage.agent.calls:
            self._costly.append(q)
            if len(self._costly) > 2 * KEPT:
                self._costly = sorted(self._costly, key=_costly_key)[:KEPT]
        self._worst += worst_questions([q])
        if len(self._worst) > 2 * KEPT:
            self._worst = worst_questions(self._worst, KEPT)
        for g in q.graders:  # what the advisories ask of a grader, one witness each
            for kind, holds in (
                ("any", True),
                ("not skipped", g.score is not None or g.error),
                ("fallback", g.score is not None and _FALLBACK in (g.reason or "")),
            ):
                if holds:
                    self._witnesses.setdefault((g.grader_id, kind), q)

    @property
    def totals(self) -> RunTotals:
        return self.fold.totals()

    @property
    def costly(self) -> list[QuestionResult]:
        """The costliest questions, most first (what `_costliest` sorts, at most `KEPT`)."""
        return sorted(self._costly, key=_costly_key)[:KEPT]

    @property
    def worst(self) -> list[QuestionResult]:
        """The worst questions, worst first (`worst_questions`, at most `KEPT`)."""
        return worst_questions(self._worst, KEPT)

    @property
    def witnesses(self) -> list[Any]:
        """A question per grader and per thing the advisories ask (has it, scored it, read the
        response for want of a record): over these the advisories say what they say over all."""
        return list({id(q): q for q in self._witnesses.values()}.values())


def digest_of(target: Any) -> ReportDigest:
    """A target's digest: the streamed run's own, or its held questions folded now (one path
    for both, so the two say the same)."""
    if getattr(target, "digest", None) is not None:
        return target.digest  # type: ignore[no-any-return]
    digest = ReportDigest()
    for q in target.questions:
        digest.add(q)
    return digest
