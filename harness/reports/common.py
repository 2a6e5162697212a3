"""Helpers the report renderers share: number formatting and the worst questions."""

from __future__ import annotations

from collections.abc import Sequence

from harness.runs.scoring import GraderScore, QuestionScore

__all__ = ["fmt", "fmt_score", "question_reasons", "worst_questions"]


def fmt(value: float | None, digits: int = 2) -> str:
    """A number without noise: 5 -> "5", 3.75 -> "3.75", 0.666 -> "0.67", None -> "-"."""
    if value is None:
        return "-"
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.{digits}f}".rstrip("0").rstrip(".")


def fmt_score(score: float | None, max_score: float) -> str:
    """The grader's own answer against its own denominator: "1 / 1", "3.75 / 5"."""
    return "-" if score is None else f"{fmt(score)} / {fmt(max_score)}"


def _grader_reason(g: GraderScore) -> str:
    if g.error:
        return f"{g.grader_id} errored: {g.reason}"
    verdict = "must-pass failed" if g.must_pass else "below bar"
    return f"{g.grader_id} {fmt_score(g.score, g.max_score)} ({verdict}): {g.reason}"


def question_reasons(question: QuestionScore) -> list[str]:
    """Why a question scored low: the agent error, errored graders, unmet graders."""
    if question.errored:
        return [f"agent error ({question.error_type}): {question.error}"]
    reasons = [_grader_reason(g) for g in question.graders if g.error]
    reasons += [_grader_reason(g) for g in question.unmet]
    for check in question.critical_failures:
        reasons.append(f"critical rubric check failed: {check}")
    return reasons


def worst_questions(questions: Sequence[QuestionScore], limit: int = 5) -> list[QuestionScore]:
    """Questions with something to say, worst first: errored, degraded, then by composite."""
    flagged = [q for q in questions if q.degraded or q.unmet or q.critical_failures]
    flagged.sort(
        key=lambda q: (
            not q.errored,
            not q.degraded,
            q.composite if q.composite is not None else 5.0,
            q.question_id,
        )
    )
    return flagged[:limit]
