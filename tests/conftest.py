"""Shared test setup. Fixtures that start real loopback services live in their own modules
(`tests/openai_server.py`, `tests/otlp_receiver.py`) and are imported by the tests using them."""

from __future__ import annotations

import os

# Offline by construction: nothing in the suite may reach an exporter configured by the
# environment of whoever runs it.
for _name in [n for n in os.environ if n.startswith("OTEL_")]:
    del os.environ[_name]
