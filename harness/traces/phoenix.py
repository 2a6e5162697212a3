"""Grades written to Phoenix as span annotations (`POST /v1/span_annotations`), so a person
looking at a trace in Phoenix sees what tracegrade concluded on the span it judged: annotator
kind CODE for deterministic graders, LLM for judges, HUMAN for labels.

Each annotation carries a stable `identifier` (the grade, the span): Phoenix updates an
annotation with the same name, span and identifier in place, so exporting a run again, or after
a re-grade or a new label, never duplicates one. Bounded by the export's `ExportBudget`; a
refusal or a dead Phoenix is counted and described, never raised. `PhoenixAnnotator` does the
same live, for `receive --annotate phoenix`, off the ingest path.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from ..capture.otlp_http import ExportBudget, describe_response

__all__ = ["AnnotationReport", "PhoenixAnnotator", "annotate_spans"]

log = logging.getLogger(__name__)

_BATCH = 100


@dataclass(frozen=True, slots=True)
class AnnotationReport:
    written: int = 0
    failed: int = 0
    first_failure: str | None = None


def annotate_spans(
    endpoint: str,
    annotations: Sequence[dict[str, Any]],
    *,
    headers: Mapping[str, str] | None = None,
    budget: ExportBudget | None = None,
    settle_s: float = 20.0,
) -> AnnotationReport:
    """Post `annotations` (see `rundir.evaluations.phoenix_annotation`) to the Phoenix at
    `endpoint` (its base URL, e.g. http://localhost:6006), in batches. Phoenix stores spans
    from its OTLP endpoint in the background: a batch naming a span it has not stored yet (404)
    is tried again for up to `settle_s` seconds."""
    budget = budget if budget is not None else ExportBudget()
    url = f"{endpoint.rstrip('/')}/v1/span_annotations"
    written = failed = 0
    first: str | None = None
    with httpx.Client(headers=dict(headers or {})) as client:
        for start in range(0, len(annotations), _BATCH):
            batch = list(annotations[start : start + _BATCH])
            timeout = budget.request_timeout()
            if timeout is None:
                failed += len(batch)
                first = first or f"not sent: {budget.stopped}"
                continue
            answered = 0
            try:
                for part, response in _post(client, url, batch, timeout, settle_s):
                    answered += len(part)
                    if 200 <= response.status_code < 300:
                        written += len(part)
                    else:
                        failed += len(part)
                        first = first or _refusal(response, url)
            except httpx.HTTPError as exc:  # isolation point: counted, described, not raised
                budget.record(
                    unanswered=isinstance(exc, httpx.TimeoutException | httpx.ConnectError)
                )
                failed += len(batch) - answered
                first = first or f"{type(exc).__name__}: {exc or 'no answer'} ({url})"
                continue
            budget.record(unanswered=False)
    return AnnotationReport(written=written, failed=failed, first_failure=first)


def _refusal(response: httpx.Response, url: str) -> str:
    """What Phoenix said when it refused (its `detail` names the spans it does not have)."""
    said = " ".join(response.text.split())[:300]
    return (
        f"{describe_response(response, url)}: {said}" if said else describe_response(response, url)
    )


def _by_span(part: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """`part` split by the span each annotation is on (one list when it names one span)."""
    spans: dict[str, list[dict[str, Any]]] = {}
    for annotation in part:
        spans.setdefault(str(annotation.get("span_id")), []).append(annotation)
    return list(spans.values())


def _settling(part: list[dict[str, Any]], response: httpx.Response, settled: float) -> list:
    """The parts of `part` to try again: Phoenix refuses a whole request (404) for any one span
    it has not stored, so a refused part is split by span; the spans it has are written on the
    next try, the others tried until `settled` (a monotonic time). Empty: `response` is final."""
    if response.status_code != 404 or time.monotonic() >= settled:
        return []
    return _by_span(part)


def _post(
    client: httpx.Client, url: str, batch: list[dict[str, Any]], timeout: float, settle_s: float
) -> Iterator[tuple[list[dict[str, Any]], httpx.Response]]:
    """Each part of `batch` with Phoenix's final answer to it (see `_settling`)."""
    settled = time.monotonic() + settle_s
    parts = [batch]
    while parts:
        again = []
        for part in parts:
            response = client.post(
                url, params={"sync": "true"}, json={"data": part}, timeout=timeout
            )
            retry = _settling(part, response, settled)
            if retry:
                again.extend(retry)
            else:
                yield part, response
        parts = again
        if parts:
            time.sleep(0.5)


class PhoenixAnnotator:
    """`receive --annotate phoenix`: each grade written as a Phoenix span annotation as traces
    are graded, off the ingest path. `offer` only queues (bounded: past `queue_size`
    annotations wait, the newest are dropped and counted); a task posts them in batches of up
    to `_BATCH`, each batch retried while Phoenix has not stored its spans yet (404, for up to
    `settle_s`) and counted written or failed (`annotations_written`, `annotations_failed`,
    `annotations_dropped` in `counts`)."""

    def __init__(
        self,
        endpoint: str,
        counts: Any,
        *,
        headers: Mapping[str, str] | None = None,
        queue_size: int = 10_000,
        timeout_s: float = 10.0,
        settle_s: float = 20.0,
        batch_s: float = 0.5,
    ) -> None:
        import asyncio

        self.url = f"{endpoint.rstrip('/').removesuffix('/v1/traces')}/v1/span_annotations"
        self.counts = counts
        self.headers = dict(headers or {})
        self.timeout_s = timeout_s
        self.settle_s = settle_s
        self.batch_s = batch_s
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(queue_size)
        self.first_failure: str | None = None
        self.in_flight = 0
        """Annotations taken from the queue and not yet written or failed."""

    def offer(self, annotations: Sequence[dict[str, Any]]) -> None:
        import asyncio

        for annotation in annotations:
            try:
                self.queue.put_nowait(annotation)
            except asyncio.QueueFull:
                self.counts["annotations_dropped"] += 1

    async def run(self) -> None:
        """Post what is queued, until cancelled."""
        import asyncio

        async with httpx.AsyncClient(headers=self.headers, timeout=self.timeout_s) as client:
            while True:
                batch = [await self.queue.get()]
                ends = asyncio.get_running_loop().time() + self.batch_s
                while len(batch) < _BATCH:
                    left = ends - asyncio.get_running_loop().time()
                    if left <= 0:
                        break
                    try:
                        batch.append(await asyncio.wait_for(self.queue.get(), left))
                    except TimeoutError:
                        break
                self.in_flight = len(batch)
                try:
                    await self._post(client, batch)
                finally:
                    for _ in batch:
                        self.queue.task_done()

    async def _post(self, client: httpx.AsyncClient, batch: list[dict[str, Any]]) -> None:
        import asyncio

        settled = time.monotonic() + self.settle_s
        parts = [batch]
        try:
            while parts:
                again = []
                for part in parts:
                    response = await client.post(
                        self.url, params={"sync": "true"}, json={"data": part}
                    )
                    retry = _settling(part, response, settled)
                    if retry:
                        again.extend(retry)
                        continue
                    self.in_flight -= len(part)
                    if 200 <= response.status_code < 300:
                        self.counts["annotations_written"] += len(part)
                    else:
                        self._failed(len(part), _refusal(response, self.url))
                parts = again
                if parts:
                    await asyncio.sleep(0.5)
        except httpx.HTTPError as exc:  # isolation point: counted, described, never raised
            why = f"{type(exc).__name__}: {exc or 'no answer'} ({self.url})"
            self._failed(self.in_flight, why)
            self.in_flight = 0

    def _failed(self, count: int, why: str) -> None:
        self.counts["annotations_failed"] += count
        self.first_failure = self.first_failure or why
        log.warning("writing %d annotation(s) to Phoenix failed: %s", count, why)

    async def drain(self, seconds: float) -> None:
        """Give what is queued `seconds` to be written; what is left is counted dropped."""
        import asyncio
        import contextlib

        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.queue.join(), seconds)
        self.counts["annotations_dropped"] += self.queue.qsize() + self.in_flight
