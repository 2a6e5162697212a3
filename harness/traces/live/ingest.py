"""One OTLP/HTTP trace export request, as the OTLP specification has a receiver handle it:
decoded (JSON or protobuf, plain or gzip), bounded in size, and answered.

- `Content-Type: application/x-protobuf` or `application/json` (parameters such as
  `charset` allowed); anything else is 415 Unsupported Media Type.
- `Content-Encoding: gzip` is inflated, bounded: a body that inflates past the limit is 413,
  never held whole. Other encodings are 415.
- A body that does not decode as an `ExportTraceServiceRequest` is 400, with a
  `google.rpc.Status` naming the problem, in the request's encoding.
- Success is 200 with an `ExportTraceServiceResponse` in the request's encoding; spans the
  receiver did not keep are its `partial_success` (`rejected_spans`, `error_message`).
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from ..spans import Span, spans_of_request, spans_of_request_proto, unreadable_why

__all__ = [
    "JSON",
    "MAX_BODY_BYTES",
    "PROTOBUF",
    "BadRequest",
    "decode_request",
    "error_body",
    "inflate",
    "media_type",
    "success_body",
]

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
MAX_BODY_BYTES = 32 * 1024 * 1024
"""The largest request body (after gzip is inflated) a receiver accepts by default; a larger
one is 413. The Collector's OTLP exporter sends batches of a few MB at most."""


class BadRequest(Exception):
    """A request the receiver refuses: its HTTP status and a message for the sender."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def media_type(content_type: str | None) -> str:
    """The request's OTLP encoding (`PROTOBUF` or `JSON`); 415 for anything else."""
    base = (content_type or "").split(";", 1)[0].strip().lower()
    if base in (PROTOBUF, JSON):
        return base
    raise BadRequest(
        415,
        f"unsupported Content-Type {content_type or '(none)'!r}: OTLP/HTTP is {PROTOBUF} or {JSON}",
    )


def inflate(body: bytes, encoding: str | None, *, limit: int = MAX_BODY_BYTES) -> bytes:
    """The body with its `Content-Encoding` undone (gzip or none), at most `limit` bytes."""
    coding = (encoding or "identity").strip().lower()
    if coding in ("", "identity"):
        return body
    if coding not in ("gzip", "x-gzip"):
        raise BadRequest(415, f"unsupported Content-Encoding {encoding!r}: gzip or none")
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise BadRequest(400, f"the gzip body does not inflate: {exc}") from None
    if len(out) > limit:
        raise BadRequest(413, f"the body inflates past {limit} bytes")
    if not inflater.eof:
        raise BadRequest(400, "the gzip body is truncated")
    return out


def decode_request(body: bytes, kind: str) -> list[Span]:
    """Every span of one export request body; `BadRequest(400)` when it is not one."""
    if kind == JSON:
        try:
            request = json.loads(body) if body.strip() else {"resourceSpans": []}
            if not isinstance(request, dict):
                raise ValueError("not a JSON object")
            if "resourceSpans" not in request:  # `{}` is an empty export, as in protobuf
                request = {"resourceSpans": [], **request}
            return list(spans_of_request(request))
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            why = unreadable_why(exc)
            raise BadRequest(400, f"not an OTLP/JSON ExportTraceServiceRequest: {why}") from None
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
        return list(spans_of_request_proto(request))
    except (DecodeError, ValueError, TypeError, RecursionError) as exc:
        why = unreadable_why(exc)
        raise BadRequest(400, f"not a protobuf ExportTraceServiceRequest: {why}") from None


def success_body(kind: str, *, rejected: int = 0, message: str = "") -> bytes:
    """An `ExportTraceServiceResponse`; `rejected` spans make it a partial success."""
    if kind == JSON:
        if not rejected and not message:
            return b"{}"
        partial: dict[str, Any] = {"rejectedSpans": str(rejected)}
        if message:
            partial["errorMessage"] = message
        return json.dumps({"partialSuccess": partial}).encode()
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceResponse,
    )

    response = ExportTraceServiceResponse()
    if rejected or message:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    return bytes(response.SerializeToString())


def error_body(kind: str | None, status: int, message: str) -> tuple[bytes, str]:
    """A `google.rpc.Status` for a refused request, in its encoding (JSON when it had none we
    speak), and the media type to send it as."""
    code = {400: 3, 401: 16, 413: 8, 415: 3, 429: 8, 503: 14}.get(status, 2)
    if kind == PROTOBUF:
        from google.rpc.status_pb2 import Status  # type: ignore[import-untyped]

        return bytes(Status(code=code, message=message).SerializeToString()), PROTOBUF
    return json.dumps({"code": code, "message": message}).encode(), JSON
