"""Shared test setup. Fixtures that start real loopback services live in their own modules
(`tests/openai_server.py`, `tests/otlp_receiver.py`) and are imported by the tests using them."""

from __future__ import annotations

import os

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

# Offline by construction: nothing in the suite may reach an exporter configured by the
# environment of whoever runs it.
for _name in [n for n in os.environ if n.startswith("OTEL_")]:
    del os.environ[_name]


@pytest.fixture
def spans():
    """A tracer on its own provider (never the global one) and the exporter holding its spans."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("test"), exporter
