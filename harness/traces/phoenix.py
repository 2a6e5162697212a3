"""Grades written to Phoenix as span annotations (`POST /v1/span_annotations`), so a person
looking at a trace in Phoenix sees what tracegrade concluded on the span it judged: annotator
kind CODE for deterministic graders, LLM for judges, HUMAN for labels.

Each annotation carries a stable `identifier` (the grade, the span): Phoenix updates an
annotation with the same name, span and identifier in place, so exporting a run again, or after
a re-grade or a new label, never duplicates one. Bounded by the export's `ExportBudget`; a
refusal or a dead Phoenix is counted and described, never raised.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from ..capture.otlp_http import ExportBudget, describe_response

__all__ = ["AnnotationReport", "annotate_spans"]

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
            try:
                response = _post(client, url, batch, timeout, settle_s)
            except httpx.HTTPError as exc:  # isolation point: counted, described, not raised
                budget.record(
                    unanswered=isinstance(exc, httpx.TimeoutException | httpx.ConnectError)
                )
                failed += len(batch)
                first = first or f"{type(exc).__name__}: {exc or 'no answer'} ({url})"
                continue
            budget.record(unanswered=False)
            if 200 <= response.status_code < 300:
                written += len(batch)
            else:
                failed += len(batch)
                first = first or describe_response(response, url)
    return AnnotationReport(written=written, failed=failed, first_failure=first)


def _post(
    client: httpx.Client, url: str, batch: list[dict[str, Any]], timeout: float, settle_s: float
) -> httpx.Response:
    settled = time.monotonic() + settle_s
    while True:
        response = client.post(url, params={"sync": "true"}, json={"data": batch}, timeout=timeout)
        if response.status_code != 404 or time.monotonic() >= settled:
            return response
        time.sleep(0.5)
