"""`trajectory_grader`: the calls an agent executed, checked against a question's `trajectory`.

`expected_tools` (tool_usage_grader) asserts presence, scalar arguments and `after`; a
`trajectory` asserts the shape of the whole run: a match mode over the calls that executed,
argument matchers, forbidden tools, an allow-list, counts and a cap. The vocabulary and its
static checks are in `tracegrade.inputs.blocks.trajectory`, the matchers in `matchers`, the optimal
assignment in `matching`.

Which calls count (from the record's outcome, never from text; as tool_usage_grader counts):
- the modes, `count` and `max_calls` read the calls that executed (ok, error, command,
  handoff), sub-agent calls included;
- `forbid` and `only` read every call that started (also interrupted and cancelled ones: they
  may already have had side effects).

Order is the order calls were requested: start order, except that the calls one model message
requested together (parallel calls) have no order among themselves: in `strict` and
`subsequence` they match the expected calls in any order (the order a model lists parallel calls
in carries no meaning), while the order between messages still counts.

Score 0–1: the share of constraints met (each expected call in every mode but `subset`; "no
other calls" in `strict`, `unordered` and `subset`; each forbidden tool; each count bound;
`only`; `max_calls`). The grader is binary for the gate: it passes only at 1.0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...inputs.blocks.trajectory import (
    DEFAULT_ARGS_POLICY,
    DEFAULT_MODE,
    INTERRUPT_STEP,
    trajectory_problems,
)
from ...records import GradeResult, Interruption, Outcome, ToolCall, ToolRecord
from ..base import Grader, GraderServices
from ..tool_usage import ATTEMPTED_OUTCOMES, EXECUTED_OUTCOMES, FALLBACK_MARKER
from .matchers import ArgsMatcher, compile_args, shown
from .matching import align_in_groups, max_matching

__all__ = [
    "GRADERS",
    "ExpectedCall",
    "Trajectory",
    "TrajectoryError",
    "TrajectoryGrader",
    "compile_trajectory",
    "record_in",
    "request_order",
]

_RECORD_NOTE = "from the agent tool-call record"
_ORDERED = frozenset({"strict", "subsequence"})
_NOTHING_ELSE = frozenset({"strict", "unordered", "subset"})
_EXPECTED_REQUIRED = frozenset({"strict", "unordered", "superset", "subsequence"})


class TrajectoryError(ValueError):
    """A `trajectory` block that is not well formed (a setup failure)."""


@dataclass(frozen=True, slots=True)
class ExpectedCall:
    """One compiled entry of `trajectory.calls`."""

    index: int
    """Its position in `calls` (reasons name it `calls[i]`)."""
    tool: str
    """Function name, or a qualified id `"<agent>:<tool>"` when it contains a colon."""
    args: ArgsMatcher | None
    """The argument matchers under the `args` policy; None when arguments are not compared."""
    outcome: str | None = None
    """The executed outcome the call must have had (`ok`, `error`...); None: any."""

    @property
    def label(self) -> str:
        if self.tool == INTERRUPT_STEP:
            return f"calls[{self.index}] interrupt"
        return f"calls[{self.index}] `{self.tool}`"

    def accepts(self, call: ToolCall) -> bool:
        """Whether `call` (already known to be named `tool`) fits this expectation."""
        if self.outcome is not None and call.outcome.value != self.outcome:
            return False
        return self.args is None or self.args.test(call.arguments)

    def differences(self, call: ToolCall) -> list[str]:
        """Why `call` does not fit: its outcome, then each argument that differed."""
        out = []
        if self.outcome is not None and call.outcome.value != self.outcome:
            out.append(f"outcome expected {self.outcome}, got {call.outcome.value}")
        if self.args is not None:
            out += self.args.explain(call.arguments)
        return out


@dataclass(frozen=True, slots=True)
class Trajectory:
    """A compiled `trajectory` block."""

    mode: str
    """strict | unordered | subset | superset | subsequence."""
    calls: tuple[ExpectedCall, ...]
    forbid: tuple[str, ...]
    only: tuple[str, ...] | None
    count: tuple[tuple[str, int | None, int | None], ...]
    """(tool, min, max) per counted tool."""
    max_calls: int | None


def compile_trajectory(raw: Any) -> Trajectory:
    """Check and compile a `trajectory` block; raise `TrajectoryError` naming the first problem."""
    return _compile(raw)


def _compile(raw: Any) -> Trajectory:
    problems = trajectory_problems(raw)
    if problems:
        pointer, message = problems[0]
        where = "trajectory" + pointer.replace("/", ".") if pointer else "trajectory"
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        raise TrajectoryError(f"{where}: {message}{more}")
    policy = raw.get("args", DEFAULT_ARGS_POLICY)
    calls = tuple(
        ExpectedCall(index=i, tool=INTERRUPT_STEP, args=compile_args(entry["interrupt"], "subset"))
        if "interrupt" in entry
        else ExpectedCall(
            index=i,
            tool=entry["tool"],
            args=compile_args(entry.get("args"), policy),
            outcome=entry.get("outcome"),
        )
        for i, entry in enumerate(raw.get("calls", []))
    )
    count = tuple((tool, b.get("min"), b.get("max")) for tool, b in raw.get("count", {}).items())
    return Trajectory(
        mode=raw.get("match", DEFAULT_MODE),
        calls=calls,
        forbid=tuple(raw.get("forbid", ())),
        only=tuple(raw["only"]) if "only" in raw else None,
        count=count,
        max_calls=raw.get("max_calls"),
    )


def request_order(record: Sequence[ToolCall]) -> list[ToolCall]:
    """The record's calls in the order they were requested: start order, with the parallel
    calls of one model message in the order the model listed them."""
    first_seq: dict[tuple[str, int, int], int] = {}
    for call in record:
        if call.model_turn is not None:
            group = (call.agent, call.depth, call.model_turn)
            if group not in first_seq or call.seq < first_seq[group]:
                first_seq[group] = call.seq

    def key(call: ToolCall) -> tuple[int, int, int]:
        if call.model_turn is None:
            return (call.seq, 0, call.seq)
        group = first_seq[(call.agent, call.depth, call.model_turn)]
        return (group, call.index_in_turn or 0, call.seq)

    return sorted(record, key=key)


def _messages(calls: Sequence[ToolCall]) -> list[int]:
    """Ordinals of the model messages that requested `calls` (in request order, so a message's
    calls are adjacent); a call with no known model turn is a message of its own."""
    out: list[int] = []
    previous: tuple[str, int, int] | None = None
    for call in calls:
        key = None if call.model_turn is None else (call.agent, call.depth, call.model_turn)
        same = key is not None and key == previous
        out.append(out[-1] if same else (out[-1] + 1 if out else 0))
        previous = key
    return out


def _times(n: int) -> str:
    return f"{n} time" if n == 1 else f"{n} times"


def _as_step(interruption: Interruption) -> ToolCall:
    """An interruption as a pseudo-call of the step sequence: named `interrupt()`, its payload
    as the arguments the step's matchers read."""
    return ToolCall(
        seq=-1,
        name=INTERRUPT_STEP,
        qualified_id=INTERRUPT_STEP,
        call_id=interruption.interrupt_id,
        arguments=interruption.payload(),
        outcome=Outcome.INTERRUPTED,
        agent=interruption.agent,
        depth=interruption.depth,
        start_ns=interruption.start_ns,
    )


