"""Conversations read from traces: a support conversation spans many traces, one per user turn,
tied by a conversation id (OpenInference's `session.id`, the GenAI conventions'
`gen_ai.conversation.id`, or LangGraph's `thread_id` in OpenInference's metadata).

`ConversationBook` holds the traces that carry such an id until their conversation closes (at
the end of an archive, or after a quiet period when live), then gives the conversation back as
one `AgentTrace`: its turns in start order, each turn's calls marked by `turn_starts` (as a
`turns:` question run by tracegrade records them), its first user message to pair it with a
question (`turns:` questions open with their first turn), its last answer as the answer. It is
graded per turn and as a whole, as a run's conversation is. A trace without an id passes
through at once. Bounded: at most `max_open` conversations and `max_turns` turns each are held;
past either, traces are graded alone, counted and reported.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from ..graph_path import NodeRun
from ..records import Interruption, ToolCall, ToolRecord
from .dialects import AgentTrace

__all__ = ["ConversationBook", "merge_conversation"]


def merge_conversation(traces: list[AgentTrace]) -> AgentTrace:
    """One conversation of several traces (any order) as one trace of several turns."""
    turns = sorted(traces, key=lambda t: (t.start_ns, t.trace_id))
    if len(turns) == 1:
        return turns[0]
    calls: list[ToolCall] = []
    interruptions: list[Interruption] = []
    nodes: list[NodeRun] = []
    problems: list[str] = []
    offset_seq = offset_turn = 0
    seen: set[tuple[str | None, str]] = set()
    for number, trace in enumerate(turns, 1):
        record = trace.record
        for call in record:
            call_id = call.call_id
            # the same model call id in a later trace is a new call, not a re-run of the earlier
            # one (which the record's de-duplication would fold away): told apart by its turn
            if call_id and (call.agent, call_id) in seen:
                call_id = f"{call_id}@turn{number}"
            if call_id:
                seen.add((call.agent, call_id))
            calls.append(
                dataclasses.replace(
                    call,
                    seq=call.seq + offset_seq,
                    call_id=call_id,
                    model_turn=None if call.model_turn is None else call.model_turn + offset_turn,
                )
            )
        offset_seq += max((c.seq for c in record), default=-1) + 1
        offset_turn += max((c.model_turn or 0 for c in record), default=0)
        interruptions.extend(record.interruptions)
        nodes.extend(record.nodes)
        problems.extend(record.problems)
    offered = next((t.record.offered for t in reversed(turns) if t.record.offered), None)
    errored = next((t for t in turns if t.error), None)
    first, last = turns[0], turns[-1]
    record = ToolRecord(
        calls,
        complete=all(t.record.complete for t in turns),
        problems=problems,
        interruptions=interruptions,
        turn_starts=[t.start_ns for t in turns],
        nodes=nodes,
        offered=offered,
        answer_ns=last.record.answer_ns,
    )
    return AgentTrace(
        trace_id=first.trace_id,
        dialect=first.dialect,
        record=record,
        question_id=next((t.question_id for t in turns if t.question_id), None),
        conversation_id=first.conversation_id,
        user_message=first.user_message,
        answer=last.answer,
        error=errored.error if errored else None,
        error_type=errored.error_type if errored else None,
        start_ns=first.start_ns,
        end_ns=max(t.end_ns for t in turns),
        span_count=sum(t.span_count for t in turns),
        turns=tuple((t.user_message or "", t.answer) for t in turns),
        # every turn's model calls; unknown only when no turn's spans counted tokens
        model_calls=None
        if all(t.model_calls is None for t in turns)
        else [c for t in turns for c in t.model_calls or ()],
        root_span_id=first.root_span_id,
    )


@dataclass(slots=True)
class _Open:
    traces: list[AgentTrace] = field(default_factory=list)
    seen: float = 0.0


@dataclass(slots=True)
class ConversationBook:
    """Open conversations by id, closed at the end of the traces or after `quiet_s`."""

    quiet_s: float = 30.0
    max_open: int = 10_000
    max_turns: int = 200
    clock: Callable[[], float] = time.monotonic
    counts: dict[str, int] = field(default_factory=dict)
    _open: dict[str, _Open] = field(default_factory=dict)
    _holding: set[str] = field(default_factory=set)
    members: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """First trace id -> every trace id of the conversations closed lately (the receiver
    takes them, `take_members`); bounded by `max_open`."""

    def _count(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + n

    def add(self, trace: AgentTrace) -> list[AgentTrace]:
        """Hold a trace of a conversation; what is to be graded now: the trace itself when it
        has no conversation id or a bound is reached (counted), else nothing."""
        key = trace.conversation_id
        if key is None:
            return [trace]
        held = self._open.get(key)
        if held is None:
            if len(self._open) >= self.max_open:
                self._count("conversations_over_cap")
                return [trace]
            held = self._open[key] = _Open()
        if len(held.traces) >= self.max_turns:
            self._count("turns_over_cap")
            return [trace]
        held.traces.append(trace)
        self._holding.add(trace.trace_id)
        held.seen = self.clock()
        return []

    def take_members(self, trace_id: str) -> tuple[str, ...]:
        """Every trace id of the conversation graded as trace `trace_id` (its first), once."""
        return self.members.pop(trace_id, (trace_id,))

    def holds(self, trace_id: str) -> bool:
        """Whether trace `trace_id` is held in an open conversation."""
        return trace_id in self._holding

    def close(self, *, force: bool = False) -> list[AgentTrace]:
        """The conversations quiet for `quiet_s` (every one when `force`), merged."""
        now = self.clock()
        done = [k for k, c in self._open.items() if force or now - c.seen >= self.quiet_s]
        closed = []
        for key in done:
            traces = self._open.pop(key).traces
            self._holding.difference_update(t.trace_id for t in traces)
            if len(traces) > 1:
                if len(self.members) >= self.max_open:  # nobody took them: forget the oldest
                    self.members.pop(next(iter(self.members)))
                first = min(traces, key=lambda t: (t.start_ns, t.trace_id))
                self.members[first.trace_id] = tuple(t.trace_id for t in traces)
            if len(traces) > 1:
                self._count("conversations")
                self._count("conversation_turns", len(traces))
            closed.append(merge_conversation(traces))
        return closed

    def stream(self, traces: Iterable[AgentTrace]) -> Iterator[AgentTrace]:
        """An archive's traces with its conversations merged: the traces without an id as they
        come, each conversation once the archive ends."""
        for trace in traces:
            yield from self.add(trace)
        yield from self.close(force=True)

    @property
    def held(self) -> int:
        return len(self._open)

    def notes(self) -> list[str]:
        notes = []
        if self.counts.get("conversations"):
            notes.append(
                f"{self.counts['conversations']} conversation(s) of "
                f"{self.counts['conversation_turns']} trace(s) graded whole and per turn"
            )
        if self.counts.get("conversations_over_cap"):
            notes.append(
                f"{self.counts['conversations_over_cap']} trace(s) graded alone: more than "
                f"{self.max_open} conversations were open"
            )
        if self.counts.get("turns_over_cap"):
            notes.append(
                f"{self.counts['turns_over_cap']} trace(s) graded alone: their conversation "
                f"already held {self.max_turns} turns"
            )
        return notes
