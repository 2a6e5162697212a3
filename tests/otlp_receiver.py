"""A real OTLP/HTTP trace receiver on loopback, for tests that check what arrives.

`from tests.otlp_receiver import otlp_receiver` and take the fixture: it starts the server on a
free port, yields an `OtlpReceiver` (`.endpoint`, `.spans()`, `.headers`, `.content_types`), and
stops it. It takes protobuf and OTLP/JSON; JSON is decoded here by hand from the OTLP/JSON
mapping (hex ids, `intValue` as strings), independently of tracegrade's own encoder and
converter. `accept_json = False` makes it answer 415 to JSON, as Phoenix does.
"""

from __future__ import annotations

import gzip
import json
import threading
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

__all__ = ["OtlpReceiver", "ReceivedSpan", "otlp_receiver"]


@dataclass
class ReceivedSpan:
    """One span as it arrived, with ids in hex and attributes decoded."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    attributes: dict[str, Any]
    status_code: int
    resource: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """(name, attributes) of each span event, in order."""


def _value(v: Any) -> Any:
    which = v.WhichOneof("value")
    if which == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, which) if which else None


class OtlpReceiver:
    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.json_requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.content_types: list[str] = []
        self.accept_json = True
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                encoding = self.headers.get("Content-Encoding", "")
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                content_type = self.headers.get("Content-Type", "")
                is_json = content_type.startswith("application/json")
                status = 200 if self.path == "/v1/traces" else 404
                with receiver._lock:
                    receiver.content_types.append(content_type)
                    receiver.headers.append({k.lower(): v for k, v in self.headers.items()})
                    if is_json and not receiver.accept_json:
                        status = 415
                    elif is_json:
                        receiver.json_requests.append(json.loads(body))
                    else:
                        request = ExportTraceServiceRequest()
                        request.ParseFromString(body)
                        receiver.requests.append(request)
                payload = b"{}" if is_json else ExportTraceServiceResponse().SerializeToString()
                self.send_response(status)
                self.send_header("Content-Type", content_type or "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def spans(self) -> list[ReceivedSpan]:
        out = []
        with self._lock:
            requests = list(self.requests)
            json_requests = list(self.json_requests)
        for data in json_requests:
            out.extend(_json_spans(data))
        for request in requests:
            for rs in request.resource_spans:
                resource = {kv.key: _value(kv.value) for kv in rs.resource.attributes}
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        out.append(
                            ReceivedSpan(
                                name=s.name,
                                trace_id=s.trace_id.hex(),
                                span_id=s.span_id.hex(),
                                parent_span_id=s.parent_span_id.hex(),
                                kind=s.kind,
                                attributes={kv.key: _value(kv.value) for kv in s.attributes},
                                status_code=s.status.code,
                                resource=resource,
                                events=[
                                    (e.name, {kv.key: _value(kv.value) for kv in e.attributes})
                                    for e in s.events
                                ],
                            )
                        )
        return out


def _json_value(v: dict[str, Any]) -> Any:
    if "arrayValue" in v:
        return [_json_value(x) for x in v["arrayValue"].get("values", [])]
    if "intValue" in v:
        return int(v["intValue"])
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    return None


def _json_spans(data: dict[str, Any]) -> list[ReceivedSpan]:
    out = []
    for rs in data.get("resourceSpans", []):
        resource = {
            kv["key"]: _json_value(kv["value"])
            for kv in rs.get("resource", {}).get("attributes", [])
        }
        for ss in rs.get("scopeSpans", []):
            for s in ss.get("spans", []):
                out.append(
                    ReceivedSpan(
                        name=s["name"],
                        trace_id=s["traceId"],
                        span_id=s["spanId"],
                        parent_span_id=s.get("parentSpanId", ""),
                        kind=s.get("kind", 0),
                        attributes={
                            kv["key"]: _json_value(kv["value"]) for kv in s.get("attributes", [])
                        },
                        status_code=s.get("status", {}).get("code", 0),
                        resource=resource,
                        events=[
                            (
                                e["name"],
                                {
                                    kv["key"]: _json_value(kv["value"])
                                    for kv in e.get("attributes", [])
                                },
                            )
                            for e in s.get("events", [])
                        ],
                    )
                )
    return out


@pytest.fixture
def otlp_receiver():
    receiver = OtlpReceiver().start()
    try:
        yield receiver
    finally:
        receiver.stop()
