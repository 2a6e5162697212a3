"""`record_checks`: what any run must respect, read from the tool-call record alone, with no
expected answer: usable on every question, on a trace policy and on `grade-traces`/`receive`.

Each finding names its check, the call (`#n`, its position in request order) and why:

- `schema`: a call's arguments are not valid against the argument schema the tool declared to
  the model (the bound tool definitions the record holds, `record.offered`);
- `offered`: a call a model requested of a tool that model's agent was never offered (a call
  no model turn asked for, a node calling a tool itself, is not checked);
- `repeats`: more identical calls (same tool, same arguments) than allowed; a call repeated
  after the earlier one failed is a retry, not a repeat;
- `cycles`: one sequence of calls run N times back to back;
- `unhandled_errors`: a tool error never retried (a later successful call of that tool),
  escalated (a later call of an `escalation` tool) nor reported (the answer matches
  `failure_words`) before the final answer;
- `after_answer`: a call that started after the final answer;
- `max_steps`: more graph node runs than the budget (tool calls when there is no graph path).

Score 0-1, binary: 1 when nothing is found. A check whose evidence the record lacks (no
offered tools, no answer time) is named "not checked" in the details, never passed silently.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..inputs.blocks.checks import checks_problems, resolve_checks
from ..records import GradeResult, Outcome, ToolCall, ToolRecord
from ..redaction import compile_pattern, is_secret_name, redact_arguments
from .base import Grader, GraderServices
from .tool_usage import ATTEMPTED_OUTCOMES, EXECUTED_OUTCOMES
from .trajectory.grader import record_in, request_order
from .trajectory.matchers import shown

__all__ = ["FAILURE_WORDS", "GRADERS", "RecordChecksGrader", "find_problems"]

FAILURE_WORDS = (
    r"(?i)\b(error|errors|fail|failed|failure|failing|unable|could ?n[o']?t|cannot|can't|"
    r"sorry|unfortunately|problem|not (been )?(able|possible|completed|processed))\b"
)
"""An answer matching this reports a failure (the default `failure_words`)."""
ESCALATION = r"(?i)(escalat|hand_?off|human|transfer|operator)"
"""A tool whose name matches this escalates (when no `escalation` list is given)."""
_MAX_CYCLE_CALLS = 400  # cycle search is quadratic; longer runs are checked on their last 400


def _key(call: ToolCall) -> str:
    return call.qualified_id + json.dumps(call.arguments, sort_keys=True, default=str)


def _label(call: ToolCall, order: Mapping[int, int]) -> str:
    return f"#{order[call.seq]} `{call.name}`"


class _Findings:
    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.unchecked: dict[str, str] = {}

    def add(self, check: str, why: str, call: ToolCall | None = None) -> None:
        self.items.append({"check": check, "why": why, "call": call.seq if call else None})


def _schema_findings(
    calls: Sequence[ToolCall], record: ToolRecord, order: Mapping[int, int], out: _Findings
) -> None:
    from jsonschema import Draft202012Validator

    specs = {(s.agent, s.name): s for s in record.offered or ()}
    validators: dict[tuple[str, str], Any] = {}
    for call in calls:
        spec = specs.get((call.agent, call.name))
        if spec is None or spec.parameters is None:
            continue
        key = (call.agent, call.name)
        if key not in validators:
            validators[key] = Draft202012Validator(dict(spec.parameters))
        errors = sorted(validators[key].iter_errors(dict(call.arguments)), key=lambda e: e.path)
        for error in errors[:3]:
            where = "/".join(str(p) for p in error.absolute_path) or "(arguments)"
            secret = any(is_secret_name(str(p)) for p in error.absolute_path)
            message = f"fails its {error.validator!r} rule" if secret else error.message[:200]
            out.add(
                "schema",
                f"{_label(call, order)} argument {where}: {message} (the tool's declared schema)",
                call,
            )


def find_problems(
    record: ToolRecord, response: str, settings: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The findings of the checks in `settings` (`resolve_checks`) on one record, and the
    checks that could not be run with why."""
    out = _Findings()
    ordered = request_order(record)
    order = {c.seq: i for i, c in enumerate(ordered)}
    started = [c for c in ordered if c.outcome in ATTEMPTED_OUTCOMES]
    if settings.get("schema") or settings.get("offered"):
        if record.offered is None:
            reason = "the record does not hold the tools the agent was offered"
            for check in ("schema", "offered"):
                if settings.get(check):
                    out.unchecked[check] = reason
        else:
            if settings.get("schema"):
                _schema_findings(ordered, record, order, out)
            if settings.get("offered"):
                known = {s.agent for s in record.offered}
                offered = {(s.agent, s.name) for s in record.offered}
                for call in ordered:
                    if call.model_turn is None:
                        continue  # no model chose it (a node called the tool itself)
                    if call.agent in known and (call.agent, call.name) not in offered:
                        names = sorted(s.name for s in record.offered if s.agent == call.agent)
                        out.add(
                            "offered",
                            f"{_label(call, order)} was not among the tools agent "
                            f"{call.agent!r} was offered ({', '.join(names) or 'none'})",
                            call,
                        )
    allowed = settings.get("repeats")
    if allowed:
        limit = 1 if allowed is True else int(allowed)
        seen: dict[str, list[ToolCall]] = {}
        for call in started:
            same = seen.setdefault(_key(call), [])
            failed_before = same and same[-1].outcome == Outcome.ERROR
            same.append(call)
            if len(same) > limit and not failed_before:
                first = same[0]
                out.add(
                    "repeats",
                    f"{_label(call, order)} repeats {_label(first, order)} with the same "
                    f"arguments {shown(redact_arguments(dict(call.arguments)))} ({len(same)} identical calls, "
                    f"{limit} allowed)",
                    call,
                )
    times = settings.get("cycles")
    if times:
        _cycle(started[-_MAX_CYCLE_CALLS:], 3 if times is True else int(times), order, out)
    if settings.get("unhandled_errors"):
        _unhandled(ordered, response, settings, order, out)
    if settings.get("after_answer"):
        if record.answer_ns is None:
            out.unchecked["after_answer"] = "the record does not say when the answer was given"
        else:
            for call in started:
                if call.start_ns > record.answer_ns:
                    out.add(
                        "after_answer",
                        f"{_label(call, order)} started after the final answer was given",
                        call,
                    )
    budget = settings.get("max_steps")
    if budget:
        steps, what = (
            (len(record.nodes), "graph node runs")
            if record.nodes
            else (len(started), "tool calls (the record has no graph path)")
        )
        if steps > budget:
            out.add("max_steps", f"{steps} {what}, over the budget of {budget}")
    return out.items, out.unchecked


