"""Shared test setup. Fixtures that start real loopback services live in their own modules
(`tests/openai_server.py`, `tests/otlp_receiver.py`) and are imported by the tests using them;
Phoenix's (`tests/phoenix_server.py`) is a plugin here, so that one Phoenix serves the whole
session (its cold start costs ~17 s of CPU)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

pytest_plugins = ("tests.phoenix_server",)

# Offline by construction: nothing in the suite may reach an exporter configured by the
# environment of whoever runs it.
for _name in [n for n in os.environ if n.startswith("OTEL_")]:
    del os.environ[_name]

# Hypothesis times two things by the wall clock: each example (the deadline) and the drawing of
# inputs (the too_slow health check). On a loaded CI machine both fail tests whose behaviour is
# fine (test_scoring's grader specs took 1.07 s to draw at load 11 on 2 cores), so neither is a
# bound here; the examples and their shrinking are unchanged.
settings.register_profile("tracegrade", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("tracegrade")


@pytest.fixture
def spans():
    """A tracer on its own provider (never the global one) and the exporter holding its spans."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("test"), exporter
