"""Capture (floor 2): the recorder that turns LangChain callbacks into the tool-call record and
its spans, the tracer provider and exporters of a run, and the run's local trace file.

Deliberately empty: `tracegrade.capture.tracefile` (read by `tracegrade grade`) must not pull in
LangChain through the recorder. Import from the modules, or from the `harness` facade."""
