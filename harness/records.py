"""Plain types every layer shares: the tool-call record, the run record, grade results and
the grader spec (how a grader counts).

Floor 1 of DESIGN.md: this module imports nothing from tracegrade but `errors`.
The record is the ground truth of what an agent did; helpers for name matching and order
live here so graders never re-derive them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, overload

from pydantic import BaseModel, ConfigDict, Field

from .graph_path import NodeRun
from .toolspec import ToolSpec

__all__ = [
    "GradeResult",
    "GraderSpec",
    "Interruption",
    "Outcome",
    "RunRecord",
    "ToolCall",
    "ToolRecord",
    "finalize_calls",
    "finalize_interruptions",
    "map_to_composite",
    "scale_label",
]


class Outcome(StrEnum):
    """How one tool call ended, decided from callbacks and tool-node output, never from text."""

    OK = "ok"
    ERROR = "error"
    NOT_EXECUTED = "not_executed"
    DECLINED = "declined"
    """A person declined it: the node that paused to ask answered the call itself (an error
    ToolMessage after its interrupt was resumed), so the tool never ran."""
    INTERRUPTED = "interrupted"
    HANDOFF = "handoff"
    COMMAND = "command"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of a question run, as the capture layer observed it."""

    seq: int
    """Start sequence within the question run (0-based, in the order tool starts were seen)."""
    name: str
    """The tool name exactly as the model emitted it in its tool call."""
    qualified_id: str
    """`"<agent>:<tool>"`, where agent is the name of the (sub)graph that ran the tool."""
    call_id: str | None
    """The model's tool-call id, when it gave one."""
    arguments: Mapping[str, Any]
    """The arguments, whole. Redaction and truncation happen on export and in judge rendering."""
    outcome: Outcome
    """How the call ended."""
    error_type: str | None = None
    """Exception class name (or "ToolMessageError", "ValidationError"...) when outcome is error."""
    error_message: str | None = None
    """What the raised exception said (its first 200 characters, as the span status carries
    it), when the tool raised; None otherwise."""
    result: Any = None
    """What the tool returned. Kept for code checks; never shown to an LLM judge."""
    agent: str = ""
    """Name of the (sub)graph that ran the tool."""
    depth: int = 0
    """Nesting depth of that agent: 0 for the top-level graph, 1 for a sub-agent, ..."""
    model_turn: int | None = None
    """Ordinal of the model message (of that agent) that requested the call; None if unknown."""
    index_in_turn: int | None = None
    """Position of the call among the tool calls of that model message."""
    span_id: str | None = None
    """Hex span id of the `execute_tool` span."""
    trace_id: str | None = None
    """Hex trace id of the question's trace."""
    start_ns: int = 0
    """Span start, epoch nanoseconds."""
    end_ns: int = 0
    """Span end, epoch nanoseconds (0 when the call never ended)."""
    world: str | None = None
    """What the question's world did to this call (`tools:` overrides: "fault: timeout (call
    1)", "fixture (call 2)", "injected (append) (call 1)"); None when the agent met the real
    tool. What the world did is not what the agent did: reports keep them apart."""

    def matches(self, name: str) -> bool:
        """True when `name` names this call: a name with a colon is a qualified id only;
        a bare name is checked against both the emitted name and the qualified id."""
        if ":" in name:
            return self.qualified_id == name
        return self.name == name or self.qualified_id == name

    @property
    def requested_key(self) -> tuple[int, int, int, int]:
        """Sort key for requested order: (depth-independent) model turn, index, then start."""
        turn = self.model_turn if self.model_turn is not None else 1 << 30
        index = self.index_in_turn if self.index_in_turn is not None else 0
        return (turn, index, self.start_ns, self.seq)


@dataclass(frozen=True, slots=True)
class Interruption:
    """One pause of the graph on LangGraph's `interrupt()`: what it asked, who asked, where it
    fell among the tool calls, and what (if anything) answered it."""

    seq: int
    """Order among the question run's interruptions (0-based)."""
    value: Any
    """The payload passed to `interrupt()`, whole (redacted on export like tool arguments)."""
    node: str
    """The graph node that raised it (`tools` when a tool called `interrupt()`)."""
    agent: str = ""
    """Name of the (sub)graph whose node raised it."""
    depth: int = 0
    interrupt_id: str | None = None
    """LangGraph's id of the interrupt (what a `Command(resume={id: value})` names)."""
    tool: str | None = None
    """The tool that called `interrupt()`, when one did."""
    call_id: str | None = None
    """That tool call's id."""
    calls_before: int = 0
    """How many calls of the record started before it was raised: its position among the
    tool calls (a call that asked and ran again once answered counts after it)."""
    resumed: bool = False
    """True when an answer was given (`Command(resume=...)`)."""
    resume_value: Any = None
    """The answer it was resumed with; None when it was not resumed."""
    span_id: str | None = None
    trace_id: str | None = None
    start_ns: int = 0
    end_ns: int = 0

    def payload(self) -> Mapping[str, Any]:
        """The payload as a mapping for matchers: a mapping as is, anything else as
        `{"value": payload}`."""
        return self.value if isinstance(self.value, Mapping) else {"value": self.value}

    def describe(self) -> str:
        """One line naming it: `approve asked {'question': 'approve refund?'}`."""
        where = f"{self.node} ({self.tool})" if self.tool else self.node
        return f"{where} asked {self.value!r}"[:300]


