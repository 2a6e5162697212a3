"""Spans made outside tracegrade, read from files: OTLP JSON lines (the OpenTelemetry
Collector's file exporter, tracegrade's own trace files), OTLP protobuf files (one
`ExportTraceServiceRequest`, or the file exporter's length-prefixed stream of them), and
directories of either.

Every span becomes a plain `Span`, whatever its encoding, so the dialects (`dialects`) read one
shape. A file that is not OTLP is an `InputError` naming the file (and line, for JSON lines); a
damaged line inside a JSON lines file is skipped and reported, the rest of the file is read.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import struct
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..canonical import json_loads
from ..capture.tracefile import decode_value
from ..errors import InputError
from ..inputs.files import not_a_file

__all__ = [
    "MAX_LINE_BYTES",
    "ReadProblems",
    "Span",
    "files_under",
    "json_loads",
    "read_spans",
    "request_of_spans",
    "spans_of_request",
    "spans_of_request_proto",
    "unreadable_why",
]

MAX_LINE_BYTES = 64 * 1024 * 1024
"""A JSON line (one export request) longer than this is skipped and reported, never parsed:
a request that size is not a trace anyone exported by accident."""
_SUFFIXES = (".jsonl", ".json", ".ndjson", ".pb", ".binpb", ".proto", ".otlp")


@dataclass(slots=True)
class Span:
    """One span, decoded: ids as lowercase hex, times in Unix nanoseconds."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    status_code: int = 0
    """OTLP status: 0 unset, 1 ok, 2 error."""
    status_message: str = ""
    resource: Mapping[str, Any] = field(default_factory=dict)
    kind: int = 0


@dataclass(slots=True)
class ReadProblems:
    """What could not be read, counted and described (never silent)."""

    skipped_lines: int = 0
    details: list[str] = field(default_factory=list)

    def add(self, detail: str) -> None:
        self.skipped_lines += 1
        if len(self.details) < 50:  # described up to a point; counted always
            self.details.append(detail)


def files_under(paths: Iterable[Path | str]) -> list[Path]:
    """The trace files named, a directory standing for the trace files under it (sorted)."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(_SUFFIXES))
            if not found:
                raise InputError("no trace files in this directory", file=str(path))
            out.extend(found)
        elif (problem := not_a_file(path)) is None:
            out.append(path)
        else:  # a FIFO would block the read, /dev/zero would never end it: neither is read
            words = "no such file or directory" if problem == "file not found" else problem
            raise InputError(words.replace("not a file", "not a trace file"), file=str(path))
    return out


# -- OTLP JSON ----------------------------------------------------------------------------
def _attributes(items: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in items or ():
        value = kv.get("value") or {}
        # most values are strings: read here, without a call (`decode_value` reads the rest)
        out[kv["key"]] = value["stringValue"] if "stringValue" in value else decode_value(value)
    return out


def _hex_id(value: Any, size: int) -> str:
    """OTLP JSON ids are hex; protobuf's own JSON mapping (and some exporters) write base64."""
    text = str(value or "")
    if len(text) == size * 2:
        return text.lower()
    try:
        return base64.b64decode(text, validate=True).hex() if text else ""
    except (binascii.Error, ValueError):
        return text.lower()


def spans_of_request(request: Mapping[str, Any]) -> Iterator[Span]:
    """The spans of one OTLP/JSON `ExportTraceServiceRequest` (a decoded JSON object)."""
    resource_spans = request.get("resourceSpans")
    if not isinstance(resource_spans, list):
        raise ValueError("no resourceSpans list: not an OTLP trace export")
    for rs in resource_spans:
        resource = _attributes((rs.get("resource") or {}).get("attributes"))
        for ss in rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or ():
            for s in ss.get("spans") or ():
                status = s.get("status") or {}
                yield Span(
                    trace_id=_hex_id(s.get("traceId"), 16),
                    span_id=_hex_id(s.get("spanId"), 8),
                    parent_id=_hex_id(s.get("parentSpanId"), 8),
                    name=str(s.get("name", "")),
                    start_ns=int(s.get("startTimeUnixNano") or 0),
                    end_ns=int(s.get("endTimeUnixNano") or 0),
                    attributes=_attributes(s.get("attributes")),
                    status_code=_status_code(status.get("code")),
                    status_message=str(status.get("message") or ""),
                    resource=resource,
                    kind=int(s.get("kind") or 0) if str(s.get("kind", "0")).isdigit() else 0,
                )


def _status_code(code: Any) -> int:
    if isinstance(code, str):  # protobuf's JSON mapping writes enum names
        return {"STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}.get(code, 0)
    return int(code or 0)


def _any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, bytes):
        return {"bytesValue": base64.b64encode(value).decode()}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": _key_values(value)}}
    return {"stringValue": "" if value is None else str(value)}


def _key_values(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _any_value(v)} for k, v in attributes.items()]


def request_of_spans(spans: Iterable[Span]) -> dict[str, Any]:
    """Spans as one OTLP/JSON `ExportTraceServiceRequest` (what `spans_of_request` reads back
    into the same spans), one resource entry per distinct resource."""
    groups: dict[str, tuple[Mapping[str, Any], list[dict[str, Any]]]] = {}
    for s in spans:
        key = json.dumps(s.resource, sort_keys=True, default=str)
        out: dict[str, Any] = {
            "traceId": s.trace_id,
            "spanId": s.span_id,
            "name": s.name,
            "kind": s.kind,
            "startTimeUnixNano": str(s.start_ns),
            "endTimeUnixNano": str(s.end_ns),
            "attributes": _key_values(s.attributes),
            "status": {"code": s.status_code, "message": s.status_message},
        }
        if s.parent_id:
            out["parentSpanId"] = s.parent_id
        groups.setdefault(key, (s.resource, []))[1].append(out)
    return {
        "resourceSpans": [
            {"resource": {"attributes": _key_values(resource)}, "scopeSpans": [{"spans": group}]}
            for resource, group in groups.values()
        ]
    }


