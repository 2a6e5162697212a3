"""Spans arriving live, assembled into whole traces, in bounded memory.

A trace is complete when its root span (the one without a parent) has arrived, which an
OpenTelemetry SDK exports only once it ended, and no span of it has arrived for a quiet period.
Until then its spans are held, under three bounds, each counted when it bites:

- `max_traces` traces and `max_spans` spans held at once (complete traces waiting to be graded
  included): a span that would pass either is refused (the sender hears it as a partial
  success), and the trace it belongs to is dropped whole, never graded on what was left of it;
- `max_spans_per_trace`: a trace that grows past it is dropped whole;
- `timeout_s`: a trace whose root has not arrived that long after its first span is dropped.

Sampling is decided per trace id (`sampled`): every span of a trace gets the same answer,
whichever request carries it and however often the receiver restarts. A span that arrives for
a trace already graded or dropped is counted as late and kept out.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..archive import MAX_SPANS_PER_TRACE
from ..dialects import dialect_of
from ..spans import Span

__all__ = ["Assembler", "Limits", "sampled"]

_REMEMBERED = 100_000
"""How many finished trace ids are remembered, to tell a late span from a new trace."""


def sampled(trace_id: str, rate: float) -> bool:
    """Whether the trace `trace_id` (hex) is graded at sampling `rate` (0..1): a hash of the
    id, so the answer is the same for every span, request and process."""
    if rate >= 1.0:
        return True
    if rate <= 0.0:
        return False
    digest = hashlib.blake2b(trace_id.lower().encode("ascii", "replace"), digest_size=8).digest()
    return int.from_bytes(digest, "big") < int(rate * 2**64)


@dataclass(slots=True)
class Limits:
    max_traces: int = 10_000
    max_spans: int = 1_000_000
    max_bytes: int = 512 * 2**20
    """The size of the spans held at once (their names and attribute values, estimated): a
    count alone let 40 spans of 20 MB each take a gigabyte."""
    max_spans_per_trace: int = MAX_SPANS_PER_TRACE
    quiet_s: float = 5.0
    timeout_s: float = 300.0
    sample: float = 1.0


@dataclass(slots=True)
class _Held:
    spans: list[Span]
    first_s: float
    last_s: float
    root: bool = False
    size: int = 0


def span_size(span: Span) -> int:
    """What a span holds, in characters: its name and its attributes' keys and values (a
    string by its length, a list by its items', anything else a few bytes)."""
    size = 64 + len(span.name)
    for key, value in span.attributes.items():
        size += len(key)
        if isinstance(value, str):
            size += len(value)
        elif isinstance(value, list | tuple):
            size += sum(len(v) if isinstance(v, str) else 8 for v in value)
        else:
            size += 8
    return size