class ToolRecord(Sequence[ToolCall]):
    """The sealed, de-duplicated tool-call record of one question run (possibly empty).

    An empty record means the agent ran and called nothing. "No record" is represented by
    `None` (and by `tool_calls` missing from a grader's context), never by an empty record.
    """

    __slots__ = (
        "_calls",
        "answer_ns",
        "complete",
        "interruptions",
        "nodes",
        "offered",
        "problems",
        "turn_starts",
    )

    def __init__(
        self,
        calls: Sequence[ToolCall] = (),
        *,
        complete: bool = True,
        problems: Sequence[str] = (),
        interruptions: Sequence[Interruption] = (),
        turn_starts: Sequence[int] = (),
        nodes: Sequence[NodeRun] = (),
        offered: Sequence[ToolSpec] | None = None,
        answer_ns: int | None = None,
    ) -> None:
        self._calls: tuple[ToolCall, ...] = tuple(sorted(calls, key=lambda c: c.seq))
        self.complete = complete
        """False when capture failed somewhere: such a record is never evidence."""
        self.problems: tuple[str, ...] = tuple(problems)
        """What went wrong inside the recorder, when anything did."""
        self.interruptions: tuple[Interruption, ...] = tuple(
            sorted(interruptions, key=lambda i: i.seq)
        )
        """Every `interrupt()` the graph paused on, in the order raised."""
        self.turn_starts: tuple[int, ...] = tuple(turn_starts)
        """When each user turn of a conversation was sent (epoch ns); () for one message."""
        self.nodes: tuple[NodeRun, ...] = tuple(nodes)
        """The path through the graph: every node run, in start order (() when the agent is
        not a LangGraph graph, or the trace did not say)."""
        self.offered: tuple[ToolSpec, ...] | None = None if offered is None else tuple(offered)
        """The tools the agent's models were offered (name, description, argument schema);
        None when unknown (no model call declared its tools), never () for unknown."""
        self.answer_ns: int | None = answer_ns
        """When the final answer was given (the last model turn, of any agent, that requested
        no tool ended), epoch ns; None when unknown."""

    def turn(self, index: int) -> ToolRecord:
        """The calls and interruptions of user turn `index` of a conversation: those that
        started after it was sent and before the next one was."""
        low = self.turn_starts[index] if index < len(self.turn_starts) else 0
        high = self.turn_starts[index + 1] if index + 1 < len(self.turn_starts) else 1 << 64
        return ToolRecord(
            [c for c in self._calls if low <= c.start_ns < high],
            complete=self.complete,
            problems=self.problems,
            interruptions=[i for i in self.interruptions if low <= i.start_ns < high],
            nodes=[n for n in self.nodes if low <= n.start_ns < high],
            offered=self.offered,
        )

    @property
    def pending(self) -> list[Interruption]:
        """Interruptions nobody answered: the run ended waiting on them."""
        return [i for i in self.interruptions if not i.resumed]

    @overload
    def __getitem__(self, index: int) -> ToolCall: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[ToolCall, ...]: ...
    def __getitem__(self, index: int | slice) -> ToolCall | tuple[ToolCall, ...]:
        return self._calls[index]

    def __len__(self) -> int:
        return len(self._calls)

    def __iter__(self) -> Iterator[ToolCall]:
        return iter(self._calls)

    def __repr__(self) -> str:
        return f"ToolRecord({list(self._calls)!r}, complete={self.complete})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ToolRecord):
            return (
                self._calls == other._calls
                and self.complete == other.complete
                and self.interruptions == other.interruptions
                and self.turn_starts == other.turn_starts
                and self.nodes == other.nodes
                and self.offered == other.offered
                and self.answer_ns == other.answer_ns
            )
        return NotImplemented

    def calls_of(self, name: str) -> list[ToolCall]:
        """Calls matching `name` (see `ToolCall.matches`), in start order."""
        return [c for c in self._calls if c.matches(name)]

    def requested_order(self) -> list[ToolCall]:
        """Calls in the order the models requested them: (model turn, index in the message)."""
        return sorted(self._calls, key=lambda c: c.requested_key)

    @staticmethod
    def happened_before(earlier: ToolCall, later: ToolCall) -> bool:
        """True when `earlier`'s result was available before `later` was requested.

        Both requested by model turns of the same agent: `earlier` in a strictly earlier turn.
        Otherwise (calls outside model turns, or of different agents) fall back to span times:
        `earlier` ended before `later` started.
        """
        if (
            earlier.model_turn is not None
            and later.model_turn is not None
            and earlier.agent == later.agent
            and earlier.depth == later.depth
        ):
            return earlier.model_turn < later.model_turn
        return earlier.end_ns != 0 and earlier.end_ns <= later.start_ns

    def first_requested(self, calls: Sequence[ToolCall]) -> ToolCall | None:
        """The first of `calls` in requested order, or None when there are none."""
        return min(calls, key=lambda c: c.requested_key) if calls else None


