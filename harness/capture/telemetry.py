"""A tracer provider per harness run (never the global one) and where its spans go.

- the run's local trace file (OTLP JSON lines, secrets redacted, nothing truncated);
- when an endpoint is configured (argument, or the standard `OTEL_EXPORTER_OTLP_ENDPOINT` /
  `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `..._HEADERS` variables), the official OTLP/HTTP
  exporter (`http/protobuf`, the default) or tracegrade's OTLP/JSON one (`http/json`, from the
  `protocol` argument or `OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL`) behind a batch processor and
  `RedactingExporter`, which redacts and truncates on the way out. SDK attribute limits are
  never set: the in-process record stays whole.

The resource carries `service.name` and, when a project is given, `openinference.project.name`
(the Phoenix project the spans land in).

An unreachable or slow collector never fails or stalls a run: each request is bounded by a
timeout, after a failure further batches are dropped for a cool-down instead of each waiting
out its own timeout, and failures are counted and reported once, in the `ExportReport`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.trace import Status, Tracer

from ..otel import semconv as sc
from ..otel.otlp import ENDPOINT_VARS, env_endpoint, resolve_protocol, traces_url
from ..redaction import DEFAULT_POLICY, RedactionPolicy
from .otlp_http import OtlpJsonExporter, describe_response
from .tracefile import TraceFileExporter, redacted_attributes

__all__ = ["ExportReport", "RedactingExporter", "RunTelemetry"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ExportReport:
    """What happened to a run's spans, reported once at shutdown."""

    exported: int = 0
    """Spans the OTLP endpoint accepted."""
    failed: int = 0
    """Spans that did not reach the OTLP endpoint (failed, timed out, or dropped after one did)."""
    first_failure: str | None = None
    """The first failure, in words; None when nothing failed."""
    written: int = 0
    """Spans written to the local trace file."""
    endpoint: str | None = None
    """The OTLP endpoint spans were sent to, None when none was configured."""
    trace_file: Path | None = None
    """The run's local trace file, None when none was asked for."""
    trace_file_failed: int = 0
    """Spans that could not be written to the trace file (their records are lost on disk)."""
    trace_file_failure: str | None = None
    """The first trace-file write failure, in words."""
    protocol: str | None = None
    """The OTLP protocol spans were sent with, None when no endpoint was configured."""

    @property
    def ok(self) -> bool:
        return self.failed == 0


