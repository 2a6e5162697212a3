"""The record grade-traces (and receive) writes for each graded trace into the run's trace file
is written as JSON text directly; it must be the very OTLP document the dict-built encoding
makes (which `read_trial_records` reads back into the record), whatever the record holds:
quotes, non-ASCII, lone values of every type, failed calls, grades as events."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade import Outcome, ToolCall, ToolRecord
from tracegrade.capture.tracefile import graph_attributes, redacted_attributes
from tracegrade.otel import semconv as sc
from tracegrade.redaction import RedactionPolicy
from tracegrade.traces.dialects import AgentTrace
from tracegrade.traces.grade import record_line


def _kv(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    """The OTLP key-values as dicts: the reference the text is held to."""
    out = []
    for key, value in attributes.items():
        if value is None:
            continue
        if isinstance(value, bool):
            v: dict[str, Any] = {"boolValue": value}
        elif isinstance(value, int):
            v = {"intValue": str(value)}
        elif isinstance(value, float):
            v = {"doubleValue": value}
        elif isinstance(value, (list, tuple)):
            v = {"arrayValue": {"values": [{"stringValue": str(x)} for x in value]}}
        else:
            v = {"stringValue": str(value)}
        out.append({"key": key, "value": v})
    return out


def _reference(trace: AgentTrace, record: ToolRecord, events: list, policy: RedactionPolicy):
    root_id = trace.trace_id[-16:].rjust(16, "0")
    question = {
        sc.OI_SPAN_KIND: sc.OI_KIND_CHAIN,
        sc.GEN_AI_CONVERSATION_ID: sc.conversation_id(
            run_id="r", target="t", question_id="q", trial=2
        ),
        sc.TG_QUESTION_ID: "q",
        sc.AGENTEVALS_CASE_ID: "q",
        sc.TG_RUN_ID: "r",
        sc.TG_TRIAL: 2,
        sc.TG_TARGET: "t",
        sc.TG_RECORD_COMPLETE: record.complete,
        sc.TG_RECORD_PROBLEMS: list(record.problems) or None,
        sc.OI_INPUT_VALUE: trace.user_message,
        sc.OI_OUTPUT_VALUE: trace.answer,
        sc.TG_SOURCE_DIALECT: trace.dialect,
        sc.TG_SOURCE_ROOT_SPAN_ID: trace.root_span_id,
        sc.TG_TURN_STARTS: list(record.turn_starts) or None,
        **graph_attributes(record.nodes, record.offered, record.answer_ns),
    }
    spans: list[dict[str, Any]] = [
        {
            "traceId": trace.trace_id,
            "spanId": root_id,
            "name": sc.SPAN_QUESTION,
            "kind": 1,
            "startTimeUnixNano": str(trace.start_ns),
            "endTimeUnixNano": str(trace.end_ns),
            "attributes": _kv(redacted_attributes(question, policy=policy)),
            "status": {"code": 2 if trace.error else 0},
        }
    ]
    if events:
        spans[0]["events"] = [
            {
                "timeUnixNano": str(ns),
                "name": sc.GEN_AI_EVALUATION_RESULT,
                "attributes": _kv(redacted_attributes(attrs, policy=policy)),
            }
            for ns, attrs in events
        ]
    for n, call in enumerate(record):
        result = call.result
        text = isinstance(result, str) or result is None
        attributes = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
            sc.GEN_AI_TOOL_NAME: call.name,
            sc.GEN_AI_TOOL_CALL_ID: call.call_id,
            sc.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps(dict(call.arguments), ensure_ascii=False),
            sc.GEN_AI_TOOL_CALL_RESULT: result if text else json.dumps(result, ensure_ascii=False),
            sc.TG_RESULT_ENCODING: sc.RESULT_TEXT if text else sc.RESULT_JSON,
            sc.ERROR_TYPE: call.error_type,
            sc.TG_OUTCOME: call.outcome.value,
            sc.TG_SEQ: call.seq,
            sc.TG_QUALIFIED_ID: call.qualified_id,
            sc.TG_AGENT: call.agent,
            sc.TG_DEPTH: call.depth,
            sc.TG_MODEL_TURN: call.model_turn,
            sc.TG_INDEX_IN_TURN: call.index_in_turn,
        }
        status: dict[str, Any] = {"code": 2 if call.outcome.value == "error" else 0}
        if call.error_message:
            status["message"] = policy.text(call.error_message)
        spans.append(
            {
                "traceId": trace.trace_id,
                "spanId": call.span_id or f"{n + 1:016x}",
                "parentSpanId": root_id,
                "name": f"{sc.SPAN_EXECUTE_TOOL} {call.name}",
                "kind": 1,
                "startTimeUnixNano": str(call.start_ns),
                "endTimeUnixNano": str(call.end_ns),
                "attributes": _kv(redacted_attributes(attributes, policy=policy)),
                "status": status,
            }
        )
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _kv({"service.name": "tracegrade"})},
                "scopeSpans": [{"scope": {"name": "tracegrade.traces"}, "spans": spans}],
            }
        ]
    }


_TEXT = st.text(max_size=12)
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), _TEXT)


@st.composite
def _calls(draw) -> ToolCall:
    failed = draw(st.booleans())
    return ToolCall(
        seq=draw(st.integers(0, 5)),
        name=draw(_TEXT),
        qualified_id=draw(_TEXT),
        call_id=draw(st.none() | _TEXT),
        arguments=draw(st.dictionaries(_TEXT, _SCALAR, max_size=3)),
        outcome=Outcome.ERROR if failed else Outcome.OK,
        error_type=draw(st.none() | _TEXT) if failed else None,
        error_message=draw(st.none() | _TEXT) if failed else None,
        result=draw(st.none() | _TEXT | st.lists(_SCALAR, max_size=3)),
        agent=draw(_TEXT),
        depth=draw(st.integers(0, 3)),
        model_turn=draw(st.none() | st.integers(0, 3)),
        index_in_turn=draw(st.none() | st.integers(0, 3)),
        span_id=draw(st.none() | st.sampled_from(["00000000000000aa", "bb" * 8])),
        start_ns=draw(st.integers(0, 2**63 - 1)),
        end_ns=draw(st.integers(0, 2**63 - 1)),
    )


@settings(max_examples=150, deadline=None)
@given(
    calls=st.lists(_calls(), max_size=3),
    user=st.none() | _TEXT,
    answer=_TEXT,
    error=st.none() | _TEXT,
    problems=st.lists(_TEXT, max_size=2),
    turn_starts=st.lists(st.integers(0, 9), max_size=3),
    events=st.lists(
        st.tuples(st.integers(0, 2**63), st.dictionaries(_TEXT, _SCALAR, max_size=3)), max_size=3
    ),
    secret=st.booleans(),
)
def test_the_record_line_is_the_otlp_document_of_the_dict_built_encoding(
    calls, user, answer, error, problems, turn_starts, events, secret
):
    record = ToolRecord(calls, complete=not problems, problems=problems, turn_starts=turn_starts)
    trace = AgentTrace(
        trace_id="0af7651916cd43dd8448eb211c80319c",
        dialect="genai",
        record=record,
        question_id=None,
        conversation_id=None,
        user_message=user,
        answer=answer,
        error=error,
        error_type=None,
        start_ns=1,
        end_ns=2,
        span_count=1 + len(calls),
        root_span_id="8448eb211c80319c",
    )
    policy = RedactionPolicy.from_config({"patterns": ["[0-9]{3,}"]} if secret else None)
    line = record_line(
        trace,
        record,
        run_id="r",
        target="t",
        question_id="q",
        trial=2,
        policy=policy,
        events=events,
    )
    assert "\n" not in line
    expected = _reference(trace, record, events, policy)
    # NaN is never equal to itself: compared as the text json.dumps writes for it
    assert _nan_free(json.loads(line)) == _nan_free(expected)


def _nan_free(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dict):
        return {k: _nan_free(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nan_free(v) for v in value]
    return value
