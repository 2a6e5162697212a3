"""The grader context: the row plus reserved keys that always win; absent vs empty records."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade import RunRecord, SQLiteEnvironment, ToolRecord
from tracegrade.graders import build_context
from tracegrade.graders.context import RESERVED_KEYS

ROW = {
    "id": "q1",
    "input": "How many?",
    "criteria": "from the row",
    "expected_tools": [{"tool": "a", "should_run": True}],
    "metadata": {"state": {"assertions": []}},
    # a row may carry same-named keys; the runner's always win (or are removed)
    "response_char_limit": 5,
    "messages": "not these",
    "tool_calls": [{"function_name": "forged"}],
    "environment": "forged",
    "run_record": "forged",
}


def test_reserved_keys_win_and_row_keys_survive():
    context = build_context(
        ROW, messages=[{"role": "user", "content": "How many?"}], response_char_limit=300
    )
    assert context["response_char_limit"] == 300
    assert context["messages"] == [{"role": "user", "content": "How many?"}]
    assert context["criteria"] == "from the row"
    assert context["expected_tools"] == ROW["expected_tools"]
    for key in ("tool_calls", "environment", "run_record"):
        assert key not in context


def test_absent_record_vs_empty_record():
    assert "tool_calls" not in build_context({"id": "q"}, messages=[])
    empty = ToolRecord([])
    context = build_context({"id": "q"}, messages=[], tool_calls=empty)
    assert "tool_calls" in context and context["tool_calls"] is empty and len(empty) == 0


def test_criteria_override_and_defaults():
    context = build_context(
        ROW, messages=[], criteria="merged with rubric text", response_char_limit=None
    )
    assert context["criteria"] == "merged with rubric text"
    assert context["response_char_limit"] == 4000
    assert build_context({"id": "q"}, messages=[])["response_char_limit"] == 4000
    assert "criteria" not in build_context({"id": "q"}, messages=[])


def test_environment_and_run_record_only_when_given():
    with SQLiteEnvironment() as env:
        record = RunRecord(question_id="q1")
        context = build_context({"id": "q"}, messages=[], environment=env, run_record=record)
        assert context["environment"] is env and context["run_record"] is record


def test_row_is_copied_so_graders_cannot_alter_the_dataset():
    context = build_context(ROW, messages=[])
    context["expected_tools"][0]["tool"] = "changed"
    context["metadata"]["state"]["assertions"].append(1)
    assert ROW["expected_tools"][0]["tool"] == "a"
    assert ROW["metadata"]["state"]["assertions"] == []


def test_tool_calls_must_be_a_record():
    with pytest.raises(TypeError, match="ToolRecord"):
        build_context({"id": "q"}, messages=[], tool_calls=[])  # type: ignore[arg-type]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=4), inner, max_size=4)
        | st.tuples(inner, inner)
    ),
    max_leaves=20,
)


def _containers(value, out):
    if isinstance(value, dict | list):
        out.append(value)
        for v in value.values() if isinstance(value, dict) else value:
            _containers(v, out)
    return out


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=6), _json, max_size=5))
def test_the_row_copy_is_equal_and_shares_nothing_mutable(row):
    row = {k: v for k, v in row.items() if k not in RESERVED_KEYS}
    context = build_context(row, messages=[])
    assert {k: context[k] for k in row} == row
    theirs = {id(c) for c in _containers(row, [])}
    assert not any(id(c) in theirs for c in _containers({k: context[k] for k in row}, []))
