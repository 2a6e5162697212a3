"""`tool_usage_grader`: the tools an agent called, checked against `expected_tools` (seeds 000, 004).

Each expectation met is one equal share of 0–5 (three of four met: 3.75). The source is the
sealed tool-call record; only when no record exists does it fall back to scraping the response
for tool-call markers, and then it says so with `FALLBACK_MARKER` and fails `args`/`after`
expectations loudly, since text carries neither arguments nor order.

Which calls count (decided from the record's outcome, never from text):
- `should_run: true` is met only by a call that executed: outcome ok, error (it ran and failed;
  whether a tool succeeds is a different assertion), command or handoff. A not_executed call
  (unknown tool) or a declined one (a person declined it at an approval step) never ran; an
  interrupted or cancelled one did not finish.
- `should_run: false` is violated by any call that started executing: everything but
  not_executed and declined. An interrupted or cancelled call may already have had side
  effects.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..records import GradeResult, Outcome, ToolCall, ToolRecord
from .base import Grader, GraderServices

__all__ = [
    "ATTEMPTED_OUTCOMES",
    "EXECUTED_OUTCOMES",
    "FALLBACK_MARKER",
    "GRADERS",
    "Expectation",
    "ExpectationError",
    "ToolUsageGrader",
    "args_match",
    "parse_expectations",
    "same_scalar",
    "scrape_tool_markers",
]

FALLBACK_MARKER = "no tool-call record available"
"""The phrase every fallback verdict carries; the run's advisories match on it."""

_FALLBACK_NOTE = (
    f"{FALLBACK_MARKER}; read from the response text, which only works when the answer "
    "spells out tool markers"
)
_RECORD_NOTE = "from the agent tool-call record"

EXECUTED_OUTCOMES = frozenset({Outcome.OK, Outcome.ERROR, Outcome.COMMAND, Outcome.HANDOFF})
"""Outcomes of a call that ran: these satisfy `should_run: true`."""
ATTEMPTED_OUTCOMES = EXECUTED_OUTCOMES | {Outcome.INTERRUPTED, Outcome.CANCELLED}
"""Outcomes of a call that started running: these violate `should_run: false`."""

_SCALARS = (str, int, float, bool, type(None))
_SCALAR_TYPES = frozenset(_SCALARS)
_KEYS = frozenset({"tool", "should_run", "args", "after"})


class ExpectationError(ValueError):
    """An `expected_tools` entry that asserts nothing coherent (a setup failure)."""


@dataclass(frozen=True, slots=True)
class Expectation:
    """One parsed `expected_tools` entry."""

    tool: str
    """Function name, or a qualified id `"<agent>:<tool>"` when it contains a colon."""
    should_run: bool
    """True: some (matching) call must have executed. False: none may have started."""
    args: tuple[tuple[str, Any], ...] | None = None
    """Subset of arguments a counted call must have been given; narrows which calls count."""
    after: str | None = None
    """A tool whose result was available before the first counted call was requested."""

    def describe(self) -> str:
        text = f"`{self.tool}`"
        if self.args:
            text += " with " + ", ".join(f"{key}={value!r}" for key, value in self.args)
        if self.after:
            text += f" after `{self.after}`"
        return text


def parse_expectations(raw: Any) -> list[Expectation]:
    """Parse `expected_tools`; raise `ExpectationError` naming the entry on any incoherence."""
    if not isinstance(raw, list):
        raise ExpectationError(f"expected_tools must be a list, got {type(raw).__name__}")
    parsed = []
    for index, entry in enumerate(raw):
        where = _Where(index)
        if type(entry) is not dict and not isinstance(entry, Mapping):
            raise ExpectationError(f"{where} must be a mapping with `tool` and `should_run`")
        if not _KEYS.issuperset(entry):
            unknown = set(entry) - _KEYS
            raise ExpectationError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        tool = entry.get("tool")
        if type(tool) is not str or not tool.strip():
            raise ExpectationError(f"{where}.tool must be a non-empty tool name")
        should_run = entry.get("should_run")
        if type(should_run) is not bool:
            raise ExpectationError(f"{where}.should_run must be true or false")
        args = None
        if "args" in entry:
            raw_args = entry["args"]
            if (type(raw_args) is not dict and not isinstance(raw_args, Mapping)) or not raw_args:
                raise ExpectationError(
                    f"{where}.args must be a non-empty mapping (an empty one asserts nothing)"
                )
            for key, value in raw_args.items():
                if type(value) not in _SCALAR_TYPES and not isinstance(value, _SCALARS):
                    raise ExpectationError(
                        f"{where}.args.{key} must be a scalar (string, number, boolean or null)"
                    )
            args = tuple((str(key), value) for key, value in raw_args.items())
        after = None
        if "after" in entry:
            after = entry["after"]
            if not isinstance(after, str) or not after.strip():
                raise ExpectationError(
                    f"{where}.after must name a tool (a blank after asserts nothing)"
                )
            if not should_run:
                raise ExpectationError(
                    f"{where}: after with should_run: false is incoherent "
                    "(a tool that must not run has no position)"
                )
        parsed.append(Expectation(tool=tool, should_run=should_run, args=args, after=after))
    return parsed