def _cycle(calls: Sequence[ToolCall], times: int, order: Mapping[int, int], out: _Findings) -> None:
    """The first sequence of 2+ calls (tool and arguments) run `times` times back to back."""
    keys = [_key(c) for c in calls]
    n = len(keys)
    for period in range(2, n // times + 1):
        for start in range(0, n - period * times + 1):
            block = keys[start : start + period]
            if len(set(block)) < 2:
                continue  # one call over and over is a repeat, not a cycle
            if all(
                keys[start + k * period : start + (k + 1) * period] == block
                for k in range(1, times)
            ):
                names = " -> ".join(c.name for c in calls[start : start + period])
                first = calls[start]
                out.add(
                    "cycles",
                    f"the sequence {names} ran {times} times back to back from "
                    f"{_label(first, order)}",
                    first,
                )
                return


def _unhandled(
    calls: Sequence[ToolCall],
    response: str,
    settings: Mapping[str, Any],
    order: Mapping[int, int],
    out: _Findings,
) -> None:
    errors = [c for c in calls if c.outcome == Outcome.ERROR]
    if not errors:
        return
    words = compile_pattern(settings.get("failure_words") or FAILURE_WORDS)
    if words.search(response or ""):
        return  # the answer reports a failure: the user was told
    escalation = settings.get("escalation")
    escalates = (
        (lambda c: c.name in escalation or c.qualified_id in escalation)
        if escalation
        else (lambda c: bool(compile_pattern(ESCALATION).search(c.name)))
    )
    for error in errors:
        later = calls[order[error.seq] + 1 :]
        retried = any(c.name == error.name and c.outcome == Outcome.OK for c in later)
        escalated = any(escalates(c) and c.outcome in EXECUTED_OUTCOMES for c in later)
        if retried or escalated:
            continue
        what = f"{error.error_type or 'error'}"
        message = (error.error_message or "").strip().splitlines()
        if message:
            what += f": {message[0][:120]}"
        answer = (response or "").strip().replace("\n", " ")
        answer = answer[:117] + "..." if len(answer) > 120 else answer
        out.add(
            "unhandled_errors",
            f"{_label(error, order)} failed ({what}) and was never retried, escalated or "
            f"reported before the final answer {answer!r}",
            error,
        )


class RecordChecksGrader(Grader):
    """Checks any run against what every run must respect, from the record alone."""

    id = "record_checks"
    label = "Record checks"
    description = (
        "Deterministic, no expected answer: arguments valid against each tool's declared "
        "schema, only tools offered, no repeated identical calls, no cycles, no tool error "
        "left unhandled before an answer that reads as success, no call after the final "
        "answer, a step budget."
    )
    needs = "nothing (`checks` on the question or the grader's options tune it)"
    owns = ("checks",)
    evidence = ("tool_calls",)
    min_score = 0.0
    max_score = 1.0
    observes_actions = True
    binary = True

    def __init__(self, *, services: GraderServices | None = None, **options: Any) -> None:
        super().__init__(services=services, **options)
        self.problems = checks_problems(options)

    def grade(self, input: str, response: str, context: Mapping[str, Any]) -> GradeResult:
        if self.problems:
            pointer, message = self.problems[0]
            return self.result(0.0, f"setup failure: options{pointer}: {message}")
        own = context.get("checks")
        problems = checks_problems(own) if own is not None else []
        if problems:
            pointer, message = problems[0]
            return self.result(0.0, f"setup failure: checks{pointer}: {message}")
        settings = resolve_checks(self.options or None, own)
        if not settings:
            return self.result(None, "every record check is turned off for this question")
        record = record_in(self, context, "record checks are never read from the response text")
        if isinstance(record, GradeResult):
            return record
        findings, unchecked = find_problems(record, response, settings)
        details = {
            "source": "record",
            "enabled": sorted(settings),
            "findings": findings,
            "not_checked": unchecked,
        }
        run = ", ".join(sorted(k for k in settings if k not in unchecked))
        skipped = "".join(f"; not checked: {k} ({why})" for k, why in sorted(unchecked.items()))
        if findings:
            listed = "; ".join(f"{f['check']}: {f['why']}" for f in findings)
            return self.result(
                0.0, f"{len(findings)} finding(s) in the record: {listed}{skipped}", details=details
            )
        return self.result(1.0, f"no finding ({run}){skipped}", details=details)


GRADERS: list[type[Grader]] = [RecordChecksGrader]