def _with_interruptions(executed: list[ToolCall], record: ToolRecord) -> list[ToolCall]:
    """The executed calls with each interruption placed after the calls that started before
    it was raised (request order kept otherwise)."""
    steps = list(executed)
    for interruption in sorted(record.interruptions, key=lambda i: i.start_ns, reverse=True):
        at = max(
            (j + 1 for j, c in enumerate(executed) if c.start_ns < interruption.start_ns),
            default=0,
        )
        steps.insert(at, _as_step(interruption))
    return steps


class _Calls:
    """The record in request order, numbered (`#1`...), with the executed calls by name. When
    the trajectory has interrupt steps, `steps` interleaves the interruptions with the calls."""

    __slots__ = ("executed", "index", "message_of", "number", "ordered", "started", "steps")

    def __init__(self, record: ToolRecord, *, interruptions: bool = False) -> None:
        self.ordered = request_order(record)
        self.executed = [c for c in self.ordered if c.outcome in EXECUTED_OUTCOMES]
        self.started = [c for c in self.ordered if c.outcome in ATTEMPTED_OUTCOMES]
        self.steps = _with_interruptions(self.executed, record) if interruptions else self.executed
        numbered = self.ordered
        if interruptions:
            extra = [c for c in self.ordered if c.outcome not in EXECUTED_OUTCOMES]
            numbered = self.steps + extra
        self.number = {id(c): n for n, c in enumerate(numbered, 1)}
        self.index = _NameIndex(self.steps)
        self.message_of = _messages(self.steps)
        """For each step, the ordinal of the model message that requested it (calls of one
        message, parallel calls, share it: no order among them)."""

    def tag(self, call: ToolCall) -> str:
        if call.name == INTERRUPT_STEP:
            return f"#{self.number[id(call)]} interrupt {shown(dict(call.arguments))}"
        return f"#{self.number[id(call)]} `{call.name}`"

    def tags(self, calls: Sequence[ToolCall], limit: int = 5) -> str:
        shown = ", ".join(self.tag(c) for c in calls[:limit])
        return shown + (f" (+{len(calls) - limit} more)" if len(calls) > limit else "")