# -- OTLP protobuf ------------------------------------------------------------------------
def _proto_value(v: Any) -> Any:
    which = v.WhichOneof("value")
    if which == "array_value":
        return [_proto_value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _proto_value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, which) if which else None


def spans_of_request_proto(request: Any) -> Iterator[Span]:
    """The spans of one decoded protobuf `ExportTraceServiceRequest`."""
    for rs in request.resource_spans:
        resource = {kv.key: _proto_value(kv.value) for kv in rs.resource.attributes}
        for ss in rs.scope_spans:
            for s in ss.spans:
                yield Span(
                    trace_id=s.trace_id.hex(),
                    span_id=s.span_id.hex(),
                    parent_id=s.parent_span_id.hex(),
                    name=s.name,
                    start_ns=s.start_time_unix_nano,
                    end_ns=s.end_time_unix_nano,
                    attributes={kv.key: _proto_value(kv.value) for kv in s.attributes},
                    status_code=int(s.status.code),
                    status_message=s.status.message,
                    resource=resource,
                    kind=int(s.kind),
                )


def _proto_requests(path: Path, handle: Any, problems: ReadProblems) -> Iterator[Any]:
    """The requests of a protobuf file, read one at a time. The Collector's file exporter
    (format: proto) writes each request after a 4-byte big-endian length; a plain dump is one
    request (read whole: protobuf has no other way). A stream cut mid-request (a collector
    killed mid-write) keeps what came before, the cut request skipped and reported, as a cut
    JSON line is."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    def parse(data: bytes) -> Any:
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(data)
        except (DecodeError, RecursionError):
            return None
        return request

    size = os.fstat(handle.fileno()).st_size
    handle.seek(0)
    head = handle.read(4)
    first_size = struct.unpack(">I", head)[0] if len(head) == 4 else size
    # a stream: its first request parses whole where its length says; else a plain dump
    first = parse(handle.read(first_size)) if 4 + first_size <= size else None
    if first is not None and len(first.resource_spans):
        yield first
        offset, number = 4 + first_size, 2
        while head := handle.read(4):
            length = struct.unpack(">I", head)[0] if len(head) == 4 else None
            if length is None or offset + 4 + length > size:
                problems.add(
                    f"{path}: request {number} at byte {offset}: cut short (the file ends "
                    "inside it); skipped"
                )
                return
            request = parse(handle.read(length))
            if request is None:
                problems.add(
                    f"{path}: request {number} at byte {offset}: not an OTLP protobuf request; "
                    "it and the rest of the file skipped"
                )
                return
            yield request
            offset, number = offset + 4 + length, number + 1
        return
    handle.seek(0)
    request = parse(handle.read())
    if request is None or not request.resource_spans:
        raise InputError("neither OTLP JSON lines nor an OTLP protobuf export", file=str(path))
    yield request


def read_spans(path: Path | str, problems: ReadProblems | None = None) -> Iterator[Span]:
    """Every span of one trace file, in file order, streamed (a JSON lines file is never read
    whole). A damaged JSON line is skipped and added to `problems`; a file that is not OTLP at
    all is an `InputError` naming it."""
    path = Path(path)
    problems = problems if problems is not None else ReadProblems()
    with path.open("rb") as handle:
        head = handle.read(1)
        while head in (b" ", b"\n", b"\r", b"\t"):
            head = handle.read(1)
        if not head:
            return
        if head != b"{":
            for request in _proto_requests(path, handle, problems):
                yield from spans_of_request_proto(request)
            return
        handle.seek(0)
        good = 0
        for line_no, raw in enumerate(_lines(handle), start=1):
            if raw is None:
                problems.add(f"{path}:{line_no}: longer than {MAX_LINE_BYTES} bytes; skipped")
                continue
            if not raw.strip():
                continue
            try:
                request = json_loads(raw)
                if not isinstance(request, dict):
                    raise ValueError("not a JSON object")
                spans = list(spans_of_request(request))
            except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
                problems.add(
                    f"{path}:{line_no}: not an OTLP JSON line ({unreadable_why(exc)}); skipped"
                )
                continue
            good += 1
            yield from spans
        if not good and problems.skipped_lines:
            raise InputError(
                "no line is an OTLP JSON trace export "
                f"({problems.details[0] if problems.details else 'unreadable'})",
                file=str(path),
                line=1,
            )


def _lines(handle: Any) -> Iterator[bytes | None]:
    """Lines of a binary file, each bounded: an over-long line is yielded as None (and
    consumed without being kept)."""
    while True:
        line = handle.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while True:  # drop the rest of the line, a bounded chunk at a time
                rest = handle.readline(MAX_LINE_BYTES)
                if not rest or rest.endswith(b"\n"):
                    break
            yield None
            continue
        yield line


def unreadable_why(exc: BaseException) -> str:
    """Why a line or body is not an export request, in a few words."""
    if isinstance(exc, RecursionError):  # JSON nested past what any parser follows
        return "nested too deep to read"
    return _short(exc)


def _short(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= 120 else text[:117] + "..."
