"""OTLP over HTTP beside the official exporter: the protocol choice, an OTLP/JSON span
exporter (the official Python exporter speaks protobuf only), and posting stored trace-file
lines to any backend (`tracegrade export`).

The trace file is OTLP/JSON, one `ExportTraceServiceRequest` per line. Sent as `http/json` a
line goes as it is; as `http/protobuf` it is converted with protobuf's JSON mapping, after the
one place where OTLP/JSON departs from it: trace and span ids are hex, not base64.
"""

from __future__ import annotations

import base64
import copy
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ..otel import semconv as sc
from ..redaction import DEFAULT_POLICY, RedactionPolicy

__all__ = [
    "ExportBudget",
    "OtlpJsonExporter",
    "ReplayReport",
    "describe_response",
    "json_to_protobuf",
    "post_line",
    "replay_trace_file",
]


def describe_response(response: Any, endpoint: str) -> str:
    """`HTTP 415 Unsupported Media Type from http://...`: a failure a person can act on."""
    reason = getattr(response, "reason", None) or getattr(response, "reason_phrase", "") or ""
    return f"HTTP {response.status_code} {reason} from {endpoint}".replace("  ", " ")


class OtlpJsonExporter(SpanExporter):
    """Posts each batch as one OTLP/JSON request (`Content-Type: application/json`). Spans are
    encoded by the trace file's encoder, so what a backend gets is what the file holds."""

    def __init__(
        self,
        *,
        endpoint: str,
        headers: Mapping[str, str] | None = None,
        timeout: float = 5.0,
        redaction: RedactionPolicy = DEFAULT_POLICY,
        truncate_to: int | None = sc.EXPORT_TRUNCATE_CHARS,
    ) -> None:
        self.endpoint = endpoint
        self.redaction = redaction
        self.truncate_to = truncate_to
        self._client = httpx.Client(
            timeout=timeout, headers={"Content-Type": "application/json", **dict(headers or {})}
        )
        self.last_failure: str | None = None

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        from .tracefile import encode_line

        line = encode_line(spans, truncate_to=self.truncate_to, policy=self.redaction)
        ok, failure = post_line(self._client, self.endpoint, line, "http/json")
        self.last_failure = failure
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE

    def shutdown(self) -> None:
        self._client.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def _hex_to_b64(value: str) -> str:
    return base64.b64encode(bytes.fromhex(value)).decode("ascii")


