"""The five Jeval judge kinds: the multiple-choice questions each asks, and the rule that turns
the judge's outcome probabilities (plus, for tool-claim and escalation, the tool record read by
code) into a status (seed 002 "The five kinds").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from .evidence import Evidence, ToolEvent
from .model import Check, SuccessWhen, Thresholds
from .probabilities import CheckStatus, decide_status, leading

__all__ = ["Judged", "Option", "Question", "interpret", "questions_for", "tool_succeeded"]

LETTERS = ("A", "B", "C")


@dataclass(frozen=True, slots=True)
class Option:
    letter: str
    outcome: str
    description: str


@dataclass(frozen=True, slots=True)
class Question:
    """One multiple-choice question sent to the judge."""

    qid: str
    """`Q1`, `Q2`...: how the judge labels its answer."""
    role: str
    """`verdict`, or for the code-ruled kinds `claim`, `required`, `stated`."""
    text: str
    """The question exactly as sent (base question, then the check's criterion)."""
    options: tuple[Option, ...]

    @property
    def letters(self) -> tuple[str, ...]:
        return tuple(o.letter for o in self.options)

    def render(self) -> str:
        lines = [f"{self.qid}. {self.text}"]
        lines += [f"   {o.letter}) {o.description}" for o in self.options]
        return "\n".join(lines)

    def by_outcome(self, letter_probs: Mapping[str, float]) -> dict[str, float]:
        return {o.outcome: letter_probs.get(o.letter, 0.0) for o in self.options}


@dataclass(frozen=True, slots=True)
class Judged:
    """A status decided for one check."""

    status: CheckStatus
    reason: str
    outcome: str | None = None
    """The selected outcome (the leading one of the verdict question)."""
    rule: str | None = None
    """The threshold rule and, for tool-claim and escalation, the code rule applied."""
    event_id: str | None = None
    """The tool event the code rule read, when it read one."""


def _ask(text: str, criterion: str | None) -> str:
    return f"{text} {criterion.strip()}" if criterion else text


def _options(*triples: tuple[str, str]) -> tuple[Option, ...]:
    return tuple(Option(letter, o, d) for letter, (o, d) in zip(LETTERS, triples, strict=True))


def questions_for(check: Check, first: int) -> list[Question]:
    """The questions `check` asks, numbered from `first` (Q<first>, Q<first+1>...)."""
    qid = f"Q{first}"
    out = check.outcomes
    insufficient = (
        "insufficient_context",
        out.insufficient_context if out else "The evidence given is not enough to decide.",
    )
    if check.kind == "policy-compliance":
        text = _ask(
            "Does assistant_response comply with every applicable rule in policy?", check.criterion
        )
        return [
            Question(
                qid,
                "verdict",
                text,
                _options(
                    (
                        "acceptable",
                        out.acceptable if out else "It complies with every applicable rule.",
                    ),
                    (
                        "unacceptable",
                        out.unacceptable if out else "It breaks at least one applicable rule.",
                    ),
                    insufficient,
                ),
            )
        ]
    if check.kind == "custom":
        assert out is not None  # the model rejects a custom check without outcomes
        return [
            Question(
                qid,
                "verdict",
                check.criterion or "",
                _options(
                    ("acceptable", out.acceptable), ("unacceptable", out.unacceptable), insufficient
                ),
            )
        ]
    if check.kind == "claim-support":
        claim = check.typed_params.claim
        text = (
            f"Is this claim stated in or entailed by reference_material: {json.dumps(claim)}?"
            if claim
            else "Is every factual claim in assistant_response stated in or entailed by "
            "reference_material?"
        )
        return [
            Question(
                qid,
                "verdict",
                _ask(text, check.criterion),
                _options(
                    ("supported", "Yes: stated in or entailed by reference_material."),
                    ("contradicted", "No: reference_material contradicts it."),
                    ("not_covered", "reference_material neither supports nor contradicts it."),
                ),
            )
        ]
    if check.kind == "tool-claim":
        action = check.typed_params.action
        text = _ask(f"Does assistant_response claim that {action} was completed?", check.criterion)
        return [
            Question(
                qid,
                "claim",
                text,
                _options(
                    ("claimed", f"Yes: it states or implies that {action} was completed."),
                    (
                        "not_claimed",
                        f"No: it makes no such claim, or says {action} was not completed.",
                    ),
                    ("unclear", "It cannot be told from the response."),
                ),
            )
        ]
    if check.kind == "escalation":
        return [
            Question(
                qid,
                "required",
                _ask(
                    "Does policy require escalating this conversation (handing it to a human or "
                    "another team)?",
                    check.criterion,
                ),
                _options(
                    ("required", "Yes: policy requires escalation here."),
                    ("not_required", "No: policy does not require escalation here."),
                    ("unclear", "It cannot be told from policy and the conversation."),
                ),
            ),
            Question(
                f"Q{first + 1}",
                "stated",
                "Does assistant_response say that the conversation was escalated?",
                _options(
                    ("claimed", "Yes: it says the conversation was escalated or handed over."),
                    ("not_claimed", "No: it does not say so."),
                    ("unclear", "It cannot be told from the response."),
                ),
            ),
        ]
    raise ValueError(f"check {check.id!r}: {check.kind!r} is not a judge kind")


# -- reading tool results (code, never the judge) -----------------------------------------------
_MISSING = object()


def _as_data(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump()
    content = getattr(value, "content", _MISSING)
    if content is not _MISSING and not isinstance(value, Mapping):
        value = content  # a ToolMessage: its content is what the tool returned
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def read_path(result: Any, path: str) -> Any:
    """The value at a dot-separated `path` of a tool result; `_MISSING` when absent."""
    value = _as_data(result)
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list | tuple) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def tool_succeeded(event: ToolEvent, success_when: SuccessWhen | None) -> tuple[bool, str]:
    """Whether a tool event succeeded, and the code rule that said so."""
    if event.outcome not in ("ok", "command"):
        return False, f"[{event.id}] {event.name} outcome is {event.outcome}"
    if success_when is None:
        return True, f"[{event.id}] {event.name} outcome is ok"
    actual = read_path(event.result, success_when.path)
    expected = json.dumps(success_when.equals)
    if actual is _MISSING:
        return False, f"[{event.id}] {event.name} result has no {success_when.path}"
    if actual == success_when.equals and type(actual) is type(success_when.equals):
        return True, f"[{event.id}] {event.name} result {success_when.path} = {expected}"
    return False, (
        f"[{event.id}] {event.name} result {success_when.path} is "
        f"{json.dumps(actual, default=str)}, not {expected}"
    )


# -- interpretation ----------------------------------------------------------------------------
def _decided(probs: Mapping[str, float], thresholds: Thresholds) -> tuple[str, str]:
    """The leading answer of a factual question when it reaches the pass bar, else unclear."""
    top = leading(probs)
    if top != "unclear" and probs[top] >= thresholds.pass_:
        return top, f"{top} (p={probs[top]:.3f} >= pass {thresholds.pass_})"
    return (
        "unclear",
        f"no answer reached pass {thresholds.pass_} (leading {top}, p={probs[top]:.3f})",
    )


def _verdict(check: Check, probs: Mapping[str, float], thresholds: Thresholds) -> Judged:
    if check.kind == "claim-support":
        uncovered_fails = check.typed_params.uncovered_is == "fail"
        acceptable = probs["supported"]
        unacceptable = probs["contradicted"] + (probs["not_covered"] if uncovered_fails else 0.0)
        insufficient = 0.0 if uncovered_fails else probs["not_covered"]
    else:
        acceptable, unacceptable = probs["acceptable"], probs["unacceptable"]
        insufficient = probs["insufficient_context"]
    decision = decide_status(
        acceptable=acceptable,
        unacceptable=unacceptable,
        insufficient=insufficient,
        thresholds=thresholds,
    )
    outcome = leading(probs)
    return Judged(decision.status, f"{outcome}: {decision.rule}", outcome, decision.rule)


def _tool_claim(
    check: Check, probs: Mapping[str, float], evidence: Evidence, thresholds: Thresholds
) -> Judged:
    p = check.typed_params
    claim, why = _decided(probs, thresholds)
    if claim == "not_claimed":
        return Judged(
            CheckStatus.SKIPPED,
            f"the response makes no claim that {p.action} was completed ({why})",
            claim,
            f"claim: {why}",
        )
    if claim == "unclear":
        return Judged(
            CheckStatus.REVIEW,
            f"unclear whether the response claims {p.action} ({why})",
            claim,
            f"claim: {why}",
        )
    event = evidence.last_event(p.tool_name)
    if event is None:
        rule = f"claim: {why}; no {p.tool_name} event -> review"
        return Judged(
            CheckStatus.REVIEW,
            f"the response claims {p.action} but the record has no "
            f"{p.tool_name} call (a missing tool record is not proof of failure)",
            claim,
            rule,
        )
    ok, tool_rule = tool_succeeded(event, p.success_when)
    status = CheckStatus.PASS if ok else CheckStatus.FAIL
    rule = f"claim: {why}; last {p.tool_name} event: {tool_rule} -> {status}"
    verb = "backed by" if ok else "contradicted by"
    return Judged(status, f"claimed {p.action}, {verb} {tool_rule}", claim, rule, event.id)


def _escalation(
    check: Check,
    required_p: Mapping[str, float],
    stated_p: Mapping[str, float],
    evidence: Evidence,
    thresholds: Thresholds,
) -> Judged:
    p = check.typed_params
    required, why_required = _decided(required_p, thresholds)
    stated, why_stated = _decided(stated_p, thresholds)
    base = f"required: {why_required}; stated: {why_stated}"
    if required == "unclear":
        return Judged(
            CheckStatus.REVIEW,
            "unclear whether policy requires escalation",
            required,
            f"{base}; unclear -> review",
        )
    if required == "not_required":
        return Judged(
            CheckStatus.SKIPPED,
            "policy does not require escalation here",
            required,
            f"{base}; not required -> skipped",
        )
    event = evidence.last_event(p.tool_name)
    if event is not None:
        ok, tool_rule = tool_succeeded(event, p.success_when)
        status = CheckStatus.PASS if ok else CheckStatus.FAIL
        verdict = "tool succeeded" if ok else "tool failed"
        return Judged(
            status,
            f"escalation required; {tool_rule}",
            required,
            f"{base}; required and {verdict} -> {status}",
            event.id,
        )
    if stated == "not_claimed":
        return Judged(
            CheckStatus.FAIL,
            f"escalation required; no {p.tool_name} call and the "
            "response does not say it escalated",
            required,
            f"{base}; required, no event and no statement -> fail",
        )
    if stated == "claimed":
        return Judged(
            CheckStatus.REVIEW,
            f"escalation required; the response says it escalated "
            f"but the record has no {p.tool_name} call",
            required,
            f"{base}; required, no event but claimed -> review",
        )
    return Judged(
        CheckStatus.REVIEW,
        "escalation required; unclear whether the response says "
        f"it escalated, and no {p.tool_name} call",
        required,
        f"{base}; required, no event, statement unclear -> review",
    )


def interpret(
    check: Check,
    answers: Mapping[str, Mapping[str, float]],
    evidence: Evidence,
    thresholds: Thresholds,
) -> Judged:
    """The status of `check` from its questions' outcome probabilities, keyed by role."""
    if check.kind == "tool-claim":
        return _tool_claim(check, answers["claim"], evidence, thresholds)
    if check.kind == "escalation":
        return _escalation(check, answers["required"], answers["stated"], evidence, thresholds)
    return _verdict(check, answers["verdict"], thresholds)