class _NameIndex:
    """Positions of the executed calls by emitted name and by qualified id, built once per
    grading: the same answers as `ToolCall.matches`, without a scan per expectation."""

    __slots__ = ("by_name", "by_qualified")

    def __init__(self, calls: Sequence[ToolCall]) -> None:
        self.by_name: dict[str, list[int]] = {}
        self.by_qualified: dict[str, list[int]] = {}
        for j, c in enumerate(calls):
            self.by_name.setdefault(c.name, []).append(j)
            self.by_qualified.setdefault(c.qualified_id, []).append(j)

    def named(self, tool: str) -> list[int]:
        """Positions of the calls `tool` names (see `ToolCall.matches`), ascending."""
        if ":" in tool:
            return self.by_qualified.get(tool, [])
        by_name = self.by_name.get(tool, [])
        by_qualified = self.by_qualified.get(tool)  # a qualified id recorded without an agent
        return sorted(set(by_name) | set(by_qualified)) if by_qualified else by_name


def record_in(grader: Grader, context: Mapping[str, Any], why: str) -> ToolRecord | GradeResult:
    """The sealed record a record-only grader reads, or the result it gives without one: 0.0
    when no record exists (`why` says it is never read from text), an error when the record is
    incomplete or not a record."""
    if "tool_calls" not in context:
        return grader.result(0.0, f"{FALLBACK_MARKER}: {why}", details={"source": "response_text"})
    record = context["tool_calls"]
    if isinstance(record, list | tuple) and all(isinstance(c, ToolCall) for c in record):
        record = ToolRecord(record)
    if not isinstance(record, ToolRecord):
        return grader.result(
            None, f"tool_calls in context is not a tool-call record ({type(record)!r})", True
        )
    if not record.complete:
        problems = "; ".join(record.problems) or "capture failed"
        return grader.result(
            None, f"tool-call record incomplete, so it is not evidence: {problems}", True
        )
    return record


