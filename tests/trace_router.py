"""A trace-id-routing OTLP/HTTP sender, as the OpenTelemetry Collector's `loadbalancing`
exporter with `routing_key: traceID` sends: each export request is split by trace id and every
span of one trace goes to the same one of several receivers, whichever request carries it.

`TraceRouter(endpoints).send(request)` takes an OTLP/JSON request (hex ids), posts each
receiver its share (resource and scope kept) and returns how many spans went to each.
"""

from __future__ import annotations

import hashlib
from typing import Any

import httpx

__all__ = ["TraceRouter", "backend_of"]


def backend_of(trace_id: str, backends: int) -> int:
    """The receiver (0-based) of a trace: a hash of its id alone (the Collector's ring is
    another hash; what matters is that one trace always goes to one receiver)."""
    digest = hashlib.sha256(bytes.fromhex(trace_id)).digest()
    return int.from_bytes(digest[:8], "big") % backends


class TraceRouter:
    def __init__(self, endpoints: list[str]) -> None:
        self.endpoints = endpoints
        self.sent = [0] * len(endpoints)
        self.client = httpx.Client(timeout=60)

    def send(self, request: dict[str, Any]) -> list[int]:
        shares: list[dict[str, Any]] = [{"resourceSpans": []} for _ in self.endpoints]
        counts = [0] * len(self.endpoints)
        for rs in request.get("resourceSpans", []):
            per: dict[int, dict[str, Any]] = {}
            for ss in rs.get("scopeSpans", []):
                for span in ss.get("spans", []):
                    k = backend_of(span["traceId"], len(self.endpoints))
                    resource = per.setdefault(
                        k, {"resource": rs.get("resource", {}), "scopeSpans": []}
                    )
                    scopes = resource["scopeSpans"]
                    if not scopes or scopes[-1]["scope"] != ss.get("scope", {}):
                        scopes.append({"scope": ss.get("scope", {}), "spans": []})
                    scopes[-1]["spans"].append(span)
                    counts[k] += 1
            for k, resource in per.items():
                shares[k]["resourceSpans"].append(resource)
        for k, share in enumerate(shares):
            if counts[k]:
                response = self.client.post(self.endpoints[k], json=share)
                response.raise_for_status()
                self.sent[k] += counts[k]
        return counts

    def close(self) -> None:
        self.client.close()