@dataclass(slots=True)
class Assembler:
    """Holds the spans of unfinished traces; hands out each trace once it is complete."""

    limits: Limits = field(default_factory=Limits)
    clock: Callable[[], float] = time.monotonic
    counts: Counter[str] = field(default_factory=Counter)
    held: dict[str, _Held] = field(default_factory=dict)
    ready: deque[tuple[str, list[Span]]] = field(default_factory=deque)
    spans_held: int = 0
    """Spans held, in unfinished traces and in complete ones waiting to be graded."""
    bytes_held: int = 0
    """Their size (`span_size`), held under `limits.max_bytes`."""
    _ready_size: dict[str, int] = field(default_factory=dict)
    finished: OrderedDict[str, bool] = field(default_factory=OrderedDict)
    """Trace ids finished lately: True graded (or handed out to be), False dropped."""
    dropped_agent_traces: list[str] = field(default_factory=list)
    """The ids of dropped traces that held agent spans (the first hundred)."""

    def add(self, spans: Iterable[Span]) -> int:
        """Take the spans of one request; returns how many were refused for the bounds."""
        limits, now, refused = self.limits, self.clock(), 0
        counts = self.counts
        for span in spans:
            tid = span.trace_id
            counts["spans_received"] += 1
            if not sampled(tid, limits.sample):
                counts["spans_sampled_out"] += 1
                if not span.parent_id:
                    counts["traces_sampled_out"] += 1
                continue
            graded = self.finished.get(tid)
            if graded is not None:  # its trace was graded (a late span) or dropped already
                counts["spans_late" if graded else "spans_dropped"] += 1
                refused += not graded
                continue
            held = self.held.get(tid)
            size = span_size(span)
            over = self.spans_held >= limits.max_spans or (
                self.bytes_held + size > limits.max_bytes
            )
            if held is None:
                if len(self.held) + len(self.ready) >= limits.max_traces or over:
                    refused += 1
                    self._drop(tid, [span], "cap")
                    continue
                held = self.held[tid] = _Held([], now, now)
            elif over:
                refused += 1
                self._drop(tid, [*self._release(tid), span], "cap")
                continue
            elif len(held.spans) >= limits.max_spans_per_trace:
                refused += 1
                self._drop(tid, [*self._release(tid), span], "too_large")
                continue
            held.spans.append(span)
            held.last_s = now
            held.size += size
            self.spans_held += 1
            self.bytes_held += size
            if not span.parent_id:
                held.root = True
        return refused

    def _release(self, tid: str) -> list[Span]:
        held = self.held.pop(tid)
        self.spans_held -= len(held.spans)
        self.bytes_held -= held.size
        return held.spans

    def _finish(self, tid: str, graded: bool = True) -> None:
        self.finished[tid] = graded
        if len(self.finished) > _REMEMBERED:
            self.finished.popitem(last=False)

    def _drop(self, tid: str, spans: list[Span], why: str) -> None:
        """A trace left ungraded: counted by why, and as an agent trace when it held agent
        spans (those make a verdict incomplete)."""
        self._finish(tid, graded=False)
        self.counts[f"traces_dropped_{why}"] += 1
        self.counts["spans_dropped"] += len(spans)
        if dialect_of(spans) is not None:
            self.counts["agent_traces_dropped"] += 1
            self.counts["agent_spans_dropped"] += len(spans)
            if len(self.dropped_agent_traces) < 100:
                self.dropped_agent_traces.append(tid)

    def collect(self, *, force: bool = False) -> int:
        """Move the complete traces to `ready` (all whose root arrived, with `force`) and drop
        those past the timeout; returns how many became ready."""
        now, limits, moved = self.clock(), self.limits, 0
        for tid in [t for t, h in self.held.items() if self._due(h, now, force)]:
            held = self.held.pop(tid)
            self._finish(tid)
            self.ready.append((tid, held.spans))
            self._ready_size[tid] = held.size
            moved += 1
        if not force:
            for tid in [
                t
                for t, h in self.held.items()
                if not h.root and now - h.first_s >= limits.timeout_s
            ]:
                self._drop(tid, self._release(tid), "timeout")
        return moved

    def _due(self, held: _Held, now: float, force: bool) -> bool:
        return held.root and (force or now - held.last_s >= self.limits.quiet_s)

    def pop_ready(self) -> tuple[str, list[Span]] | None:
        """The next complete trace to grade (its spans stop counting as held)."""
        if not self.ready:
            return None
        tid, spans = self.ready.popleft()
        self.spans_held -= len(spans)
        self.bytes_held -= self._ready_size.pop(tid, 0)
        return tid, spans

    def take_unfinished(self) -> list[list[Span]]:
        """Every trace still waiting for its root, removed (to be persisted at a stop)."""
        out = [held.spans for held in self.held.values()]
        self.held.clear()
        self.spans_held = sum(len(s) for _, s in self.ready)
        self.bytes_held = sum(self._ready_size.values())
        return out

    def remember(self, trace_ids: Iterable[str]) -> None:
        """Trace ids already graded (a restarted monitor's): their spans are late, not new."""
        for tid in trace_ids:
            self._finish(tid)
