"""tool_usage_grader: the rules of seeds 000/004 as cases, golden reasons, and the property that
a verdict never depends on the order of `expected_tools`."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade import Outcome, ToolCall, ToolRecord
from tracegrade.graders import FALLBACK_MARKER, ToolUsageGrader, build_context
from tracegrade.graders.tool_usage import args_match, same_scalar, scrape_tool_markers

GRADER = ToolUsageGrader()


def call(
    name,
    seq,
    *,
    turn=None,
    index=0,
    args=None,
    outcome=Outcome.OK,
    agent="desk",
    depth=0,
    start=None,
    end=None,
):
    start = seq * 10 + 1 if start is None else start
    return ToolCall(
        seq=seq,
        name=name,
        qualified_id=f"{agent}:{name}",
        call_id=f"c{seq}",
        arguments=args or {},
        outcome=outcome,
        agent=agent,
        depth=depth,
        model_turn=seq if turn is None else turn,
        index_in_turn=index,
        start_ns=start,
        end_ns=start + 5 if end is None else end,
    )


def grade(expected, record=None, response="", *, has_record=True):
    row = {"id": "q1", "input": "hi", "expected_tools": expected}
    context = build_context(row, messages=[], tool_calls=record if has_record else None)
    if has_record and record is None:
        context["tool_calls"] = ToolRecord([])
    return GRADER.grade("hi", response, context)


RECORD = ToolRecord(
    [
        call("list_content_types", 0),
        call("get_content_type_info", 1, args={"node_type": "page", "limit": 12}),
        call("edit_content_type", 2, args={"node_type": "kb_doc", "publish": False}),
        call("get_content_type_info", 3, args={"node_type": "kb_doc", "limit": "12"}),
    ]
)


# -- skips and setup failures --------------------------------------------------------------
@pytest.mark.parametrize("expected", [None, []])
def test_no_expected_tools_skips(expected):
    result = grade(expected, RECORD)
    assert result.skipped and result.reason == "no expected_tools in context, skipping"


def test_missing_key_skips():
    context = build_context({"id": "q"}, messages=[], tool_calls=RECORD)
    assert GRADER.grade("", "", context).skipped


@pytest.mark.parametrize(
    ("expected", "why"),
    [
        ("list_users", "expected_tools must be a list, got str"),
        (["list_users"], "expected_tools[0] must be a mapping with `tool` and `should_run`"),
        (
            [{"tool": "", "should_run": True}],
            "expected_tools[0].tool must be a non-empty tool name",
        ),
        ([{"tool": "x"}], "expected_tools[0].should_run must be true or false"),
        (
            [{"tool": "x", "should_run": "yes"}],
            "expected_tools[0].should_run must be true or false",
        ),
        (
            [{"tool": "x", "should_run": True, "args": {}}],
            "expected_tools[0].args must be a non-empty mapping (an empty one asserts nothing)",
        ),
        (
            [{"tool": "x", "should_run": True, "args": {"a": [1]}}],
            "expected_tools[0].args.a must be a scalar (string, number, boolean or null)",
        ),
        (
            [{"tool": "x", "should_run": True, "after": "  "}],
            "expected_tools[0].after must name a tool (a blank after asserts nothing)",
        ),
        (
            [{"tool": "x", "should_run": False, "after": "y"}],
            "expected_tools[0]: after with should_run: false is incoherent "
            "(a tool that must not run has no position)",
        ),
        (
            [{"tool": "x", "should_run": True, "order": 1}],
            "expected_tools[0]: unknown key(s) order",
        ),
    ],
)
def test_malformed_expectations_score_zero_with_setup_failure(expected, why):
    result = grade(expected, RECORD)
    assert (result.score, result.error) == (0.0, False)
    assert result.reason == f"setup failure: {why}"


# -- scoring -----------------------------------------------------------------------------------
def test_equal_shares_three_of_four_is_3_75():
    expected = [
        {"tool": "list_content_types", "should_run": True},
        {"tool": "get_content_type_info", "should_run": True, "args": {"node_type": "kb_doc"}},
        {"tool": "edit_content_type", "should_run": True, "after": "list_content_types"},
        {"tool": "delete_content_type", "should_run": True},
    ]
    result = grade(expected, RECORD)
    assert result.score == 3.75
    assert result.reason == (
        "3 of 4 tool expectations met (from the agent tool-call record); "
        "unmet: `delete_content_type`: expected to run, never called"
    )


def test_all_met_golden_reason_and_scale():
    result = grade(
        [
            {"tool": "list_content_types", "should_run": True},
            {"tool": "list_users", "should_run": False},
        ],
        RECORD,
    )
    assert result.score == 5.0 and (result.min_score, result.max_score) == (0.0, 5.0)
    assert result.reason == "all 2 tool expectations met (from the agent tool-call record)"
    assert result.details["source"] == "record"


@pytest.mark.parametrize(
    ("expected", "score", "reason"),
    [
        (
            [{"tool": "list_users", "should_run": False}],
            5.0,
            "all 1 tool expectation met (from the agent tool-call record)",
        ),
        (
            [{"tool": "list_content_types", "should_run": False}],
            0.0,
            "0 of 1 tool expectation met (from the agent tool-call record); "
            "unmet: `list_content_types`: expected not to run, ran 1 time",
        ),
        (
            [{"tool": "get_content_type_info", "should_run": False}],
            0.0,
            "0 of 1 tool expectation met (from the agent tool-call record); "
            "unmet: `get_content_type_info`: expected not to run, ran 2 times",
        ),
        (
            [{"tool": "get_content_type_info", "should_run": False, "args": {"node_type": "faq"}}],
            5.0,
            "all 1 tool expectation met (from the agent tool-call record)",
        ),
        (
            [{"tool": "get_content_type_info", "should_run": False, "args": {"node_type": "page"}}],
            0.0,
            "0 of 1 tool expectation met (from the agent tool-call record); unmet: "
            "`get_content_type_info` with node_type='page': expected not to run, "
            "ran 1 time with those arguments",
        ),
        (
            [{"tool": "get_content_type_info", "should_run": True, "args": {"node_type": "faq"}}],
            0.0,
            "0 of 1 tool expectation met (from the agent tool-call record); unmet: "
            "`get_content_type_info` with node_type='faq': expected to run, but its 2 executed "
            "calls had node_type='page'; node_type='kb_doc'",
        ),
        (
            [{"tool": "edit_content_type", "should_run": True, "args": {"missing": 1}}],
            0.0,
            "0 of 1 tool expectation met (from the agent tool-call record); unmet: "
            "`edit_content_type` with missing=1: expected to run, but its 1 executed call had "
            "missing absent",
        ),
    ],
)
def test_should_run_and_args_golden(expected, score, reason):
    result = grade(expected, RECORD)
    assert (result.score, result.reason) == (score, reason)


# -- args comparison: text for scalars, strict for booleans and null ----------------------------
@pytest.mark.parametrize(
    ("actual", "expected", "equal"),
    [
        (12, "12", True),
        ("12", 12, True),
        (12.0, 12, True),
        (12.0, "12", True),
        ("12.5", 12.5, True),
        ("kb_doc", "kb_doc", True),
        ("kb_doc", "KB_DOC", False),
        (False, False, True),
        (False, "", False),
        (False, 0, False),
        (0, False, False),
        (True, 1, False),
        (1, True, False),
        (True, "True", False),
        ("true", True, False),
        (None, None, True),
        (None, "None", False),
        ("", None, False),
        (None, "", False),
        ([1], "[1]", False),
        ({"a": 1}, "{'a': 1}", False),
    ],
)
def test_same_scalar_takes_actual_then_expected(actual, expected, equal):
    assert same_scalar(actual, expected) is equal


def test_args_subset_match_ignores_other_arguments():
    assert args_match({"node_type": "kb_doc", "limit": 12}, [("node_type", "kb_doc")])
    assert not args_match({"limit": 12}, [("node_type", "kb_doc")])
    assert args_match({"limit": "12"}, [("limit", 12)])


def test_args_booleans_strict_in_grading():
    expected = [{"tool": "edit_content_type", "should_run": True, "args": {"publish": ""}}]
    assert grade(expected, RECORD).score == 0.0
    expected = [{"tool": "edit_content_type", "should_run": True, "args": {"publish": False}}]
    assert grade(expected, RECORD).score == 5.0


# -- names ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("tool", "met"),
    [
        ("list_content_types", True),  # the function name
        ("desk:list_content_types", True),  # the qualified id
        ("other:list_content_types", False),  # a colon can only be a qualified id
        ("research:lookup", True),  # a sub-agent's call counts
        ("lookup", True),
    ],
)
def test_names_and_sub_agent_calls(tool, met):
    record = ToolRecord(
        [call("list_content_types", 0), call("lookup", 1, agent="research", depth=1)]
    )
    assert grade([{"tool": tool, "should_run": True}], record).score == (5.0 if met else 0.0)


def test_bare_name_also_checked_against_a_colonless_qualified_id():
    odd = ToolCall(
        seq=0,
        name="lookup",
        qualified_id="legacy_lookup",
        call_id=None,
        arguments={},
        outcome=Outcome.OK,
    )
    record = ToolRecord([odd, call("legacy_lookup", 1, outcome=Outcome.NOT_EXECUTED)])
    assert grade([{"tool": "legacy_lookup", "should_run": True}], record).score == 5.0
    assert grade([{"tool": "lookup", "should_run": True}], record).score == 5.0
    assert grade([{"tool": "legacy_lookup", "should_run": False}], record).score == 0.0


# -- outcomes ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("outcome", "satisfies_should_run", "violates_should_not_run"),
    [
        (Outcome.OK, True, True),
        (Outcome.ERROR, True, True),
        (Outcome.COMMAND, True, True),
        (Outcome.HANDOFF, True, True),
        (Outcome.INTERRUPTED, False, True),
        (Outcome.CANCELLED, False, True),
        (Outcome.NOT_EXECUTED, False, False),
    ],
)
def test_outcomes(outcome, satisfies_should_run, violates_should_not_run):
    record = ToolRecord([call("delete_user", 0, outcome=outcome)])
    run = grade([{"tool": "delete_user", "should_run": True}], record)
    assert run.score == (5.0 if satisfies_should_run else 0.0)
    if not satisfies_should_run:
        assert run.reason.endswith(
            f"`delete_user`: expected to run, called 1 time but never executed "
            f"(outcome: {outcome.value})"
        )
    not_run = grade([{"tool": "delete_user", "should_run": False}], record)
    assert not_run.score == (0.0 if violates_should_not_run else 5.0)


# -- order -------------------------------------------------------------------------------------
AFTER = [{"tool": "edit_content_type", "should_run": True, "after": "get_content_type_info"}]


def test_after_met_by_earlier_turn():
    assert grade(AFTER, RECORD).score == 5.0


def test_after_same_turn_parallel_is_not_before():
    record = ToolRecord(
        [
            call("get_content_type_info", 0, turn=1, index=0),
            call("edit_content_type", 1, turn=1, index=1),
        ]
    )
    result = grade(AFTER, record)
    assert result.score == 0.0
    assert result.reason.endswith(
        "unmet: `edit_content_type` after `get_content_type_info`: expected "
        "`get_content_type_info` to run first, but the first call of `edit_content_type` was "
        "requested before any result of `get_content_type_info` was available"
    )


def test_after_compares_first_occurrence_of_the_tool():
    record = ToolRecord(
        [
            call("edit_content_type", 0),
            call("get_content_type_info", 1),
            call("edit_content_type", 2),
        ]
    )
    assert grade(AFTER, record).score == 0.0


def test_after_args_narrow_which_call_is_ordered():
    record = ToolRecord(
        [
            call("edit_content_type", 0, args={"node_type": "page"}),
            call("get_content_type_info", 1),
            call("edit_content_type", 2, args={"node_type": "kb_doc"}),
        ]
    )
    narrowed = [{**AFTER[0], "args": {"node_type": "kb_doc"}}]
    assert grade(narrowed, record).score == 5.0
    assert grade(AFTER, record).score == 0.0


def test_after_any_predecessor_call_satisfies():
    # Only the first predecessor call precedes: enough.
    record = ToolRecord(
        [
            call("get_content_type_info", 0, args={"node_type": "x"}),
            call("edit_content_type", 1),
            call("get_content_type_info", 2),
        ]
    )
    assert grade(AFTER, record).score == 5.0


def test_after_predecessor_never_ran():
    record = ToolRecord(
        [
            call("get_content_type_info", 0, outcome=Outcome.NOT_EXECUTED),
            call("edit_content_type", 1),
        ]
    )
    result = grade(AFTER, record)
    assert result.score == 0.0
    assert result.reason.endswith(
        "`edit_content_type` after `get_content_type_info`: expected `get_content_type_info` "
        "to run first, but `get_content_type_info` never ran"
    )


def test_after_across_agents_uses_span_times():
    sub = call("get_content_type_info", 0, agent="research", depth=1, turn=5, start=100, end=200)
    top_late = call("edit_content_type", 1, turn=1, start=300)
    top_early = call("edit_content_type", 1, turn=1, start=150)
    assert grade(AFTER, ToolRecord([sub, top_late])).score == 5.0
    assert grade(AFTER, ToolRecord([sub, top_early])).score == 0.0


# -- record states -----------------------------------------------------------------------------
def test_incomplete_record_is_an_error_never_evidence():
    record = ToolRecord([call("list_users", 0)], complete=False, problems=["handler raised"])
    result = grade([{"tool": "list_users", "should_run": False}], record)
    assert result.error and result.score is None
    assert result.reason == "tool-call record incomplete, so it is not evidence: handler raised"


def test_empty_record_means_nothing_was_called():
    result = grade(
        [{"tool": "list_users", "should_run": True}, {"tool": "drop_db", "should_run": False}],
        ToolRecord([]),
    )
    assert result.score == 2.5
    assert FALLBACK_MARKER not in result.reason


# -- the response-text fallback -----------------------------------------------------------------
def test_fallback_seed_reason_exact():
    response = "I called `list_modules` and found 12 modules. [tool: list_content_types]"
    result = grade(
        [
            {"tool": "list_modules", "should_run": True},
            {"tool": "list_content_types", "should_run": True},
        ],
        response=response,
        has_record=False,
    )
    assert result.score == 5.0
    assert result.reason == (
        "all 2 tool expectations met (no tool-call record available; read from the response "
        "text, which only works when the answer spells out tool markers)"
    )
    assert result.details["source"] == "response_text"


@pytest.mark.parametrize(
    ("response", "found"),
    [
        ("list_modules()", True),
        ("Then list_modules (page=2) returned", True),
        ("I called `list_modules`.", True),
        ("after running the tool `list_modules`", True),
        ("[tool: list_modules]", True),
        ("[tool_call:list_modules]", True),
        ('{"name": "list_modules", "args": {}}', True),
        ("the list_modules tool could help", False),  # a mention is not a marker
        ("`list_modules`", False),
        ("my_list_modules()", False),
        ("list_modules_v2()", False),
    ],
)
def test_fallback_markers(response, found):
    assert scrape_tool_markers(response, "list_modules") is found


def test_fallback_args_and_after_fail_loudly():
    expected = [
        {"tool": "get_info", "should_run": True, "args": {"id": 3}},
        {"tool": "edit", "should_run": True, "after": "get_info"},
        {"tool": "drop", "should_run": False},
    ]
    result = grade(expected, response="get_info(id=3) then edit()", has_record=False)
    assert result.score == pytest.approx(5.0 / 3)
    assert result.reason == (
        f"1 of 3 tool expectations met ({FALLBACK_MARKER}; read from the response text, which "
        "only works when the answer spells out tool markers); unmet: `get_info` with id=3: args "
        "cannot be checked without a tool-call record (the response text carries no arguments); "
        "`edit` after `get_info`: order cannot be checked without a tool-call record (the "
        "response text carries no order)"
    )


def test_fallback_should_not_run_violated_by_marker():
    result = grade([{"tool": "drop", "should_run": False}], response="ran drop()", has_record=False)
    assert result.score == 0.0
    assert result.reason.endswith(
        "`drop`: expected not to run, the response has a tool marker for it"
    )


# -- property: order of expectations never changes the verdict ----------------------------------
TOOLS = ["a", "b", "c", "sub:a"]
call_st = st.builds(
    lambda name, turn, outcome, v: (name, turn, outcome, v),
    st.sampled_from(["a", "b", "c"]),
    st.integers(0, 4),
    st.sampled_from(list(Outcome)),
    st.sampled_from([1, "1", "2", True, None]),
)
expectation_st = st.builds(
    lambda tool, should_run, args, after: {
        "tool": tool,
        "should_run": should_run,
        **({"args": {"v": args}} if args != "-" else {}),
        **({"after": after} if after and should_run else {}),
    },
    st.sampled_from(TOOLS),
    st.booleans(),
    st.sampled_from(["-", 1, "2", True, None]),
    st.sampled_from([None, "a", "b", "c"]),
)


@settings(max_examples=150, deadline=None)
@given(
    calls=st.lists(call_st, max_size=8),
    expected=st.lists(expectation_st, min_size=1, max_size=5),
    data=st.data(),
)
def test_verdict_independent_of_expectation_order(calls, expected, data):
    record = ToolRecord(
        [
            call(
                name,
                i,
                turn=turn,
                outcome=outcome,
                args={"v": v},
                agent="sub" if i % 3 == 0 else "desk",
                depth=1 if i % 3 == 0 else 0,
            )
            for i, (name, turn, outcome, v) in enumerate(calls)
        ]
    )
    permuted = data.draw(st.permutations(expected))
    first, second = grade(expected, record), grade(permuted, record)
    assert first.score == second.score

    def verdicts(result):
        return sorted(
            (e["expectation"], e["met"], e["why"]) for e in result.details["expectations"]
        )

    assert verdicts(first) == verdicts(second)
    head1, _, unmet1 = first.reason.partition("; unmet: ")
    head2, _, unmet2 = second.reason.partition("; unmet: ")
    assert head1 == head2
    assert sorted(unmet1.split("; ")) == sorted(unmet2.split("; "))


@settings(max_examples=100, deadline=None)
@given(
    calls=st.lists(
        st.tuples(st.sampled_from(["a", "b", "x:a"]), st.sampled_from(["desk:a", "sub:b", "a"])),
        max_size=6,
    ),
    name=st.sampled_from(["a", "b", "x:a", "desk:a", "sub:b", "c"]),
)
def test_record_index_agrees_with_toolcall_matches(calls, name):
    from tracegrade.graders.tool_usage import _RecordIndex

    record = ToolRecord(
        [
            ToolCall(seq=i, name=n, qualified_id=q, call_id=None, arguments={}, outcome=Outcome.OK)
            for i, (n, q) in enumerate(calls)
        ]
    )
    assert _RecordIndex(record).named(name) == record.calls_of(name)