@dataclass(slots=True)
class RunRecord:
    """What one question run produced, before grading."""

    question_id: str
    response: str = ""
    """The agent's final answer text."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    """The final message list of the run as role/content dicts (best effort)."""
    tool_calls: ToolRecord | None = None
    """The sealed record, or None when no record exists (chat mode, capture failed)."""
    usage: dict[str, Any] = field(default_factory=dict)
    """Token usage summed over model calls, when the models reported it."""
    latency_s: float = 0.0
    error: str | None = None
    """Why the agent run failed (exception text, "timed out after 30s"), None when it did not."""
    error_type: str | None = None
    trace_id: str | None = None
    trial: int = 0
    """Trial index of this run of the question (targets with `repeats`; 0 otherwise)."""
    outcome: str | None = None
    """How the conversation ended when not with an answer: `interrupted` (waiting on an
    `interrupt()` nobody answered), `user_budget` (a simulated user ran out of turns)."""
    outcome_reason: str | None = None
    outcome_expected: bool = False
    """The question said it would end this way (`expected_interrupts.ends_interrupted`)."""

    @property
    def errored(self) -> bool:
        return self.error is not None


def map_to_composite(score: float, min_score: float, max_score: float) -> float:
    """Map a score on its declared scale onto the shared 0–5 composite scale.

    0–5 is the identity path (the number is not touched); anything else is linear.
    """
    if min_score == 0.0 and max_score == 5.0:
        return score
    return (score - min_score) / (max_score - min_score) * 5.0


class GradeResult(BaseModel):
    """One grader's verdict on one response. Build it through `Grader.result()`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    grader_id: str
    """Id of the grader that produced this result."""
    score: float | None
    """The score on the grader's own scale, or None (skip or error)."""
    reason: str
    """Short human-readable reason; for a skip, why it did not apply."""
    error: bool = False
    """True when the grader could not do its job; the question is then degraded."""
    min_score: float = 0.0
    """Declared lower bound of the grader's scale, stored with every score."""
    max_score: float = 5.0
    """Declared upper bound of the grader's scale, stored with every score."""
    raw: Any = None
    """The raw judge answer (or other evidence) kept for inspection; None for most graders."""
    details: dict[str, Any] = {}
    """Grader-specific structured detail (rubric check statuses, unmet expectations...)."""
    identity: dict[str, Any] = {}
    """Who produced it: for judges id, model and template hash."""

    @property
    def skipped(self) -> bool:
        """Not scored because the grader does not apply (excluded from the average silently)."""
        return self.score is None and not self.error

    @property
    def scored(self) -> bool:
        return self.score is not None

    @property
    def mapped_score(self) -> float | None:
        """The score on the 0–5 composite scale, None when not scored."""
        if self.score is None:
            return None
        return map_to_composite(self.score, self.min_score, self.max_score)

    @property
    def scale_label(self) -> str:
        """ "(binary, 0-1)", "(0-1)" or "(0-5)", as the catalog and the result screens print
        it: binary only for a grader that answers pass/fail (`details["binary"]`)."""
        return scale_label(
            self.min_score, self.max_score, binary=self.details.get("binary") is True
        )


def scale_label(min_score: float, max_score: float, *, binary: bool = False) -> str:
    """A declared scale as printed: "(binary, 0-1)" only for a pass/fail grader; a continuous
    0-1 grader (`similarity`, `rubric_judge`) is "(0-1)"."""

    def fmt(x: float) -> str:
        return str(int(x)) if float(x).is_integer() else str(x)

    span = f"{fmt(min_score)}-{fmt(max_score)}"
    return f"(binary, {span})" if binary else f"({span})"


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}".rstrip("0").rstrip(".")


