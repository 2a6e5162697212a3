"""`receive --forward`: the spans forwarded carry tracegrade's grades as
`gen_ai.evaluation.result` events on the root span they judged, read back by a real OTLP
receiver on loopback (protobuf and gzipped JSON); a trace whose grade does not come within
`--forward-wait` goes marked ungraded, counted in the monitor run."""

from __future__ import annotations

import gzip
import json

import httpx
import pytest

from tests.loopback_timeout import LOOPBACK_TIMEOUT_S
from tests.otlp_receiver import otlp_receiver  # noqa: F401 (a fixture)
from tests.test_grade_traces import _project
from tests.test_receive import _graded, _trace, _wait_for, _without_root, receiving
from tracegrade.capture.otlp_http import json_to_protobuf
from tracegrade.otel import semconv as sc
from tracegrade.traces.live.assembly import Limits
from tracegrade.traces.live.forwarding import with_verdicts
from tracegrade.traces.live.ingest import JSON, PROTOBUF


def _roots(sink, trace_id):
    return [s for s in sink.spans() if s.trace_id == trace_id and not s.parent_span_id]


def _evaluations(span) -> dict[str, dict]:
    return {
        a[sc.GEN_AI_EVALUATION_NAME]: a
        for name, a in span.events
        if name == sc.GEN_AI_EVALUATION_RESULT
    }


@pytest.mark.parametrize("workers", [0, 2])  # graded in the receiver, or by grading workers
def test_forwarded_root_spans_carry_the_grades_in_both_encodings(
    tmp_path,
    otlp_receiver,  # noqa: F811
    workers,
):
    config = _project(tmp_path / "proj")
    sink = otlp_receiver
    proto_id, json_id, failing_id = "1" * 32, "2" * 32, "3" * 32
    forward = f"{sink.endpoint}/v1/traces"
    with receiving(config, forward=forward, forward_wait_s=30.0, workers=workers) as (
        receiver,
        url,
    ):
        children, root = _without_root(_trace(proto_id))
        # the children go at once (they carry no verdict), the root waits for its grade
        proto = {"content-type": "application/x-protobuf"}
        assert httpx.post(
            url, content=json_to_protobuf(children), headers=proto, timeout=LOOPBACK_TIMEOUT_S
        ).is_success
        assert httpx.post(
            url, content=json_to_protobuf(root), headers=proto, timeout=LOOPBACK_TIMEOUT_S
        ).is_success
        zipped = gzip.compress(json.dumps(_trace(json_id)).encode())
        headers = {"content-type": "application/json", "content-encoding": "gzip"}
        assert httpx.post(
            url, content=zipped, headers=headers, timeout=LOOPBACK_TIMEOUT_S
        ).is_success
        assert httpx.post(
            url, json=_trace(failing_id, "cancel", tool="lookup"), timeout=LOOPBACK_TIMEOUT_S
        ).is_success
        _wait_for(lambda: receiver.counts["forwarded"] == 4)
    assert _graded(receiver) == 3
    stored = {q.trace_id: q for t in receiver.outcome.targets for q in t.questions}
    for trace_id in (proto_id, json_id, failing_id):
        (span,) = _roots(sink, trace_id)
        found = _evaluations(span)
        question = stored[trace_id]
        # one event per grader that concluded, and the question's verdict
        assert set(found) == {g.grader_id for g in question.graders} | {"tracegrade"}
        for g in question.graders:
            event = found[g.grader_id]
            assert event[sc.GEN_AI_EVALUATION_SCORE_VALUE] == float(g.score)
            assert event[sc.GEN_AI_EVALUATION_SCORE_LABEL] == ("pass" if g.passed else "fail")
            assert event[sc.TG_EVALUATION_KIND] in ("code", "llm")
        assert sc.TG_EVALUATION_STATUS not in span.attributes
    verdicts = {t: _evaluations(_roots(sink, t)[0])["tracegrade"] for t in stored}
    assert verdicts[proto_id][sc.GEN_AI_EVALUATION_SCORE_LABEL] == "pass"
    assert verdicts[failing_id][sc.GEN_AI_EVALUATION_SCORE_LABEL] == "fail"
    # every span arrived once, only root spans carry events
    assert len(sink.spans()) == 3 * 4
    assert all(not s.events for s in sink.spans() if s.parent_span_id)
    assert receiver.counts["forwarded_graded"] == 3 and not receiver.counts["forwarded_ungraded"]


