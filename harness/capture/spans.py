"""Light spans for the recorder: plain objects during the run, handed to the tracer's span
processors as finished `ReadableSpan`s when they end.

Why not `tracer.start_span`: the SDK's span start (sampler, attribute cleaning, locks) costs
about eight times what a finished `ReadableSpan` handed to the processors does (measured by
`bench/capture.py`), and the recorder sits on the agent's hot path. The spans are the same on
the wire: ids from the tracer's id generator, its resource and instrumentation scope, and the
processors of its provider (the run's trace file, the OTLP batch exporter). Processors get
`on_end` only; tracegrade's own processors need nothing else. A tracer that is not an SDK
tracer (no processors to hand spans to) still gets ids and a full record, and exports nothing.
"""

from __future__ import annotations

import logging
import random
import time
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

__all__ = ["LiteSpan", "SpanSink"]

log = logging.getLogger(__name__)

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_UNSET = Status(StatusCode.UNSET)


class LiteSpan:
    """A span being recorded: the subset of the span API the recorder uses."""

    __slots__ = (
        "_sink",
        "attributes",
        "context",
        "end_ns",
        "events",
        "held",
        "kind",
        "name",
        "parent",
        "start_ns",
        "status",
    )

    def __init__(
        self,
        sink: SpanSink,
        name: str,
        context: SpanContext,
        parent: SpanContext | None,
        kind: SpanKind,
        attributes: dict[str, Any],
        start_ns: int,
    ) -> None:
        self._sink = sink
        self.name = name
        self.context = context
        self.parent = parent
        self.kind = kind
        self.attributes = attributes
        self.start_ns = start_ns
        self.end_ns: int | None = None
        self.status = _UNSET
        self.events: list[Any] | None = None
        self.held = False

    def get_span_context(self) -> SpanContext:
        return self.context

    def is_recording(self) -> bool:
        return self.end_ns is None

    def set_attribute(self, key: str, value: Any) -> None:
        if self.end_ns is None:  # an ended span may already be in an exporter's queue
            self.attributes[key] = value

    def set_status(self, status: Status) -> None:
        if self.end_ns is None:
            self.status = status

    def end(self, end_time: int | None = None, *, hold: bool = False) -> None:
        """End the span and hand it to the processors; with `hold`, ended now but handed over
        at `emit` (events added meanwhile: what was concluded about it after it ended)."""
        if self.end_ns is not None:
            return
        self.end_ns = end_time or time.time_ns()
        self.held = hold
        if not hold:
            self._sink.emit(self)

    def emit(self) -> None:
        """Hand a span ended with `hold` to the processors (once)."""
        if self.held:
            self.held = False
            self._sink.emit(self)


class SpanSink:
    """Starts light spans with the tracer's ids and hands them, ended, to its processors."""

    def __init__(self, tracer: Any) -> None:
        self.processor = getattr(tracer, "span_processor", None)
        self.resource = getattr(tracer, "resource", None)
        self.scope = getattr(tracer, "_instrumentation_scope", None)
        generator = getattr(tracer, "id_generator", None)
        self._span_id = generator.generate_span_id if generator else lambda: random.getrandbits(64)
        self._trace_id = (
            generator.generate_trace_id if generator else lambda: random.getrandbits(128)
        )
        if self.processor is None:
            log.warning("tracer %r is not an OpenTelemetry SDK tracer: no spans exported", tracer)

    def start(
        self,
        name: str,
        parent: LiteSpan | None,
        attributes: dict[str, Any],
        *,
        kind: SpanKind = SpanKind.INTERNAL,
        start_ns: int | None = None,
    ) -> LiteSpan:
        parent_ctx = parent.context if parent is not None else None
        trace_id = parent_ctx.trace_id if parent_ctx is not None else self._trace_id()
        context = SpanContext(trace_id, self._span_id(), False, _SAMPLED)
        return LiteSpan(
            self, name, context, parent_ctx, kind, attributes, start_ns or time.time_ns()
        )

    def emit(self, span: LiteSpan) -> None:
        if self.processor is None:
            return
        self.processor.on_end(
            ReadableSpan(
                name=span.name,
                context=span.context,
                parent=span.parent,
                resource=self.resource,
                attributes=span.attributes,
                kind=span.kind,
                status=span.status,
                events=span.events or (),
                start_time=span.start_ns,
                end_time=span.end_ns,
                instrumentation_scope=self.scope,
            )
        )
