"""OTLP settings shared by the config loader and the run's telemetry: where spans go and over
which transport, from config values and the standard `OTEL_EXPORTER_OTLP_*` variables."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from ..errors import ConfigError

__all__ = [
    "ENDPOINT_VARS",
    "PROTOCOLS",
    "endpoint_problem",
    "env_endpoint",
    "exporting_from_env",
    "resolve_protocol",
    "traces_url",
]

ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
PROTOCOLS = ("http/protobuf", "http/json")
"""The OTLP transports tracegrade sends; gRPC is not one of them."""
_PROTOCOL_VARS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")


def resolve_protocol(explicit: str | None = None, *, key: str = "/telemetry/protocol") -> str:
    """The protocol to send: `explicit` (a config key or flag) first, then the standard
    variables, else http/protobuf. Anything else is invalid input naming where it came from."""
    source, value = key, explicit
    if not value:
        for var in _PROTOCOL_VARS:
            if os.environ.get(var):
                source, value = var, os.environ[var].strip()
                break
    if not value:
        return "http/protobuf"
    if value not in PROTOCOLS:
        raise ConfigError(
            f"OTLP protocol {value!r} is not supported",
            key=source,
            hint="use http/protobuf (the default) or http/json",
        )
    return value


def endpoint_problem(url: str) -> str | None:
    """Why `url` cannot be an HTTP endpoint (no `http://` or `https://` scheme, no host), or
    None. `localhost:4318` would otherwise fail at the first export, after the run: exit 3 for
    what is a typo in the input."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https"):
        return f"{url!r} is not an http(s) URL: it has no http:// or https:// scheme"
    if not parts.netloc:
        return f"{url!r} names no host"
    return None


def exporting_from_env() -> bool:
    """An endpoint is set in the environment: spans will be exported even without config."""
    return any(os.environ.get(v) for v in ENDPOINT_VARS)


def env_endpoint() -> str:
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    return traces if traces else os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"]


def traces_url(endpoint: str) -> str:
    """A base URL (`http://collector:4318`) gets the traces path; a full one is kept."""
    path = urlsplit(endpoint).path
    return endpoint.rstrip("/") + "/v1/traces" if path in ("", "/") else endpoint
