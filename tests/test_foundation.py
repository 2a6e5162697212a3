"""The shared types every layer relies on: exit codes, result construction, scale mapping,
name matching and order in the record."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracegrade import (
    ConfigError,
    DatasetError,
    ExitCode,
    Grader,
    GradeResult,
    JudgeError,
    NothingToRunError,
    Outcome,
    ProviderError,
    ToolCall,
    ToolRecord,
    TracegradeError,
    map_to_composite,
)
from tracegrade.records import scale_label


def test_exit_codes_match_the_design_table():
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 4, 5]
    assert DatasetError("x").exit_code == 4
    assert ConfigError("x").exit_code == 4
    assert JudgeError("x").exit_code == 3
    assert ProviderError("x").exit_code == 3
    assert NothingToRunError("x").exit_code == 5
    assert TracegradeError("x").exit_code == 1


def test_error_renders_its_context():
    err = DatasetError(
        "unknown key",
        file="d.yaml",
        line=7,
        key="/questions/0/x",
        question_id="q1",
        hint="did you mean y?",
    )
    assert str(err) == "d.yaml:7: question 'q1': at /questions/0/x: unknown key (did you mean y?)"


class Binary(Grader):
    id = "binary_test"
    label = "Binary"
    min_score = 0.0
    max_score = 1.0

    def grade(self, input, response, context):
        return self.result(float(context["raw"]), "raw")


def test_result_helper_stamps_id_and_scale_and_clamps():
    grader = Binary()
    high = grader.grade("", "", {"raw": 7})
    assert (high.grader_id, high.score, high.min_score, high.max_score) == (
        "binary_test",
        1.0,
        0.0,
        1.0,
    )
    assert grader.grade("", "", {"raw": -3}).score == 0.0
    skip = grader.result(None, "no expected_tools in context, skipping")
    assert skip.skipped and not skip.error and skip.mapped_score is None
    err = grader.result(None, "provider returned no usable answer", True)
    assert err.error and not err.skipped


def test_result_helper_refuses_nonsense():
    with pytest.raises(ValueError):
        Binary().result(1.0, "both", True)
    with pytest.raises(ValueError):
        Binary().result(math.nan, "nan")


def test_async_twin_is_derived_from_grade():
    import asyncio

    result = asyncio.run(Binary().agrade("", "", {"raw": 1}))
    assert result.score == 1.0


@pytest.mark.parametrize(
    ("score", "lo", "hi", "mapped"),
    [(4.0, 0, 5, 4.0), (1.0, 0, 1, 5.0), (0.0, 0, 1, 0.0), (50, 0, 100, 2.5), (3, 1, 5, 2.5)],
)
def test_scale_mapping(score, lo, hi, mapped):
    assert map_to_composite(score, lo, hi) == pytest.approx(mapped)


def test_scale_labels():
    # "binary" only for a grader that answers pass/fail; a continuous 0-1 score is not binary.
    assert scale_label(0.0, 1.0, binary=True) == "(binary, 0-1)"
    assert scale_label(0.0, 1.0) == "(0-1)"
    assert scale_label(0.0, 5.0) == "(0-5)"
    result = GradeResult(grader_id="g", score=1.0, reason="", min_score=0.0, max_score=1.0)
    assert result.scale_label == "(0-1)" and result.mapped_score == 5.0
    passfail = GradeResult(
        grader_id="g", score=1.0, reason="", min_score=0.0, max_score=1.0, details={"binary": True}
    )
    assert passfail.scale_label == "(binary, 0-1)"


def call(seq, name, *, agent="desk", turn=None, index=0, start=0, end=0, depth=0):
    return ToolCall(
        seq=seq,
        name=name,
        qualified_id=f"{agent}:{name}",
        call_id=f"c{seq}",
        arguments={},
        outcome=Outcome.OK,
        agent=agent,
        depth=depth,
        model_turn=turn,
        index_in_turn=index,
        start_ns=start,
        end_ns=end,
    )


def test_names_match_function_name_or_qualified_id():
    c = call(0, "list_modules", agent="ai_agent")
    assert c.matches("list_modules")
    assert c.matches("ai_agent:list_modules")
    assert not c.matches("other:list_modules")
    # a name with a colon can only be a qualified id
    odd = ToolCall(
        seq=1, name="a:b", qualified_id="x:y", call_id=None, arguments={}, outcome=Outcome.OK
    )
    assert not odd.matches("a:b")


def test_happened_before_uses_model_turns_then_span_times():
    first = call(1, "lookup", turn=0, start=10, end=50)
    parallel = call(0, "other", turn=0, index=1, start=5, end=60)
    later = call(2, "book", turn=1, start=70, end=80)
    assert ToolRecord.happened_before(first, later)
    assert not ToolRecord.happened_before(later, first)
    # same model message: neither result was available when the other was requested
    assert not ToolRecord.happened_before(first, parallel)
    assert not ToolRecord.happened_before(parallel, first)
    # different agents: fall back to span times
    sub = call(3, "search", agent="researcher", turn=0, start=55, end=65, depth=1)
    assert ToolRecord.happened_before(first, sub)
    assert not ToolRecord.happened_before(sub, first)


def test_record_orders_by_request_not_start():
    a = call(0, "b_started_first", turn=0, index=1, start=1)
    b = call(1, "a_requested_first", turn=0, index=0, start=2)
    record = ToolRecord([b, a])
    assert [c.seq for c in record] == [0, 1]
    assert [c.name for c in record.requested_order()] == ["a_requested_first", "b_started_first"]
    assert record.first_requested(record.calls_of("b_started_first")).seq == 0
    assert record.first_requested([]) is None


def test_empty_record_is_not_absent():
    empty = ToolRecord([])
    assert len(empty) == 0 and empty is not None and empty.complete


@given(st.floats(min_value=0, max_value=1))
def test_binary_scale_maps_linearly_onto_composite(x):
    assert map_to_composite(x, 0.0, 1.0) == pytest.approx(5 * x)