class GraderSpec(BaseModel):
    """How one attached grader counts (seed 003 "How scores combine"), declared here only.

    A config's `graders:` entry, `@grader(...)` and a code grader's keyword arguments, an
    `Attachment`, the run identity and every verdict carry this one frozen value: it is
    validated when it is built (a bad value raises pydantic's `ValidationError`, a
    `ValueError`), and the pass rule and its wording live on it, so no two places can read a
    grader's bar differently.
    """

    model_config = ConfigDict(
        frozen=True, extra="forbid", strict=True, use_attribute_docstrings=True
    )

    weight: float = Field(default=1.0, ge=0.0, allow_inf_nan=False)
    """Weight in the objective (the weighted mean of the scored graders); default 1."""
    must_pass: bool = False
    """A gate: when it fails, the question's objective is 0 and the target's gate fails."""
    threshold: float = Field(default=0.0, allow_inf_nan=False)
    """Passing bar of a scalar grader on its own scale (default 0: any score passes). A binary
    grader passes only at its max, whatever this says."""
    samples: int = Field(default=1, ge=1)
    """Times the grader runs per question; the scores are averaged, their spread reported."""

    @property
    def threshold_set(self) -> bool:
        """True when the threshold was written, not defaulted (a must-pass scalar grader needs
        one)."""
        return "threshold" in self.model_fields_set

    def passes(self, score: float, *, max_score: float, binary: bool) -> bool:
        """The pass rule: a binary grader passes only at its max, a scalar one at the
        threshold."""
        return score >= max_score if binary else score >= self.threshold

    def pass_bar(self, *, min_score: float, max_score: float, binary: bool) -> str:
        """The pass rule in words: "= 1" (binary: only its max passes), ">= 3" (scalar: its
        threshold), ">= 0 (any score)" (a threshold at the bottom of the scale)."""
        if binary:
            return f"= {_number(max_score)}"
        if self.threshold <= min_score:
            return f">= {_number(self.threshold)} (any score)"
        return f">= {_number(self.threshold)}"

    def gate_problem(
        self, *, grader_id: str, min_score: float, max_score: float, binary: bool
    ) -> tuple[str, str, str] | None:
        """(message, offending key, hint) when this spec makes a gate that cannot decide on a
        grader of that scale: a threshold above the top (nothing passes), or must-pass on a
        scalar grader whose threshold is at the bottom (everything passes). None when sound."""
        if binary:
            return None
        lo, hi = float(min_score), float(max_score)
        if self.threshold > hi:
            return (
                f"threshold {self.threshold:g} of {grader_id!r} is above the top of its "
                f"{lo:g}-{hi:g} scale: no score could pass",
                "threshold",
                f"threshold: {hi:g} (its best score)",
            )
        if self.must_pass and self.threshold <= lo:
            written = "threshold" if self.threshold_set else "no threshold"
            return (
                f"must_pass on {grader_id!r} (a scalar grader, {lo:g}-{hi:g}) with {written} "
                f"{self.threshold:g}: every score passes, so this gate can never fail; set a "
                "threshold",
                "must_pass",
                f"threshold: {hi:g} (its best score)",
            )
        return None


def finalize_calls(calls: Iterable[ToolCall]) -> list[ToolCall]:
    """Calls in start order, a re-run of the same (agent, call id) replacing the earlier run
    (last outcome wins), renumbered 0..n-1."""
    ordered = sorted(calls, key=lambda c: (c.seq, c.start_ns))
    kept: dict[Any, ToolCall] = {}
    for index, c in enumerate(ordered):
        key = (c.agent, c.call_id) if c.call_id else index
        if key in kept:
            # The re-run takes the first run's place in start order: it answers the same request.
            first = kept[key]
            kept[key] = replace(c, seq=first.seq)
        else:
            kept[key] = c
    final = sorted(kept.values(), key=lambda c: c.seq)
    return [c if c.seq == i else replace(c, seq=i) for i, c in enumerate(final)]


def finalize_interruptions(
    interruptions: Iterable[Interruption], calls: Sequence[ToolCall]
) -> list[Interruption]:
    """Interruptions in the order raised (one per interrupt id: a subgraph's interrupt seen
    again by its parent graph is the same one), numbered 0..n-1, each placed among the
    finalized `calls` by start time. Shared by the recorder and the trace-file reader."""
    kept: dict[Any, Interruption] = {}
    for index, i in enumerate(sorted(interruptions, key=lambda i: (i.start_ns, i.seq))):
        key = i.interrupt_id or index
        first = kept.get(key)
        if first is None:
            kept[key] = i
        elif i.resumed and not first.resumed:
            kept[key] = replace(first, resumed=True, resume_value=i.resume_value, end_ns=i.end_ns)
    out = []
    for seq, i in enumerate(kept.values()):
        before = sum(1 for c in calls if c.start_ns < i.start_ns)
        out.append(replace(i, seq=seq, calls_before=before))
    return out