def json_to_protobuf(line: str | Mapping[str, Any]) -> bytes:
    """One OTLP/JSON request (a trace-file line) as a serialized protobuf request."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    data = json.loads(line) if isinstance(line, str) else json.loads(json.dumps(line))
    for resource in data.get("resourceSpans", ()):
        for scope in resource.get("scopeSpans", ()):
            for span in scope.get("spans", ()):
                for field in _ID_FIELDS:
                    if span.get(field):
                        span[field] = _hex_to_b64(span[field])
                for link in span.get("links", ()):
                    for field in ("traceId", "spanId"):
                        if link.get(field):
                            link[field] = _hex_to_b64(link[field])
    message = ExportTraceServiceRequest()
    json_format.ParseDict(data, message, ignore_unknown_fields=True)
    return message.SerializeToString()


def post_line(
    client: httpx.Client, endpoint: str, line: str, protocol: str
) -> tuple[bool, str | None]:
    """POST one request; (accepted, failure in words). Never raises: a dead backend is a
    failure to report, not a crash."""
    ok, failure, _ = _post(client, endpoint, line, protocol, None)
    return ok, failure


def _post(
    client: httpx.Client, endpoint: str, line: str, protocol: str, timeout: float | None
) -> tuple[bool, str | None, bool]:
    """`post_line` with a timeout for this request (None: the client's own), and whether it
    went unanswered (timed out, or could not connect): what the breaker counts."""
    if protocol == "http/json":
        body, content_type = line.encode("utf-8"), "application/json"
    else:
        body, content_type = json_to_protobuf(line), "application/x-protobuf"
    options: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
    try:
        response = client.post(
            endpoint, content=body, headers={"Content-Type": content_type}, **options
        )
    except httpx.HTTPError as exc:  # isolation point: reported by the caller, never raised
        unanswered = isinstance(exc, httpx.TimeoutException | httpx.ConnectError)
        return False, f"{type(exc).__name__}: {exc or 'no answer'} ({endpoint})", unanswered
    if 200 <= response.status_code < 300:
        return True, None, False
    return False, describe_response(response, endpoint), False


def _source_root(span: Mapping[str, Any]) -> str | None:
    """The agent's own root span a monitor run's question span judged (`grade-traces`,
    `receive`): where `receive --annotate` put its grades, so an export updates them there."""
    for kv in span.get("attributes", ()):
        if kv.get("key") == sc.TG_SOURCE_ROOT_SPAN_ID:
            return kv.get("value", {}).get("stringValue") or None
    return None


def _redact_line(
    line: str,
    *,
    project: str | None,
    policy: RedactionPolicy,
    events: Mapping[str, Sequence[dict[str, Any]]] | None = None,
    roots: dict[str, str] | None = None,
) -> tuple[str, int]:
    """A stored request redacted (and cut) again for export, as the live exporter would; the
    project resource attribute replaced when `project` is given; `events` given, they replace
    the `gen_ai.evaluation.result` events of the root span of their trace (the run's own, from
    its first grading), and each root is noted in `roots`. Returns (line, span count)."""
    from functools import partial

    from .tracefile import redacted_attributes

    redact = partial(redacted_attributes, policy=policy)

    data = json.loads(line)
    count = 0
    for resource in data.get("resourceSpans", ()):
        if project:
            attrs = resource.setdefault("resource", {}).setdefault("attributes", [])
            attrs[:] = [a for a in attrs if a.get("key") != sc.OI_PROJECT_NAME]
            attrs.append({"key": sc.OI_PROJECT_NAME, "value": {"stringValue": project}})
        for scope in resource.get("scopeSpans", ()):
            for span in scope.get("spans", ()):
                count += 1
                if not span.get("parentSpanId"):
                    trace = str(span.get("traceId", ""))
                    if roots is not None:  # a monitor run's grades belong on the agent's root
                        roots[trace] = _source_root(span) or str(span.get("spanId", ""))
                    if events is not None:  # the latest grades replace the ones the run wrote
                        kept = [
                            e
                            for e in span.get("events", ())
                            if e.get("name") != sc.GEN_AI_EVALUATION_RESULT
                        ]
                        kept.extend(copy.deepcopy(list(events.get(trace, ()))))
                        span["events"] = kept
                _redact_key_values(span.get("attributes", ()), redact)
                for event in span.get("events", ()):
                    _redact_key_values(event.get("attributes", ()), redact)
                status = span.get("status") or {}
                if status.get("message"):
                    status["message"] = policy.text(status["message"])
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")), count


def _redact_key_values(key_values: Sequence[dict], redact: Any) -> None:
    strings = {
        kv["key"]: kv["value"]["stringValue"]
        for kv in key_values
        if "stringValue" in kv.get("value", {})
    }
    cleaned = redact(strings, truncate_to=sc.EXPORT_TRUNCATE_CHARS)
    for kv in key_values:
        if kv["key"] in cleaned:
            kv["value"] = {"stringValue": cleaned[kv["key"]]}
        array = kv.get("value", {}).get("arrayValue")
        if array:
            for item in array.get("values", ()):
                if "stringValue" in item:
                    item["stringValue"] = redact({"": item["stringValue"]})[""]


class ExportBudget:
    """What one export may spend, across every trace file it sends: one deadline for the whole
    export, and a circuit breaker that gives up after `breaker` consecutive requests that timed
    out or could not connect (as the judges' breaker does), so a backend that accepts
    connections and never answers costs seconds, not a timeout per trace-file line."""

    def __init__(self, *, deadline_s: float = 60.0, timeout_s: float = 10.0, breaker: int = 2):
        self.deadline_s = deadline_s
        self.timeout_s = timeout_s
        self.breaker = breaker
        self._ends = time.monotonic() + deadline_s
        self._in_a_row = 0
        self.stopped: str | None = None
        """Why no more requests are sent (the breaker opened, the deadline passed); None."""

    def request_timeout(self) -> float | None:
        """Seconds the next request may take; None when the export must stop (see `stopped`)."""
        if self.stopped is None and time.monotonic() >= self._ends:
            self.stopped = f"the export's deadline of {self.deadline_s:g} s passed"
        if self.stopped is not None:
            return None
        return max(0.001, min(self.timeout_s, self._ends - time.monotonic()))

    def record(self, *, unanswered: bool) -> None:
        """Count a request: `unanswered` when it timed out or could not connect."""
        self._in_a_row = self._in_a_row + 1 if unanswered else 0
        if unanswered and self._in_a_row >= self.breaker and self.stopped is None:
            self.stopped = (
                f"gave up after {self._in_a_row} consecutive requests went unanswered "
                f"({self.timeout_s:g} s each)"
            )


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """What a replay of a trace file delivered."""

    endpoint: str
    """Where the spans were posted."""
    protocol: str
    """`http/protobuf` or `http/json`."""
    exported: int = 0
    """Spans the backend accepted."""
    failed: int = 0
    """Spans in requests the backend refused or never answered."""
    first_failure: str | None = None
    """The first failure in words (`HTTP 415 Unsupported Media Type from ...`)."""
    not_sent: int = 0
    """Spans never sent: the export stopped first (its deadline, or its breaker)."""
    stopped: str | None = None
    """Why the export stopped before the end of the file; None when it sent every line."""
    lines: int = 0
    """Requests (trace-file lines) in the file."""
    delivered_lines: int = 0
    """Requests the backend accepted."""
    roots: dict[str, str] = dataclass_field(default_factory=dict)
    """trace id -> span id of its root span (the question span), for every trace sent."""


def replay_trace_file(
    path: str | Path,
    *,
    endpoint: str,
    protocol: str = "http/protobuf",
    headers: Mapping[str, str] | None = None,
    project: str | None = None,
    redaction: RedactionPolicy = DEFAULT_POLICY,
    budget: ExportBudget | None = None,
    events: Mapping[str, Sequence[dict[str, Any]]] | None = None,
) -> ReplayReport:
    """Post every request stored in a run's trace file to an OTLP/HTTP endpoint, redacted again
    on the way out, within `budget` (one deadline and a breaker, shared by every file of one
    export; default a fresh one): once it stops, the rest is counted as not sent. Unreadable
    lines count as failed; nothing raises for a dead backend. `events` (trace id -> OTLP/JSON
    span events, the run's `gen_ai.evaluation.result` events) are added to each trace's root
    span on the way out, redacted like every other event."""
    budget = budget if budget is not None else ExportBudget()
    exported = failed = not_sent = lines = delivered = 0
    first: str | None = None
    roots: dict[str, str] = {}
    with httpx.Client(headers=dict(headers or {})) as client:
        for number, raw in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
            if not raw.strip():
                continue
            lines += 1
            try:
                line, count = _redact_line(
                    raw, project=project, policy=redaction, events=events, roots=roots
                )
            except (ValueError, KeyError, TypeError) as exc:
                failed += 1
                first = first or f"{path}:{number}: unreadable trace-file line ({exc})"
                continue
            timeout = budget.request_timeout()
            if timeout is None:
                not_sent += count
                continue
            ok, failure, unanswered = _post(client, endpoint, line, protocol, timeout)
            budget.record(unanswered=unanswered)
            if ok:
                exported += count
                delivered += 1
            else:
                failed += count
                first = first or failure
    return ReplayReport(
        endpoint=endpoint,
        protocol=protocol,
        exported=exported,
        failed=failed,
        first_failure=first,
        not_sent=not_sent,
        stopped=budget.stopped if not_sent else None,
        lines=lines,
        delivered_lines=delivered,
        roots=roots,
    )
