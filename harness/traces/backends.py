"""Trace backends `grade-traces --from NAME` reads spans from: plugins of the entry-point group
`tracegrade.trace_sources` (the same loader as the dataset sources), `phoenix` built in.

A source is a class with a `name` and `spans(*, endpoint, project, since_ns, until_ns, headers)`
yielding `tracegrade.traces.spans.Span`s. A backend that cannot be reached is an
`EvaluationError` (exit 3: nothing was graded, and that is never a pass); one that answers that
the project does not exist is an `InputError` (exit 4).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from ..errors import EvaluationError, InputError, suggest
from ..inputs.sources import plugin_classes
from .spans import Span

__all__ = ["GROUP", "PhoenixSource", "trace_source", "trace_sources"]

GROUP = "tracegrade.trace_sources"
_STATUS = {"OK": 1, "ERROR": 2}


@functools.cache
def trace_sources() -> dict[str, Any]:
    """Every registered trace source class by name."""
    return plugin_classes(GROUP, kind="trace source", needs=("spans",))


def trace_source(name: str) -> Any:
    sources = trace_sources()
    if name not in sources:
        close = suggest(name, list(sources))
        hint = f"did you mean {close}?" if close else f"sources: {', '.join(sorted(sources))}"
        raise InputError(f"no trace source {name!r}", key="--from", hint=hint)
    return sources[name]()


def _ns(text: Any) -> int:
    if not text:
        return 0
    moment = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat()


class PhoenixSource:
    """Spans of a Phoenix project through its REST API: `GET /v1/projects/{project}/spans`
    with `start_time` (inclusive), `end_time` (exclusive), `limit` and the `cursor` of the
    previous page's `next_cursor`. Phoenix answers in its own span form (`context.trace_id`,
    `parent_id`, `span_kind`, ISO times, flat attributes), read here into `Span`s."""

    name = "phoenix"
    page_size = 1000

    def spans(
        self,
        *,
        endpoint: str,
        project: str,
        since_ns: int | None = None,
        until_ns: int | None = None,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 30.0,
    ) -> Iterator[Span]:
        import httpx

        url = f"{endpoint.rstrip('/')}/v1/projects/{project}/spans"
        params: dict[str, Any] = {"limit": self.page_size}
        if since_ns is not None:
            params["start_time"] = _iso(since_ns)
        if until_ns is not None:
            params["end_time"] = _iso(until_ns)
        with httpx.Client(timeout=timeout_s, headers=dict(headers or {})) as client:
            while True:
                try:
                    response = client.get(url, params=params)
                except httpx.HTTPError as exc:
                    raise EvaluationError(
                        f"Phoenix at {endpoint} could not be read: {type(exc).__name__}: {exc}"
                    ) from None
                if response.status_code == 404:
                    raise InputError(
                        f"Phoenix at {endpoint} has no project {project!r}", key="--project"
                    )
                if response.status_code != 200:
                    raise EvaluationError(
                        f"Phoenix at {endpoint} answered HTTP {response.status_code} for {url}"
                    )
                try:
                    body = response.json()
                    page = body["data"]
                except (ValueError, KeyError, TypeError):
                    raise EvaluationError(
                        f"Phoenix at {endpoint} answered something that is not a span page"
                    ) from None
                for raw in page:
                    yield _span(raw)
                cursor = body.get("next_cursor")
                if not cursor:
                    return
                params["cursor"] = cursor


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    """Nested attributes (`{"llm": {"output_messages": [{"message": ...}]}}`) as the dotted
    keys OpenTelemetry writes (`llm.output_messages.0.message...`); lists of plain values and
    `metadata` stay as they are."""
    if isinstance(value, Mapping) and prefix != "metadata":
        for key, inner in value.items():
            _flatten(inner, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(value, list) and any(isinstance(v, Mapping) for v in value):
        for index, inner in enumerate(value):
            _flatten(inner, f"{prefix}.{index}", out)
    else:
        out[prefix] = value


def _span(raw: Mapping[str, Any]) -> Span:
    context = raw.get("context") or {}
    attributes: dict[str, Any] = {}
    _flatten(raw.get("attributes") or {}, "", attributes)
    kind = raw.get("span_kind")
    if kind and "openinference.span.kind" not in attributes:
        attributes["openinference.span.kind"] = kind  # Phoenix keeps it as a column
    return Span(
        trace_id=str(context.get("trace_id", "")).lower(),
        span_id=str(context.get("span_id", "")).lower(),
        parent_id=str(raw.get("parent_id") or "").lower(),
        name=str(raw.get("name", "")),
        start_ns=_ns(raw.get("start_time")),
        end_ns=_ns(raw.get("end_time")),
        attributes=attributes,
        status_code=_STATUS.get(str(raw.get("status_code", "")).upper(), 0),
        status_message=str(raw.get("status_message") or ""),
    )
