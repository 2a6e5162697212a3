"""Values JSON cannot carry as they are never lose a batch of the trace file: lone surrogates
are replaced, non-finite floats are OTLP JSON's quoted strings, integers beyond int64 become
strings, and a write that fails anyway is counted, never silent."""

from __future__ import annotations

import json
import math

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tracegrade import RunTelemetry
from tracegrade.capture.tracefile import TraceFileExporter

LONE = json.loads('"\\ud83d"')


def _strict(line: str) -> dict:
    def refuse(name):
        raise AssertionError(f"bare {name} in the trace file")

    return json.loads(line, parse_constant=refuse)


def test_hostile_values_are_written_safely(tmp_path):
    path = tmp_path / "t.jsonl"
    exporter = TraceFileExporter(path)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("s") as span:
        span.set_attribute("text", f"before {LONE} after")
        span.set_attribute("nan", math.nan)
        span.set_attribute("inf", -math.inf)
        span.set_attribute("big", 2**70)
        span.set_attribute("small", -(2**63))
    provider.shutdown()
    assert exporter.written == 1 and exporter.failed == 0
    raw = path.read_bytes().decode("utf-8")  # valid UTF-8: no surrogate reached the file
    (span_json,) = _strict(raw)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    values = {kv["key"]: kv["value"] for kv in span_json["attributes"]}
    text = values["text"]["stringValue"]  # the surrogate replaced, the text around it kept
    assert text.startswith("before ") and text.endswith(" after") and len(text) == 14
    assert values["nan"] == {"doubleValue": "NaN"}
    assert values["inf"] == {"doubleValue": "-Infinity"}
    assert values["big"] == {"stringValue": str(2**70)}
    assert values["small"] == {"intValue": str(-(2**63))}


def test_a_failed_write_is_counted_in_the_report(tmp_path):
    telemetry = RunTelemetry(trace_file=tmp_path / "t.jsonl")
    with telemetry.tracer.start_as_current_span("s"):
        pass
    telemetry._file_exporter._file.close()  # the disk went away under the run
    with telemetry.tracer.start_as_current_span("s2"):
        pass
    report = telemetry.shutdown()
    assert report.trace_file_failed >= 1
    assert report.trace_file_failure


def test_a_run_whose_tool_returns_a_lone_surrogate_keeps_its_record(tmp_path):
    from tests.runs_support import write_project
    from tracegrade import load_config, regrade_run, start_run

    path = write_project(tmp_path, questions=["paris"])
    agent = tmp_path / "agent.py"
    agent.write_text(
        agent.read_text().replace(
            'return f"sunny in {city}"', 'return "sunny in " + city + " \\ud83d " + str(2**70)'
        )
    )
    config = load_config(path)
    outcome = start_run(config)
    assert outcome.exit_code == 0 and outcome.lost_spans == 0, outcome.notes
    again = regrade_run(config, outcome.run_id)
    assert again.exit_code == 0 and again.targets[0].questions[0].composite == 5.0


def test_failed_trace_file_writes_make_the_run_incomplete(tmp_path, monkeypatch):
    from tests.runs_support import write_project
    from tracegrade import load_config, start_run
    from tracegrade.capture import tracefile

    def broken(*args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(tracefile, "encode_line", broken)
    outcome = start_run(load_config(write_project(tmp_path, questions=["paris"])))
    assert outcome.lost_spans > 0
    assert outcome.exit_code == 3
    assert any("No space left on device" in n for n in outcome.notes)