class _Where:
    """`expected_tools[i]`, formatted only when an error message needs it."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __format__(self, spec: str) -> str:
        return f"expected_tools[{self.index}]"


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def same_scalar(actual: Any, expected: Any) -> bool:
    """Scalars compare as text (12 == "12" == 12.0); booleans and null strictly."""
    if type(actual) is str and type(expected) is str:  # the common case, fast
        return actual == expected
    if expected is None or isinstance(expected, bool):
        return actual is None if expected is None else (type(actual) is bool and actual == expected)
    if actual is None or isinstance(actual, bool):
        return False
    if isinstance(actual, str | int | float) and isinstance(expected, str | int | float):
        return _text(actual) == _text(expected)
    return False


def args_match(actual: Mapping[str, Any], expected: Sequence[tuple[str, Any]]) -> bool:
    """Subset match: every expected key is present in the actual arguments with the same value."""
    for key, value in expected:
        if key not in actual or not same_scalar(actual[key], value):
            return False
    return True


# -- the response-text fallback ------------------------------------------------------------
@functools.lru_cache(maxsize=1024)
def _marker_pattern(tool: str) -> re.Pattern[str]:
    """Markers of a tool call in prose, for one tool name:

    - a call expression `name(`;
    - a backticked name after a verb: "called `name`" (also calling, ran, used, invoked...);
    - a bracket tag `[tool: name]` or `[tool_call: name]`;
    - a JSON name field `"name": "name"` (as in printed tool-call payloads).
    A bare mention of the name in prose is not a marker.
    """
    name = re.escape(tool)
    edge = r"(?<![\w:.\-])"
    return re.compile(
        rf"{edge}{name}\s*\("
        rf"|\b(?:called|calling|call|calls|ran|run|running|used|using|invoked|invoking|executed)"
        rf"\s+(?:the\s+)?(?:tool\s+)?`{name}`"
        rf"|\[\s*tool(?:_call)?\s*:\s*{name}\s*\]"
        rf'|"name"\s*:\s*"{name}"'
    )


def scrape_tool_markers(response: str, tool: str) -> bool:
    """True when `response` carries a tool-call marker for `tool` (see `_marker_pattern`)."""
    return _marker_pattern(tool).search(response) is not None


# -- the grader ----------------------------------------------------------------------------
class ToolUsageGrader(Grader):
    """Checks the tools the agent called against the question's `expected_tools`."""

    id = "tool_usage_grader"
    label = "Tool usage"
    description = (
        "Deterministic: did the agent call (or not call) the expected tools, with the expected "
        "arguments, in the expected order? Read from the tool-call record."
    )
    observes_actions = True
    needs = "`expected_tools` (required, else skips)"
    owns = ("expected_tools",)
    evidence = ("tool_calls",)
    # The threshold a must-pass attachment is told to set (the score is 5 x the share met).
    threshold_hint = "threshold: 5 (5 = every expectation met)"

    def __init__(self, *, services: GraderServices | None = None) -> None:
        # No options: an unknown option in a config is an error, not silently ignored.
        super().__init__(services=services)

    def grade(self, input: str, response: str, context: Mapping[str, Any]) -> GradeResult:
        raw = context.get("expected_tools")
        if raw is None or raw == []:
            return self.result(None, "no expected_tools in context, skipping")
        try:
            expectations = parse_expectations(raw)
        except ExpectationError as exc:
            return self.result(0.0, f"setup failure: {exc}")

        labels = [e.describe() for e in expectations]
        if "tool_calls" in context:
            record = context["tool_calls"]
            if isinstance(record, list | tuple) and all(isinstance(c, ToolCall) for c in record):
                record = ToolRecord(record)
            if not isinstance(record, ToolRecord):
                return self.result(
                    None,
                    f"tool_calls in context is not a tool-call record ({type(record)!r})",
                    True,
                )
            if not record.complete:
                problems = "; ".join(record.problems) or "capture failed"
                return self.result(
                    None, f"tool-call record incomplete, so it is not evidence: {problems}", True
                )
            index = _RecordIndex(record)
            verdicts = [
                _check_record(index, e, label)
                for e, label in zip(expectations, labels, strict=True)
            ]
            note, source = _RECORD_NOTE, "record"
        else:
            verdicts = [
                _check_text(response, e, label)
                for e, label in zip(expectations, labels, strict=True)
            ]
            note, source = _FALLBACK_NOTE, "response_text"

        met = sum(1 for ok, _ in verdicts if ok)
        total = len(expectations)
        unmet = [why for ok, why in verdicts if not ok]
        plural = "s" if total != 1 else ""
        if not unmet:
            reason = f"all {total} tool expectation{plural} met ({note})"
        else:
            reason = f"{met} of {total} tool expectation{plural} met ({note}); unmet: " + "; ".join(
                unmet
            )
        details = {
            "source": source,
            "expectations": [
                {"expectation": label, "met": ok, "why": why}
                for label, (ok, why) in zip(labels, verdicts, strict=True)
            ],
        }
        return self.result(5.0 * met / total, reason, details=details)