class TrajectoryGrader(Grader):
    """Checks the calls the agent executed against the question's `trajectory`."""

    id = "trajectory_grader"
    label = "Trajectory"
    description = (
        "Deterministic: did the calls the agent executed match the expected trajectory (match "
        "mode, argument matchers, forbidden tools, allow-list, counts, a cap)? Read from the "
        "tool-call record; partial credit per constraint, passes only when all hold."
    )
    observes_actions = True
    binary = True
    min_score = 0.0
    max_score = 1.0
    needs = "`trajectory` (required, else skips)"
    owns = ("trajectory",)
    evidence = ("tool_calls",)

    def __init__(self, *, services: GraderServices | None = None) -> None:
        # No options: an unknown option in a config is an error, not silently ignored.
        super().__init__(services=services)

    def grade(self, input: str, response: str, context: Mapping[str, Any]) -> GradeResult:
        raw = context.get("trajectory")
        if raw is None:
            return self.result(None, "no trajectory in context, skipping")
        try:
            spec = compile_trajectory(raw)
        except TrajectoryError as exc:
            return self.result(0.0, f"setup failure: {exc}")
        record = record_in(
            self,
            context,
            "a trajectory is answered only from a tool-call record "
            "(the response text carries no calls, arguments or order)",
        )
        if isinstance(record, GradeResult):
            return record
        steps = any(e.tool == INTERRUPT_STEP for e in spec.calls)
        return self._grade_record(spec, _Calls(record, interruptions=steps))

    def _grade_record(self, spec: Trajectory, calls: _Calls) -> GradeResult:
        executed = calls.steps
        index = calls.index
        edges = [[j for j in index.named(e.tool) if e.accepts(executed[j])] for e in spec.calls]
        if spec.mode in _ORDERED:
            assign = align_in_groups(edges, calls.message_of)
        else:
            assign = max_matching(edges, len(executed))
        taken = {j: i for i, j in enumerate(assign) if j is not None}

        checks: list[tuple[str, bool, str]] = []  # (constraint, met, why)
        if spec.mode in _EXPECTED_REQUIRED:
            for e, j in zip(spec.calls, assign, strict=True):
                why = "" if j is not None else self._unmet_call(spec, e, edges, assign, calls)
                checks.append((e.label, j is not None, why))
        if spec.mode in _NOTHING_ELSE:
            extra = [c for j, c in enumerate(executed) if j not in taken]
            why = ""
            if extra:
                verb = "is" if len(extra) == 1 else "are"
                where = (
                    "not in the expected sequence"
                    if spec.mode == "strict"
                    else "not matched to an expected call"
                )
                why = f"no other calls ({spec.mode}): {calls.tags(extra)} {verb} {where}"
            checks.append(("no other calls", not extra, why))
        for tool in spec.forbid:
            ran = [c for c in calls.started if c.matches(tool)]
            why = (
                f"`{tool}`: forbidden, started {_times(len(ran))} ({calls.tags(ran)})"
                if ran
                else ""
            )
            checks.append((f"forbid `{tool}`", not ran, why))
        for tool, low, high in spec.count:
            n = sum(1 for c in executed if c.matches(tool))
            if low is not None:
                why = (
                    ""
                    if n >= low
                    else f"`{tool}`: expected to run at least {_times(low)}, ran {_times(n)}"
                )
                checks.append((f"count `{tool}` min {low}", n >= low, why))
            if high is not None:
                ran = [c for c in executed if c.matches(tool)]
                why = (
                    ""
                    if n <= high
                    else f"`{tool}`: expected to run at most {_times(high)}, ran {_times(n)} "
                    f"({calls.tags(ran)})"
                )
                checks.append((f"count `{tool}` max {high}", n <= high, why))
        if spec.only is not None:
            allowed = spec.only
            outside = [c for c in calls.started if not any(c.matches(t) for t in allowed)]
            why = ""
            if outside:
                names = ", ".join(f"`{t}`" for t in allowed)
                may = f"only {names} may run" if allowed else "no tool may run"
                why = f"{may}, but {calls.tags(outside)} started"
            checks.append(("only", not outside, why))
        if spec.max_calls is not None:
            n = len(executed)
            ok = n <= spec.max_calls
            why = "" if ok else f"expected at most {spec.max_calls} calls, {n} executed"
            checks.append((f"max_calls {spec.max_calls}", ok, why))
        return self._verdict(spec, checks, assign, calls)

    def _unmet_call(
        self,
        spec: Trajectory,
        e: ExpectedCall,
        edges: list[list[int]],
        assign: list[int | None],
        calls: _Calls,
    ) -> str:
        """Why expected call `e` was not met, naming the nearest actual call."""
        executed = calls.steps
        fitting = edges[e.index]
        if fitting:  # calls fit it, but each is counted for another expectation or out of order
            owners = {j: i for i, j in enumerate(assign) if j is not None}
            first = executed[fitting[0]]
            if spec.mode in _ORDERED:
                return (
                    f"{e.label}: expected in this order; the call that fits, {calls.tag(first)}, "
                    "ran out of order"
                    + (
                        f" (it is counted for calls[{owners[fitting[0]]}])"
                        if fitting[0] in owners
                        else ""
                    )
                )
            holders = sorted({owners[j] for j in fitting if j in owners})
            return (
                f"{e.label}: expected to run; the {'call' if len(fitting) == 1 else 'calls'} "
                f"that fit ({calls.tags([executed[j] for j in fitting])}) "
                f"{'is' if len(fitting) == 1 else 'are'} counted for "
                + ", ".join(f"calls[{i}]" for i in holders)
            )
        if e.tool == INTERRUPT_STEP and not calls.index.named(e.tool):
            return f"{e.label}: expected the run to stop and ask, it never did"
        if not any(c.matches(e.tool) for c in executed):
            others = [c for c in calls.ordered if c.matches(e.tool)]
            if others:
                outcomes = ", ".join(sorted({c.outcome.value for c in others}))
                return (
                    f"{e.label}: expected to run, called {_times(len(others))} but never "
                    f"executed (outcome: {outcomes})"
                )
            return f"{e.label}: expected to run, never called"
        taken = {j for j in assign if j is not None}
        named_at = calls.index.named(e.tool)
        ranked = sorted(
            named_at,
            key=lambda j: (len(e.differences(executed[j])), j in taken, j),
        )
        nearest = executed[ranked[0]]
        diffs = e.differences(nearest)
        return f"{e.label}: expected to run, nearest call {calls.tag(nearest)}: " + "; ".join(diffs)

    def _verdict(
        self,
        spec: Trajectory,
        checks: list[tuple[str, bool, str]],
        assign: list[int | None],
        calls: _Calls,
    ) -> GradeResult:
        total = len(checks)
        met = sum(1 for _, ok, _ in checks if ok)
        matched = sum(1 for j in assign if j is not None)
        n_executed = len(calls.steps)
        note = f"{spec.mode}; {_RECORD_NOTE}"
        plural = "s" if total != 1 else ""
        if met == total:
            reason = f"all {total} trajectory constraint{plural} met ({note})"
        else:
            reason = f"{met} of {total} trajectory constraint{plural} met ({note}); broken: " + (
                "; ".join(why for _, ok, why in checks if not ok)
            )
        details = {
            "source": "record",
            "mode": spec.mode,
            "precision": matched / n_executed if n_executed else None,
            "recall": matched / len(spec.calls) if spec.calls else None,
            "executed_calls": n_executed,
            "constraints": [{"constraint": c, "met": ok, "why": why} for c, ok, why in checks],
            "assignment": [
                {
                    "expected": e.label,
                    "call": calls.number[id(calls.steps[j])] if j is not None else None,
                }
                for e, j in zip(spec.calls, assign, strict=True)
            ],
        }
        return self.result(met / total if total else 1.0, reason, details=details)


GRADERS: list[type[Grader]] = [TrajectoryGrader]