def test_a_grade_later_than_the_wait_forwards_ungraded_and_says_so(tmp_path, otlp_receiver):  # noqa: F811
    config = _project(tmp_path / "proj")
    sink = otlp_receiver
    # the trace is graded after a 2 s quiet period; forwarding waits 0.1 s
    with receiving(
        config,
        forward=f"{sink.endpoint}/v1/traces",
        forward_wait_s=0.1,
        limits=Limits(quiet_s=2.0),
    ) as (receiver, url):
        assert httpx.post(url, json=_trace("4" * 32), timeout=LOOPBACK_TIMEOUT_S).is_success
        _wait_for(lambda: receiver.counts["forwarded"] == 1)
        (span,) = _roots(sink, "4" * 32)
        assert span.attributes[sc.TG_EVALUATION_STATUS] == "ungraded"
        assert not span.events
        _wait_for(lambda: _graded(receiver) == 1)
    assert receiver.counts["forwarded_ungraded"] == 1
    notes = " ".join(receiver.outcome.notes)
    assert "1 traces forwarded before their grade (marked ungraded)" in notes


def test_forward_wait_zero_forwards_every_request_unchanged(tmp_path, otlp_receiver):  # noqa: F811
    config = _project(tmp_path / "proj")
    body = json.dumps(_trace("5" * 32)).encode()
    with receiving(config, forward=f"{otlp_receiver.endpoint}/v1/traces", forward_wait_s=0) as (
        receiver,
        url,
    ):
        assert httpx.post(
            url, content=body, headers={"content-type": JSON}, timeout=LOOPBACK_TIMEOUT_S
        ).is_success
        _wait_for(lambda: receiver.counts["forwarded"] == 1 and _graded(receiver) == 1)
    assert otlp_receiver.json_requests == [json.loads(body)]


def test_with_verdicts_adds_events_only_to_the_named_traces_roots():
    request = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {"traceId": "a" * 32, "spanId": "1" * 16, "name": "root a"},
                            {
                                "traceId": "a" * 32,
                                "spanId": "2" * 16,
                                "parentSpanId": "1" * 16,
                                "name": "child",
                            },
                            {"traceId": "b" * 32, "spanId": "3" * 16, "name": "root b"},
                            {"traceId": "c" * 32, "spanId": "4" * 16, "name": "root c"},
                        ]
                    }
                ]
            }
        ]
    }
    event = {
        "timeUnixNano": "5",
        "name": sc.GEN_AI_EVALUATION_RESULT,
        "attributes": [{"key": sc.GEN_AI_EVALUATION_SCORE_VALUE, "value": {"doubleValue": 4.0}}],
    }
    for kind, body in (
        (JSON, json.dumps(request).encode()),
        (PROTOBUF, json_to_protobuf(request)),
    ):
        out = with_verdicts(body, kind, {"a" * 32: [event]}, ["b" * 32])
        from google.protobuf import json_format
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        if kind == JSON:
            spans = json.loads(out)["resourceSpans"][0]["scopeSpans"][0]["spans"]
        else:
            message = json_format.MessageToDict(ExportTraceServiceRequest.FromString(out))
            spans = message["resourceSpans"][0]["scopeSpans"][0]["spans"]
        by_name = {s["name"]: s for s in spans}
        assert [e["name"] for e in by_name["root a"]["events"]] == [sc.GEN_AI_EVALUATION_RESULT]
        assert "events" not in by_name["child"] and "events" not in by_name["root c"]
        assert by_name["root b"]["attributes"] == [
            {"key": sc.TG_EVALUATION_STATUS, "value": {"stringValue": "ungraded"}}
        ]
        assert "attributes" not in by_name["root c"] or not by_name["root c"]["attributes"]