def _count(n: int) -> str:
    return f"{n} time" if n == 1 else f"{n} times"


def _shown_args(call: ToolCall, expected: Sequence[tuple[str, Any]]) -> str:
    parts = []
    for key, _ in expected:
        parts.append(f"{key}={call.arguments[key]!r}" if key in call.arguments else f"{key} absent")
    return ", ".join(parts)


class _RecordIndex:
    """Calls by emitted name and by qualified id, built once per grading: the same answers as
    `ToolCall.matches`, without scanning the record for every expectation."""

    __slots__ = ("_bare_ids", "_qualified", "by_name", "record")

    def __init__(self, record: ToolRecord) -> None:
        self.record = record
        self.by_name: dict[str, list[ToolCall]] = {}
        for c in record:
            if c.name in self.by_name:
                self.by_name[c.name].append(c)
            else:
                self.by_name[c.name] = [c]
        self._qualified: dict[str, list[ToolCall]] | None = None
        self._bare_ids = any(":" not in c.qualified_id for c in record)

    def by_qualified(self, tool: str) -> list[ToolCall]:
        if self._qualified is None:
            self._qualified = {}
            for c in self.record:
                self._qualified.setdefault(c.qualified_id, []).append(c)
        return self._qualified.get(tool, [])

    def named(self, tool: str) -> list[ToolCall]:
        """Calls `tool` names (see `ToolCall.matches`), in start order."""
        if ":" in tool:
            return self.by_qualified(tool)
        by_name = self.by_name.get(tool, [])
        # A qualified id always carries a colon, so a bare name matches one only when the
        # capture layer recorded an id without an agent part.
        by_qualified = self.by_qualified(tool) if self._bare_ids else None
        if not by_qualified:
            return by_name
        merged = {c.seq: c for c in by_name}
        merged.update((c.seq, c) for c in by_qualified)
        return [merged[seq] for seq in sorted(merged)]


def _check_record(index: _RecordIndex, e: Expectation, label: str) -> tuple[bool, str]:
    """(met, why) for one expectation against the sealed record. Comparators take
    (actual, expected) in that order."""
    record = index.record
    named = index.named(e.tool)
    counted = named if e.args is None else [c for c in named if args_match(c.arguments, e.args)]
    if not e.should_run:
        started = [c for c in counted if c.outcome in ATTEMPTED_OUTCOMES]
        if not started:
            return True, ""
        with_args = " with those arguments" if e.args else ""
        return False, f"{label}: expected not to run, ran {_count(len(started))}{with_args}"

    executed = [c for c in counted if c.outcome in EXECUTED_OUTCOMES]
    if not executed:
        if not named:
            return False, f"{label}: expected to run, never called"
        if e.args is not None:
            ran = [c for c in named if c.outcome in EXECUTED_OUTCOMES]
            if ran:
                seen = "; ".join(_shown_args(c, e.args) for c in ran[:3])
                more = f" (+{len(ran) - 3} more)" if len(ran) > 3 else ""
                return False, (
                    f"{label}: expected to run, but its {len(ran)} executed "
                    f"call{'s' if len(ran) != 1 else ''} had {seen}{more}"
                )
        outcomes = ", ".join(sorted({c.outcome.value for c in counted or named}))
        return False, (
            f"{label}: expected to run, called {_count(len(counted or named))} "
            f"but never executed (outcome: {outcomes})"
        )
    if e.after is None:
        return True, ""
    first = record.first_requested(executed)
    assert first is not None
    predecessors = [c for c in index.named(e.after) if c.outcome in EXECUTED_OUTCOMES]
    if not predecessors:
        return False, f"{label}: expected `{e.after}` to run first, but `{e.after}` never ran"
    if any(ToolRecord.happened_before(p, first) for p in predecessors):
        return True, ""
    return False, (
        f"{label}: expected `{e.after}` to run first, but the first call of `{e.tool}` "
        f"was requested before any result of `{e.after}` was available"
    )


def _check_text(response: str, e: Expectation, label: str) -> tuple[bool, str]:
    """(met, why) from tool markers in the response: presence only; args and after fail loudly."""
    if e.args is not None:
        return False, (
            f"{label}: args cannot be checked without a tool-call record "
            "(the response text carries no arguments)"
        )
    if e.after is not None:
        return False, (
            f"{label}: order cannot be checked without a tool-call record "
            "(the response text carries no order)"
        )
    found = scrape_tool_markers(response, e.tool)
    if e.should_run:
        return (True, "") if found else (False, f"{label}: expected to run, no tool marker for it")
    if not found:
        return True, ""
    return False, f"{label}: expected not to run, the response has a tool marker for it"


GRADERS: list[type[Grader]] = [ToolUsageGrader]
