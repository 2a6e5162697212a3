"""Helpers the report renderers share: number formatting and the worst questions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..verdicts.result import QuestionResult
from ..verdicts.scoring import GraderVerdict

__all__ = [
    "annotation_lines",
    "check_label",
    "check_problems",
    "fmt",
    "fmt_score",
    "lost_spans_reason",
    "question_label",
    "question_reasons",
    "rubric_findings",
    "unscored_line",
    "worst_questions",
]


def fmt(value: float | None, digits: int = 2) -> str:
    """A number without noise: 5 -> "5", 3.75 -> "3.75", 0.666 -> "0.67", None -> "-"."""
    if value is None:
        return "-"
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.{digits}f}".rstrip("0").rstrip(".")


def lost_spans_reason(lost: int) -> str:
    """Why a run whose gates passed is still incomplete: spans it lost (agent traces dropped
    unread, records not written to its trace file) were never graded."""
    return (
        f"{lost} span(s) of agent traces were lost (dropped before grading or not written): "
        "a lost trace is never a pass, so the run is incomplete"
    )


def fmt_score(score: float | None, max_score: float) -> str:
    """The grader's own answer against its own denominator: "1 / 1", "3.75 / 5"."""
    return "-" if score is None else f"{fmt(score)} / {fmt(max_score)}"


def _grader_reason(g: GraderVerdict) -> str:
    if g.error:
        return f"{g.grader_id} errored: {g.reason}"
    verdict = "must-pass failed" if g.must_pass else "below bar"
    return f"{g.grader_id} {fmt_score(g.score, g.max_score)} ({verdict}): {g.reason}"


def check_label(check: dict[str, Any]) -> str:
    """`booking-claim@1.0.0` (the id, and the version when known)."""
    name = str(check.get("id", "?"))
    return f"{name}@{check['version']}" if check.get("version") else name


def check_problems(question: QuestionResult) -> list[tuple[str, dict[str, Any]]]:
    """The rubric checks a person must see for this question, as (what, check): failed
    critical or required checks ("critical failed", "required failed") and checks left in
    Review ("required in Review", "optional in Review"). Checks of errored graders are left
    out: the grader's error is reported instead."""
    out = []
    for check in question.grader_checks():
        status = check.get("status")
        required = check.get("required", True)
        if status == "fail" and check.get("severity") == "critical":
            out.append(("critical failed", check))
        elif status == "fail" and required:
            out.append(("required failed", check))
        elif status == "review":
            out.append(("required in Review" if required else "optional in Review", check))
    return out


def _check_line(what: str, check: dict[str, Any]) -> str:
    reason = str(check.get("reason") or "").strip()
    if check.get("decided_by"):  # a person resolved a Review: say who, and their note
        note = check.get("decision_note")
        what += f" (decided by {check['decided_by']}" + (f": {note})" if note else ")")
    return f"rubric check {check_label(check)} {what}" + (f": {reason}" if reason else "")


def annotation_lines(questions: Sequence[QuestionResult]) -> list[str]:
    """What people answered with `tracegrade label`, one line each, stale ones flagged:
    `q1: would_send = yes by ana at 2026-11-30T16:40 (note)`."""
    out = []
    for q in questions:
        for a in getattr(q, "annotations", []):
            review = str(a["label"]).startswith("review:")
            answer = (
                ("pass" if a["answer"] else "fail") if review else ("yes" if a["answer"] else "no")
            )
            stale = " [STALE: the answer changed since; not applied]" if a.get("stale") else ""
            note = f": {a['note']}" if a.get("note") else ""
            out.append(
                f"{question_label(q)}: {a['label']} = {answer} by {a['by']} at "
                f"{str(a['created'])[:16]}{stale}{note}"
            )
    return out


def rubric_findings(questions: Sequence[QuestionResult]) -> list[str]:
    """Every critical or required rubric check that failed, and every check left in Review,
    named with its question: `q1: rubric check booking-claim@1.0.0 critical failed: ...`."""
    return [
        f"{q.id}: {_check_line(what, check)}"
        for q in questions
        if not q.errored
        for what, check in check_problems(q)
    ]


def question_reasons(question: QuestionResult) -> list[str]:
    """Why a question scored low: the agent error, errored graders, unmet graders, rubric
    checks that failed or were left in Review."""
    if question.errored:
        return [f"agent error ({question.error_type}): {question.error}"]
    reasons = [outcome_line(question)] if question.outcome is not None else []
    reasons += [_grader_reason(g) for g in question.graders if g.error]
    reasons += [_grader_reason(g) for g in question.unmet]
    reasons += [_check_line(what, check) for what, check in check_problems(question)]
    reasons += [f"over budget: {why}" for why in question.over_budget]
    return reasons


def outcome_line(question: QuestionResult) -> str:
    """`interrupted: waiting on interrupt {...}` (`(expected)` when the question said so)."""
    expected = " (expected)" if question.outcome_expected else ""
    return f"{question.outcome}{expected}: {question.outcome_reason or ''}".rstrip(": ")


def question_label(question: QuestionResult) -> str:
    """The question id, with its trial when the target repeats questions (`rome#2`)."""
    return f"{question.id}#{question.trial}" if question.trial else question.id


def unscored_line(ids: Sequence[str], show: Any = str) -> str:
    """The questions no grader scored, named (each through `show`, the report's escaping)."""
    names = ", ".join(show(i) for i in ids[:10]) + (
        f" and {len(ids) - 10} more" if len(ids) > 10 else ""
    )
    return (
        f"{len(ids)} question(s) no grader scored (every grader skipped; out of the composite, "
        f"not counted as passed): {names}"
    )


def worst_questions(questions: Sequence[QuestionResult], limit: int = 5) -> list[QuestionResult]:
    """Questions with something to say, worst first: errored, degraded, then by composite."""
    flagged = [
        q
        for q in questions
        if q.degraded or q.unmet or q.ended_early or q.over_budget or check_problems(q)
    ]
    flagged.sort(
        key=lambda q: (
            not q.errored,
            not q.degraded,
            q.composite if q.composite is not None else 5.0,
            q.id,
        )
    )
    return flagged[:limit]
