"""`receive --forward`: every request received posted on to another OTLP endpoint, with
tracegrade's verdicts on the spans it judged.

A request that holds the root span of a trace being graded is parked until that trace's grade
is known, then forwarded with one `gen_ai.evaluation.result` event per grade added to the root
span (the events `tracegrade export` adds), in the request's own encoding (protobuf or JSON;
gzip again when it came gzipped). A request holding no such root goes at once, unchanged.
Forwarding waits at most `wait_s` after the request arrived: past it (the trace is still in its
quiet period, waits for its conversation, or was dropped) the request goes without the grade,
its root span marked `tracegrade.evaluation.status = ungraded` and counted
(`forwarded_ungraded`), so a backend never shows a missing verdict as no verdict at all.

Bounded: at most `queue` requests parked and `queue` waiting to be sent; past either a request
is forwarded ungraded at once, or dropped (counted). A slow or failing endpoint costs forwards
(counted), never receiving.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...otel import semconv as sc
from .ingest import JSON

__all__ = ["Forwarder", "with_verdicts"]

log = logging.getLogger(__name__)

UNGRADED = "ungraded"


@dataclass(slots=True)
class _Parked:
    body: bytes
    """Inflated."""
    kind: str
    headers: dict[str, str]
    gzipped: bool
    roots: frozenset[str]
    deadline: float


def _hex(value: Any) -> str:
    import base64
    import binascii

    text = str(value or "")
    if len(text) == 32:
        return text.lower()
    try:
        return base64.b64decode(text, validate=True).hex()
    except (binascii.Error, ValueError):
        return text.lower()


def with_verdicts(
    body: bytes,
    kind: str,
    events: Mapping[str, Sequence[dict[str, Any]]],
    ungraded: Iterable[str] = (),
) -> bytes:
    """The request `body` (inflated, `kind` JSON or protobuf) with each trace's `events`
    (OTLP/JSON span events) added to its root span, and the root span of each `ungraded`
    trace marked so."""
    ungraded = set(ungraded)
    if kind == JSON:
        data = json.loads(body)
        for rs in data.get("resourceSpans") or ():
            for ss in rs.get("scopeSpans") or ():
                for span in ss.get("spans") or ():
                    if span.get("parentSpanId"):
                        continue
                    tid = _hex(span.get("traceId"))
                    if tid in events:
                        span.setdefault("events", []).extend(events[tid])
                    elif tid in ungraded:
                        span.setdefault("attributes", []).append(
                            {"key": sc.TG_EVALUATION_STATUS, "value": {"stringValue": UNGRADED}}
                        )
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest.FromString(body)
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                if span.parent_span_id:
                    continue
                tid = span.trace_id.hex()
                if tid in events:
                    for event in events[tid]:
                        json_format.ParseDict(event, span.events.add())
                elif tid in ungraded:
                    attribute = span.attributes.add()
                    attribute.key = sc.TG_EVALUATION_STATUS
                    attribute.value.string_value = UNGRADED
    return request.SerializeToString()


@dataclass(slots=True)
class Forwarder:
    """Posts what `offer` is given to `url`, each request once its traces' grades are known
    (`resolve`) or `wait_s` passed (`release`, from the receiver's ticker)."""

    url: str
    counts: Any
    queue_size: int = 1_000
    timeout_s: float = 10.0
    wait_s: float = 10.0
    clock: Callable[[], float] = time.monotonic
    parked: list[_Parked] = field(default_factory=list)
    waiting: dict[str, int] = field(default_factory=dict)
    """trace id -> parked requests holding its root."""
    verdicts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """trace id -> its grades as span events (empty: it got none, and none is coming)."""
    queue: asyncio.Queue[tuple[bytes, dict[str, str]]] | None = None
    task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.queue = asyncio.Queue(self.queue_size)
        self.task = asyncio.create_task(self._run())

    def offer(
        self,
        raw: bytes,
        headers: dict[str, str],
        *,
        body: bytes,
        kind: str,
        roots: Iterable[str] = (),
    ) -> None:
        """A request received: `raw` as it came (with `headers`), `body` inflated, `roots` the
        traces whose root span it holds and that are being graded."""
        roots = frozenset(roots)
        if not roots or self.wait_s <= 0:
            self._send(raw, headers)
            return
        if len(self.parked) >= self.queue_size:  # the oldest goes now, ungraded
            self._release(self.parked.pop(0))
        for tid in roots:
            self.waiting[tid] = self.waiting.get(tid, 0) + 1
        gzipped = "gzip" in headers.get("content-encoding", "")
        self.parked.append(_Parked(body, kind, headers, gzipped, roots, self.clock() + self.wait_s))

    def resolve(self, trace_id: str, events: Sequence[dict[str, Any]]) -> None:
        """Trace `trace_id` was graded (`events`: its grades), or will not be (no events)."""
        if trace_id in self.waiting:
            self.verdicts[trace_id] = list(events)

    def release(self, *, force: bool = False) -> None:
        """Forward every parked request whose grades are all known, or whose wait is over
        (every one, with `force`)."""
        if not self.parked:
            return
        now, kept = self.clock(), []
        for parked in self.parked:
            done = all(t in self.verdicts for t in parked.roots)
            if done or force or now >= parked.deadline:
                self._release(parked)
            else:
                kept.append(parked)
        self.parked = kept

    def _release(self, parked: _Parked) -> None:
        events = {t: self.verdicts[t] for t in parked.roots if self.verdicts.get(t)}
        ungraded = [t for t in parked.roots if t not in self.verdicts]
        for tid in parked.roots:
            left = self.waiting.pop(tid, 1) - 1
            if left > 0:
                self.waiting[tid] = left
            else:
                self.verdicts.pop(tid, None)
        self.counts["forwarded_graded"] += len(events)
        self.counts["forwarded_ungraded"] += len(ungraded)
        headers = {k: v for k, v in parked.headers.items() if k != "content-encoding"}
        try:
            body = with_verdicts(parked.body, parked.kind, events, ungraded)
        except Exception:  # isolation point: a request it cannot rewrite goes as it came
            log.exception("adding the grades to a forwarded request failed")
            body = parked.body
        if parked.gzipped:
            body = gzip.compress(body, compresslevel=5)
            headers["content-encoding"] = "gzip"
        self._send(body, headers)

    def _send(self, body: bytes, headers: dict[str, str]) -> None:
        if self.queue is None:
            self.counts["forward_dropped"] += 1
            return
        try:
            self.queue.put_nowait((body, headers))
        except asyncio.QueueFull:
            self.counts["forward_dropped"] += 1

    async def _run(self) -> None:
        import httpx

        assert self.queue is not None
        async with httpx.AsyncClient(timeout=self.timeout_s) as client:
            while True:
                body, headers = await self.queue.get()
                try:
                    response = await client.post(self.url, content=body, headers=headers)
                    if response.status_code >= 300:
                        raise RuntimeError(f"HTTP {response.status_code}")
                    self.counts["forwarded"] += 1
                except Exception as exc:  # isolation point: a forward failure is counted
                    self.counts["forward_failed"] += 1
                    log.warning("forwarding to %s failed: %s", self.url, exc)
                finally:
                    self.queue.task_done()

    async def drain(self, seconds: float) -> None:
        """Forward what is parked (ungraded where its grade is still unknown), then give the
        queue `seconds` to empty; what is left is counted dropped."""
        self.release(force=True)
        if self.queue is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.queue.join(), seconds)
            self.counts["forward_dropped"] += self.queue.qsize()
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