class RedactingExporter(SpanExporter):
    """Wraps an exporter: redacts and truncates attributes before they leave the process,
    bounds the cost of a dead endpoint, and counts what was exported and what failed."""

    def __init__(
        self,
        inner: SpanExporter,
        *,
        label: str,
        truncate_to: int = sc.EXPORT_TRUNCATE_CHARS,
        cooldown_s: float = 30.0,
        redaction: RedactionPolicy = DEFAULT_POLICY,
        redact: bool = True,
        failure_detail: Callable[[], str | None] | None = None,
    ) -> None:
        self.inner = inner
        self.redaction = redaction
        self.redact = redact
        """False when `inner` redacts and truncates as it encodes (the OTLP/JSON exporter)."""
        self.failure_detail = failure_detail
        """What the last failed request answered (`HTTP 415 ... from URL`), when known."""
        self.label = label
        self.truncate_to = truncate_to
        self.cooldown_s = cooldown_s
        self.exported = 0
        self.failed = 0
        self.first_failure: str | None = None
        self._lock = threading.Lock()
        self._skip_until = 0.0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if time.monotonic() < self._skip_until:
            self._count_failure(len(spans), None)
            return SpanExportResult.FAILURE
        try:
            redacted = [self._redacted(s) for s in spans] if self.redact else spans
            result = self.inner.export(redacted)
        except Exception as exc:  # isolation point: an exporter never raises into the run
            log.debug("export to %s raised", self.label, exc_info=True)
            self._count_failure(len(spans), f"{type(exc).__name__}: {exc}")
            return SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            with self._lock:
                self.exported += len(spans)
        else:
            detail = self.failure_detail() if self.failure_detail else None
            self._count_failure(
                len(spans), f"export of {len(spans)} spans failed: {detail or self.label}"
            )
        return result

    def _count_failure(self, count: int, message: str | None) -> None:
        with self._lock:
            self.failed += count
            if self.first_failure is None:
                self.first_failure = message or f"export to {self.label} failed"
            self._skip_until = time.monotonic() + self.cooldown_s

    def _redacted(self, span: ReadableSpan) -> ReadableSpan:
        return ReadableSpan(
            name=span.name,
            context=span.context,
            parent=span.parent,
            resource=span.resource,
            attributes=redacted_attributes(
                span.attributes or {}, truncate_to=self.truncate_to, policy=self.redaction
            ),
            events=[self._redacted_event(e) for e in span.events],
            links=span.links,
            kind=span.kind,
            status=Status(span.status.status_code, self.redaction.text(span.status.description))
            if span.status.description
            else span.status,
            start_time=span.start_time,
            end_time=span.end_time,
            instrumentation_scope=span.instrumentation_scope,
        )

    def _redacted_event(self, event: Event) -> Event:
        # Exception events carry the message and stack trace: redacted like attributes.
        return Event(
            event.name,
            redacted_attributes(event.attributes or {}, policy=self.redaction),
            event.timestamp,
        )

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class RunTelemetry:
    """The tracer provider of one harness run and its exporters. Use as a context manager, or
    call `shutdown()` once; it returns the `ExportReport`."""

    def __init__(
        self,
        *,
        trace_file: Path | str | None,
        otlp_endpoint: str | None = None,
        otlp_headers: Mapping[str, str] | None = None,
        export_timeout_s: float = 5.0,
        service_name: str = "tracegrade",
        redaction: RedactionPolicy = DEFAULT_POLICY,
        project: str | None = None,
        protocol: str | None = None,
    ) -> None:
        self.trace_file = Path(trace_file) if trace_file is not None else None
        resource = {"service.name": service_name}
        if project:
            resource[sc.OI_PROJECT_NAME] = project
        self._provider = TracerProvider(
            resource=Resource.create(resource),
            sampler=ALWAYS_ON,
            # Explicitly unlimited, whatever OTEL_*_LIMIT variables say: truncation happens on
            # export, never in the in-process record.
            span_limits=SpanLimits(
                max_attribute_length=SpanLimits.UNSET,
                max_span_attribute_length=SpanLimits.UNSET,
            ),
        )
        self._file_exporter: TraceFileExporter | None = None
        self._file_processor: BatchSpanProcessor | None = None
        if self.trace_file is not None:
            self._file_exporter = TraceFileExporter(self.trace_file, redaction=redaction)
            self._file_processor = BatchSpanProcessor(
                self._file_exporter, schedule_delay_millis=1000
            )
            self._provider.add_span_processor(self._file_processor)
        self.endpoint: str | None = None
        self.protocol: str | None = None
        self._otlp: RedactingExporter | None = None
        from_env = any(os.environ.get(v) for v in ENDPOINT_VARS)
        if otlp_endpoint or from_env:
            self.protocol = resolve_protocol(protocol)
            self._otlp = self._exporter(otlp_endpoint, otlp_headers, export_timeout_s, redaction)
            self._provider.add_span_processor(
                BatchSpanProcessor(self._otlp, schedule_delay_millis=500)
            )
        self.tracer: Tracer = self._provider.get_tracer("tracegrade")
        """The tracer recorders of this run start their spans on."""
        self._report: ExportReport | None = None

    def _exporter(
        self,
        endpoint: str | None,
        headers: Mapping[str, str] | None,
        timeout: float,
        redaction: RedactionPolicy,
    ) -> RedactingExporter:
        headers = dict(headers or {}) or None
        if self.protocol == "http/json":
            self.endpoint = traces_url(endpoint or env_endpoint())
            inner = OtlpJsonExporter(
                endpoint=self.endpoint, headers=headers, timeout=timeout, redaction=redaction
            )
            return RedactingExporter(
                inner,
                label=self.endpoint,
                redact=False,
                redaction=redaction,
                failure_detail=lambda: inner.last_failure,
            )
        import requests
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        failures: list[str] = []
        session = requests.Session()

        def remember(response: Any, *args: Any, **kwargs: Any) -> None:
            if response.status_code >= 300:
                failures.append(describe_response(response, self.endpoint or ""))

        session.hooks["response"].append(remember)
        if endpoint:
            self.endpoint = traces_url(endpoint)
            otlp = OTLPSpanExporter(
                endpoint=self.endpoint, headers=headers, timeout=timeout, session=session
            )
        else:
            otlp = OTLPSpanExporter(headers=headers, timeout=timeout, session=session)
            self.endpoint = otlp._endpoint
        return RedactingExporter(
            otlp,
            label=self.endpoint,
            redaction=redaction,
            failure_detail=lambda: failures[-1] if failures else None,
        )

    def flush(self) -> None:
        """Write everything ended so far to the trace file (and hand it to the OTLP exporter)."""
        self._provider.force_flush()

    def flush_trace_file(self) -> None:
        """Write every span ended so far to the trace file, and only there (a slow collector
        never holds this up). Called before a question's row is committed, so a committed row's
        record is on disk no later than the row: kill -9 then `--resume` loses nothing."""
        if self._file_processor is not None:
            self._file_processor.force_flush()

    def shutdown(self) -> ExportReport:
        """Flush and close every exporter; idempotent. Failures are logged here, once."""
        if self._report is not None:
            return self._report
        self._provider.shutdown()
        otlp = self._otlp
        self._report = ExportReport(
            exported=otlp.exported if otlp else 0,
            failed=otlp.failed if otlp else 0,
            first_failure=otlp.first_failure if otlp else None,
            written=self._file_exporter.written if self._file_exporter else 0,
            trace_file_failed=self._file_exporter.failed if self._file_exporter else 0,
            trace_file_failure=self._file_exporter.first_failure if self._file_exporter else None,
            endpoint=self.endpoint,
            trace_file=self.trace_file,
            protocol=self.protocol,
        )
        if self._report.failed:
            log.warning(
                "%d spans were not exported to %s: %s",
                self._report.failed,
                self.endpoint,
                self._report.first_failure,
            )
        return self._report

    def __enter__(self) -> RunTelemetry:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.shutdown()
