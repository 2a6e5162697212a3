"""Run-time advisories about what a target's graders can see (seed 000 "Text-only agent targets").

An agent-mode target scored by nothing that observes actions is "Text only": an agent that
reports work it never did scores like one that did it. Attaching an action-observing grader is
not enough when it skips every question (no `expected_tools`, no `metadata.state`), or when it
only ever read the response text because no tool-call record existed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..records import GradeResult
from .base import Attachment, Grader
from .tool_usage import FALLBACK_MARKER

__all__ = [
    "TEXT_ONLY",
    "Advisory",
    "action_observing",
    "advisories",
    "fallback_action_graders",
    "skipping_action_graders",
    "text_only",
]

TEXT_ONLY = "Text only"
"""The mark the targets list and the run command put on a text-only agent target."""


@dataclass(frozen=True, slots=True)
class Advisory:
    """One thing the run command says about its graders."""

    kind: str
    """"text_only", "skipped_every_question" or "no_record"."""
    message: str
    """The sentence printed to the operator."""
    grader_id: str | None = None
    """The grader concerned, when one is."""


def _grader_of(item: Attachment | Grader | type[Grader]) -> Grader | type[Grader]:
    return item.grader if isinstance(item, Attachment) else item


def action_observing(attachments: Iterable[Attachment | Grader | type[Grader]]) -> list[str]:
    """Ids of the attached graders that declare observes_actions."""
    return [g.id for g in map(_grader_of, attachments) if g.observes_actions]


def text_only(
    mode: str,
    attachments: Iterable[Attachment | Grader | type[Grader]],
    results: Iterable[Sequence[GradeResult]] | Mapping[Any, Sequence[GradeResult]] = (),
) -> bool:
    """True for an agent-mode target with no action-observing grader attached, and no result
    that observed actions all the same (a rubric judge that decided a tool-claim check)."""
    if mode != "agent" or action_observing(attachments):
        return False
    grouped = _results_by_grader(results)
    return not any(r.details.get("observes_actions") is True for rs in grouped.values() for r in rs)


def _results_by_grader(
    results: Iterable[Sequence[GradeResult]] | Mapping[Any, Sequence[GradeResult]],
) -> dict[str, list[GradeResult]]:
    per_question = results.values() if isinstance(results, Mapping) else results
    grouped: dict[str, list[GradeResult]] = {}
    for question_results in per_question:
        for result in question_results:
            grouped.setdefault(result.grader_id, []).append(result)
    return grouped


def skipping_action_graders(
    attachments: Iterable[Attachment | Grader | type[Grader]],
    results: Iterable[Sequence[GradeResult]] | Mapping[Any, Sequence[GradeResult]],
) -> list[str]:
    """Attached action-observing graders that skipped every question they were given.

    `results` holds the GradeResults of each question (a list per question, or a mapping of
    question id to that list). A grader with no result at all is not reported here.
    """
    grouped = _results_by_grader(results)
    return [
        grader_id
        for grader_id in action_observing(attachments)
        if grouped.get(grader_id) and all(r.skipped for r in grouped[grader_id])
    ]


def fallback_action_graders(
    attachments: Iterable[Attachment | Grader | type[Grader]],
    results: Iterable[Sequence[GradeResult]] | Mapping[Any, Sequence[GradeResult]],
) -> list[str]:
    """Attached action-observing graders that scored at least one question from the response
    text because no tool-call record existed (their reason carries `FALLBACK_MARKER`)."""
    grouped = _results_by_grader(results)
    return [
        grader_id
        for grader_id in action_observing(attachments)
        if any(FALLBACK_MARKER in r.reason for r in grouped.get(grader_id, ()) if r.scored)
    ]


def advisories(
    mode: str,
    attachments: Sequence[Attachment | Grader | type[Grader]],
    results: Iterable[Sequence[GradeResult]] | Mapping[Any, Sequence[GradeResult]] = (),
) -> list[Advisory]:
    """Everything the run command should say about what its graders could see. "Text only"
    and "skipped every question" concern agent targets; a verdict read from the response text
    for want of a record is reported for any target (a chat-mode target never has one)."""
    results = list(results.values()) if isinstance(results, Mapping) else list(results)
    no_record = [
        Advisory(
            "no_record",
            f"{grader_id}: {FALLBACK_MARKER} for some questions; those verdicts were read from "
            "the response text, which cannot tell a tool called from a tool mentioned",
            grader_id,
        )
        for grader_id in fallback_action_graders(attachments, results)
    ]
    if mode != "agent":
        return no_record
    if text_only(mode, attachments, results):
        return [
            Advisory(
                "text_only",
                "Text only: no attached grader observes actions, so an agent that reports work "
                "it never did scores like one that did it (attach tool_usage_grader or "
                "state_grader)",
            )
        ]
    notes = [
        Advisory(
            "skipped_every_question",
            f"{grader_id} observes actions but skipped every question (the questions carry "
            "nothing it checks: expected_tools / metadata.state), so no verdict rests on what "
            "the agent did",
            grader_id,
        )
        for grader_id in skipping_action_graders(attachments, results)
    ]
    return notes + no_record
