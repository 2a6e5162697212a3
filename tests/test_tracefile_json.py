"""The run's trace file is read with `json_loads` (orjson where it reads the same, else the
standard library): every record, and every problem, is what reading it with `json.loads`
gave, whatever the lines and the arguments hold (NaN, integers past 64 bits, lone surrogate
escapes, nesting too deep, damaged lines)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade.capture import tracefile
from tracegrade.otel import semconv as sc

TRACE = "0123456789abcdef0123456789abcdef"

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8)
    | st.sampled_from(["\ud800", "\udfff x", "é€𝄞"])
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)


def _value(v: object) -> dict:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    return {"stringValue": str(v)}


def _span(name: str, start: int, attrs: dict) -> dict:
    return {
        "traceId": TRACE,
        "spanId": f"{start:016x}",
        "name": name,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 5),
        "attributes": [{"key": k, "value": _value(v)} for k, v in attrs.items()],
    }


def _call(seq: int, arguments: str, result: str | None) -> dict:
    attrs = {
        sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
        sc.GEN_AI_TOOL_NAME: "lookup",
        sc.GEN_AI_TOOL_CALL_ID: f"c{seq}",
        sc.TG_SEQ: seq,
        sc.TG_OUTCOME: "ok",
        sc.GEN_AI_TOOL_CALL_ARGUMENTS: arguments,
    }
    if result is not None:
        attrs[sc.GEN_AI_TOOL_CALL_RESULT] = result
        attrs[sc.TG_RESULT_ENCODING] = sc.RESULT_JSON
    return _span("execute_tool lookup", 10 + seq, attrs)


def _line(spans: list[dict]) -> str:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}, ensure_ascii=False)


texts = _values.map(lambda v: json.dumps({"v": v})) | st.sampled_from(
    ['{"deep": ' + "[" * 1100 + "]" * 1100 + "}", '{"a": 1, "a": 2}', "{not json", '"text"']
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(texts, st.none() | texts), min_size=1, max_size=4),
    st.sampled_from(["", "{broken " + TRACE, '{"resourceSpans": 5}', "[1, 2]"]),
)
def test_the_trace_file_reads_as_json_loads_read_it(tmp_path_factory, calls, damaged):
    question = _span(sc.SPAN_QUESTION, 1, {sc.TG_QUESTION_ID: "q1", sc.TG_RECORD_COMPLETE: True})
    lines = [_line([question]), *(_line([_call(i, a, r)]) for i, (a, r) in enumerate(calls))]
    if damaged:
        lines.insert(1, damaged)
    path = tmp_path_factory.mktemp("trace") / "desk.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")

    def read() -> tuple[str, list[str]]:
        unreadable: list[str] = []
        runs = tracefile.read_question_runs(path, unreadable=unreadable)
        return repr(sorted(runs.items())), unreadable  # repr: a NaN equals itself

    fast = read()
    saved = tracefile.json_loads
    tracefile.json_loads = json.loads  # the reference: the standard library alone
    try:
        assert fast == read()
    finally:
        tracefile.json_loads = saved
