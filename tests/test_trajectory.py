"""trajectory_grader on records from real LangGraph runs: the support desk's tools on a real
SQLite database, driven by the scripted chat model, with parallel calls in one turn, a sub-agent
inside a tool, and calls that errored. Every mode and every argument matcher, golden reasons,
and the swapped-arguments case greedy matching gets wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.tools import StructuredTool
from opentelemetry.sdk.trace import TracerProvider

from agents.scripted import ScriptedChatModel, call, say, tool_call
from agents.support_desk import make_environment, make_tools
from agents.testing_graphs import boom, delegating_tool, flaky, react_agent
from tracegrade import Outcome, Recorder, ToolRecord
from tracegrade.graders import TrajectoryGrader, build_context
from tracegrade.graders.trajectory.grader import request_order

GRADER = TrajectoryGrader()
ANA = "ana@example.com"


def _order(
    item: str,
    price: float,
    quantity: int,
    tags: list[str],
    address: dict,
    note: str | None = None,
) -> dict:
    return {"status": "ordered", "item": item}


ORDER = StructuredTool.from_function(_order, name="order", description="Place an order.")


def _transfer(source: str, target: str) -> str:
    return f"moved {source} -> {target}"


TRANSFER = StructuredTool.from_function(_transfer, name="transfer", description="Move funds.")


def run(script, *, sub_script=None) -> ToolRecord:
    """One real run of a `support_desk` graph on `script`; its sealed record."""
    tools = [*make_tools(make_environment()), ORDER, TRANSFER, boom, flaky]
    if sub_script is not None:
        sub = react_agent(
            ScriptedChatModel(script=sub_script),
            make_tools(make_environment()),
            name="researcher",
        )
        tools.append(delegating_tool(sub))
    graph = react_agent(
        ScriptedChatModel(script=script), tools, name="support_desk", handle_tool_errors=True
    )
    tracer = TracerProvider().get_tracer("test")
    recorder = Recorder(
        tracer=tracer, question_id="q", dataset="ds", target="t", agent_name="support_desk"
    )
    with recorder.question_span():
        state = graph.invoke({"messages": [("user", "hi")]}, {"callbacks": [recorder]})
    record = recorder.seal(state)
    assert record.complete, record.problems
    return record


@pytest.fixture(scope="module")
def booking() -> ToolRecord:
    """lookup_customer; two check_availability calls in one turn (parallel); book_appointment."""
    return run(
        [
            call(("lookup_customer", {"email": ANA})),
            call(
                ("check_availability", {"date": "2026-12-03", "slot": "10:00"}),
                ("check_availability", {"date": "2026-12-03", "slot": "11:00"}),
            ),
            call(("book_appointment", {"customer": "C001", "date": "2026-12-03", "slot": "11:00"})),
            say("Booked."),
        ]
    )


@pytest.fixture(scope="module")
def errored() -> ToolRecord:
    """A call that raised, one answered with an error message, one that failed validation,
    then a call that succeeded."""
    return run(
        [
            call(("boom", {"reason": "disk"})),
            call(("flaky", {"x": "refund"})),
            call(("book_appointment", {"customer": "C001", "date": "2026-12-03"})),  # no slot
            call(("lookup_customer", {"email": ANA})),
            say("Done."),
        ]
    )


@pytest.fixture(scope="module")
def delegated() -> ToolRecord:
    """The desk delegates to a `researcher` sub-agent (inside a tool), then books."""
    return run(
        [
            call(("delegate", {"task": "find Ben"})),
            call(("book_appointment", {"customer": "C002", "date": "2026-12-04", "slot": "09:00"})),
            say("Booked Ben."),
        ],
        sub_script=[
            call(("lookup_customer", {"email": "ben@example.com"})),
            call(("check_availability", {"date": "2026-12-04", "slot": "09:00"})),
            say("Ben is C002; 09:00 is free."),
        ],
    )


@pytest.fixture(scope="module")
def ordered() -> ToolRecord:
    """One call with arguments of every JSON type, for the matchers."""
    return run(
        [
            call(
                (
                    "order",
                    {
                        "item": "Widget-42",
                        "price": 49.99,
                        "quantity": 3,
                        "tags": ["vip", "gift"],
                        "address": {"city": "Lisbon", "zip": "1000-001"},
                    },
                )
            ),
            say("Ordered."),
        ]
    )


def grade(trajectory, record):
    context = build_context({"id": "q", "trajectory": trajectory}, messages=[], tool_calls=record)
    return GRADER.grade("hi", "answer", context)


def names(record):
    return [(c.name, c.outcome.value, c.agent) for c in request_order(record)]


# -- the records are what the runs did --------------------------------------------------------
def test_records_hold_parallel_sub_agent_and_errored_calls(booking, errored, delegated):
    assert names(booking) == [
        ("lookup_customer", "ok", "support_desk"),
        ("check_availability", "ok", "support_desk"),
        ("check_availability", "ok", "support_desk"),
        ("book_appointment", "ok", "support_desk"),
    ]
    parallel = [c for c in booking if c.name == "check_availability"]
    assert len({c.model_turn for c in parallel}) == 1  # one model message asked for both
    assert [c.outcome for c in request_order(errored)] == [
        Outcome.ERROR,
        Outcome.ERROR,
        Outcome.ERROR,
        Outcome.OK,
    ]
    assert names(delegated) == [
        ("delegate", "ok", "support_desk"),
        ("lookup_customer", "ok", "researcher"),
        ("check_availability", "ok", "researcher"),
        ("book_appointment", "ok", "support_desk"),
    ]


def test_request_order_lists_parallel_calls_as_the_model_did(booking):
    slots = [c.arguments["slot"] for c in request_order(booking) if c.name == "check_availability"]
    assert slots == ["10:00", "11:00"]


# -- the five modes -------------------------------------------------------------------------------
LOOKUP = {"tool": "lookup_customer", "args": {"email": ANA}}
CHECK_10 = {"tool": "check_availability", "args": {"slot": "10:00"}}
CHECK_11 = {"tool": "check_availability", "args": {"slot": "11:00"}}
BOOK = {"tool": "book_appointment", "args": {"slot": "11:00"}}

MODES = [
    # strict: the same calls in the same order, nothing else
    ("strict", [LOOKUP, CHECK_10, CHECK_11, BOOK], 1.0, None),
    # the two checks were requested in one message (parallel calls): no order between them
    ("strict", [LOOKUP, CHECK_11, CHECK_10, BOOK], 1.0, None),
    (
        "strict",
        [CHECK_10, LOOKUP, CHECK_11, BOOK],
        0.6,
        "3 of 5 trajectory constraints met (strict; from the agent tool-call record); broken: "
        "calls[1] `lookup_customer`: expected in this order; the call that fits, "
        "#1 `lookup_customer`, ran out of order; "
        "no other calls (strict): #1 `lookup_customer` is not in the expected sequence",
    ),
    (
        "strict",
        [LOOKUP, BOOK],
        2 / 3,
        "2 of 3 trajectory constraints met (strict; from the agent tool-call record); broken: "
        "no other calls (strict): #2 `check_availability`, #3 `check_availability` are not in "
        "the expected sequence",
    ),
    # unordered: the same calls in any order, nothing else
    ("unordered", [BOOK, CHECK_11, LOOKUP, CHECK_10], 1.0, None),
    (
        "unordered",
        [BOOK, CHECK_11, LOOKUP],
        0.75,
        "3 of 4 trajectory constraints met (unordered; from the agent tool-call record); broken: "
        "no other calls (unordered): #2 `check_availability` is not matched to an expected call",
    ),
    # superset: every expected call appears, others allowed
    ("superset", [BOOK, LOOKUP], 1.0, None),
    (
        "superset",
        [BOOK, {"tool": "cancel_booking"}],
        0.5,
        "1 of 2 trajectory constraints met (superset; from the agent tool-call record); broken: "
        "calls[1] `cancel_booking`: expected to run, never called",
    ),
    # subset: every call is one of the expected, not all need appear
    ("subset", [LOOKUP, CHECK_10, CHECK_11, BOOK, {"tool": "cancel_booking"}], 1.0, None),
    (
        "subset",
        [LOOKUP, {"tool": "check_availability"}, BOOK],
        0.0,
        "0 of 1 trajectory constraint met (subset; from the agent tool-call record); broken: "
        "no other calls (subset): #3 `check_availability` is not matched to an expected call",
    ),
    # subsequence: the expected calls in this order, others allowed between
    ("subsequence", [LOOKUP, BOOK], 1.0, None),
    (
        "subsequence",
        [BOOK, LOOKUP],
        0.5,
        "1 of 2 trajectory constraints met (subsequence; from the agent tool-call record); "
        "broken: calls[1] `lookup_customer`: expected in this order; the call that fits, "
        "#1 `lookup_customer`, ran out of order",
    ),
]


@pytest.mark.parametrize(("mode", "calls", "score", "reason"), MODES)
def test_modes_on_a_run_with_parallel_calls(booking, mode, calls, score, reason):
    result = grade({"match": mode, "calls": calls}, booking)
    assert result.score == pytest.approx(score)
    assert result.details["mode"] == mode
    if reason is None:
        total = (
            len(calls)
            + (mode in ("strict", "unordered", "subset"))
            - (mode == "subset") * len(calls)
        )
        plural = "s" if total != 1 else ""
        assert result.reason == (
            f"all {total} trajectory constraint{plural} met ({mode}; from the agent tool-call "
            "record)"
        )
    else:
        assert result.reason == reason


def test_default_mode_is_superset(booking):
    result = grade({"calls": [BOOK]}, booking)
    assert result.details["mode"] == "superset" and result.score == 1.0


def test_passes_only_at_one(booking):
    from tracegrade.verdicts.scoring import passes

    partial = grade({"calls": [BOOK, {"tool": "cancel_booking"}]}, booking)
    assert partial.score == 0.5
    assert not passes(0.5, min_score=0, max_score=1, binary=GRADER.binary, threshold=0)
    assert passes(1.0, min_score=0, max_score=1, binary=GRADER.binary, threshold=0)


def test_precision_and_recall_in_details(booking):
    result = grade({"calls": [BOOK, LOOKUP, {"tool": "cancel_booking"}]}, booking)
    assert result.details["recall"] == pytest.approx(2 / 3)
    assert result.details["precision"] == pytest.approx(2 / 4)
    assert result.details["executed_calls"] == 4
    assignment = {a["expected"]: a["call"] for a in result.details["assignment"]}
    assert assignment == {
        "calls[0] `book_appointment`": 4,
        "calls[1] `lookup_customer`": 1,
        "calls[2] `cancel_booking`": None,
    }


# -- sub-agent calls and errored calls --------------------------------------------------------
def test_sub_agent_calls_count_and_can_be_named_by_qualified_id(delegated):
    result = grade(
        {
            "match": "strict",
            "calls": [
                {"tool": "delegate"},
                {"tool": "researcher:lookup_customer"},
                {"tool": "check_availability", "args": {"slot": "09:00"}},
                {"tool": "support_desk:book_appointment", "args": {"customer": "C002"}},
            ],
        },
        delegated,
    )
    assert result.score == 1.0, result.reason


def test_a_qualified_id_does_not_match_another_agents_call(delegated):
    result = grade({"calls": [{"tool": "support_desk:lookup_customer"}]}, delegated)
    assert result.reason.endswith(
        "calls[0] `support_desk:lookup_customer`: expected to run, never called"
    )


def test_errored_calls_executed_and_outcome_is_asserted(errored):
    ok = grade(
        {
            "match": "strict",
            "calls": [
                {"tool": "boom", "outcome": "error"},
                {"tool": "flaky", "outcome": "error"},
                {"tool": "book_appointment", "outcome": "error"},
                {"tool": "lookup_customer", "outcome": "ok"},
            ],
        },
        errored,
    )
    assert ok.score == 1.0, ok.reason
    wrong = grade({"calls": [{"tool": "boom", "outcome": "ok"}]}, errored)
    assert wrong.reason.endswith(
        "calls[0] `boom`: expected to run, nearest call #1 `boom`: outcome expected ok, got error"
    )


def test_a_call_that_never_executed_does_not_count(booking):
    record = run([call(("no_such_tool", {"a": 1})), say("hm")])
    assert [c.outcome for c in record] == [Outcome.NOT_EXECUTED]
    result = grade({"match": "strict", "calls": [{"tool": "no_such_tool"}]}, record)
    assert result.reason.endswith(
        "calls[0] `no_such_tool`: expected to run, called 1 time but never executed "
        "(outcome: not_executed)"
    )


# -- forbid, only, count, max_calls -----------------------------------------------------------------
def test_constraints_met(booking):
    result = grade(
        {
            "calls": [LOOKUP, BOOK],
            "forbid": ["issue_refund"],
            "only": ["lookup_customer", "check_availability", "book_appointment"],
            "count": {"check_availability": {"min": 1, "max": 2}},
            "max_calls": 4,
        },
        booking,
    )
    assert result.score == 1.0
    assert result.reason == (
        "all 7 trajectory constraints met (superset; from the agent tool-call record)"
    )


def test_each_broken_constraint_is_named(booking):
    result = grade(
        {
            "forbid": ["check_availability", "issue_refund"],
            "only": ["lookup_customer"],
            "count": {"lookup_customer": {"min": 2}, "book_appointment": {"max": 0}},
            "max_calls": 3,
        },
        booking,
    )
    assert result.score == pytest.approx(1 / 6)
    assert result.reason == (
        "1 of 6 trajectory constraints met (superset; from the agent tool-call record); broken: "
        "`check_availability`: forbidden, started 2 times (#2 `check_availability`, "
        "#3 `check_availability`); "
        "`lookup_customer`: expected to run at least 2 times, ran 1 time; "
        "`book_appointment`: expected to run at most 0 times, ran 1 time (#4 `book_appointment`); "
        "only `lookup_customer` may run, but #2 `check_availability`, #3 `check_availability`, "
        "#4 `book_appointment` started; "
        "expected at most 3 calls, 4 executed"
    )


def test_only_empty_means_no_tool_may_run(booking):
    result = grade({"only": []}, booking)
    assert result.reason.endswith(
        "no tool may run, but #1 `lookup_customer`, #2 `check_availability`, "
        "#3 `check_availability`, #4 `book_appointment` started"
    )


def test_forbid_counts_a_call_that_started_and_errored(errored):
    result = grade({"forbid": ["boom"]}, errored)
    assert result.score == 0.0
    assert "`boom`: forbidden, started 1 time (#1 `boom`)" in result.reason


# -- argument matchers ------------------------------------------------------------------------
MATCHERS = [
    # (args, met, the difference the reason names when not met)
    ({"item": "Widget-42"}, True, None),
    ({"item": "widget-42"}, False, "item expected 'widget-42', got 'Widget-42'"),
    ({"quantity": 3.0}, True, None),  # 1 == 1.0
    ({"quantity": "3"}, False, "quantity expected '3', got 3"),
    ({"tags": ["vip", "gift"]}, True, None),
    (
        {"tags": ["gift", "vip"]},
        False,
        "tags[0] expected 'gift', got 'vip'; tags[1] expected 'vip', got 'gift'",
    ),
    ({"tags": ["vip"]}, False, "tags expected ['vip'], got ['vip', 'gift']"),
    ({"address": {"city": "Lisbon", "zip": "1000-001"}}, True, None),
    ({"address": {"city": "Lisbon"}}, False, "address.zip not expected, got '1000-001'"),
    ({"address": {"city": {"regex": "L.*"}, "zip": {"any": True}}}, True, None),
    ({"address": {"eq": {"city": "Lisbon", "zip": "1000-001"}}}, True, None),
    ({"item": {"regex": "Widget-\\d+"}}, True, None),
    ({"item": {"regex": "Widget"}}, False, "item expected to match 'Widget', got 'Widget-42'"),
    ({"item": {"in": ["Widget-42", "Gadget"]}}, True, None),
    ({"item": {"in": ["Gadget"]}}, False, "item expected in ['Gadget'], got 'Widget-42'"),
    ({"quantity": {"min": 1, "max": 3}}, True, None),
    ({"quantity": {"min": 4}}, False, "quantity expected at least 4, got 3"),
    ({"price": {"max": 10}}, False, "price expected at most 10, got 49.99"),
    ({"item": {"min": "A", "max": "Z"}}, True, None),
    ({"quantity": {"type": "integer"}}, True, None),
    ({"price": {"type": "number"}}, True, None),
    ({"tags": {"type": "array"}}, True, None),
    ({"address": {"type": "object"}}, True, None),
    ({"quantity": {"type": "string"}}, False, "quantity expected a string, got 3"),
    ({"item": {"any": True}}, True, None),
    ({"note": {"any": True}}, False, "note expected present, got nothing (absent)"),
    ({"note": {"absent": True}}, True, None),
    ({"item": {"absent": True}}, False, "item expected absent, got 'Widget-42'"),
    ({"item": {"contains": "get-4"}}, True, None),
    ({"tags": {"contains": "vip"}}, True, None),
    ({"address": {"contains": "city"}}, True, None),
    ({"tags": {"contains": "sale"}}, False, "tags expected to contain 'sale', got ['vip', 'gift']"),
    ({"price": {"approx": 50, "tol": 0.02}}, True, None),
    ({"price": {"approx": 49.99}}, True, None),
    ({"price": {"approx": 50, "tol": 0.001}}, False, "price expected 50 ± 0.001, got 49.99"),
    ({"address": {"schema": {"type": "object", "required": ["city"]}}}, True, None),
    (
        {"address": {"schema": {"type": "object", "required": ["country"]}}},
        False,
        "address expected to match its schema ('country' is a required property), got "
        "{'city': 'Lisbon', 'zip': '1000-001'}",
    ),
    ({"item": {"not": {"in": ["Gadget"]}}}, True, None),
    (
        {"item": {"not": {"regex": "W.*"}}},
        False,
        "item expected not to match 'W.*', got 'Widget-42'",
    ),
    ({"note": {"not": {"in": ["x"]}}}, False, "note expected not in ['x'], got nothing (absent)"),
    ({"item": {"not": {"absent": True}}}, True, None),
]


@pytest.mark.parametrize(("args", "met", "difference"), MATCHERS)
def test_matchers_on_a_real_call(ordered, args, met, difference):
    result = grade({"calls": [{"tool": "order", "args": args}]}, ordered)
    assert result.score == (1.0 if met else 0.0), result.reason
    if not met:
        assert result.reason == (
            "0 of 1 trajectory constraint met (superset; from the agent tool-call record); "
            f"broken: calls[0] `order`: expected to run, nearest call #1 `order`: {difference}"
        )


def test_issue_example_reason(booking):
    result = grade(
        {
            "match": "subsequence",
            "calls": [
                {"tool": "lookup_customer", "args": {"email": {"regex": "^ana@.*"}}},
                {
                    "tool": "book_appointment",
                    "args": {
                        "customer": "C001",
                        "date": "2026-12-04",
                        "slot": {"in": ["10:00", "09:00"]},
                    },
                },
            ],
        },
        booking,
    )
    assert result.reason.endswith(
        "calls[1] `book_appointment`: expected to run, nearest call #4 `book_appointment`: "
        "date expected '2026-12-04', got '2026-12-03'; "
        "slot expected in ['10:00', '09:00'], got '11:00'"
    )


def test_args_exact_and_ignore(booking):
    exact = grade(
        {"args": "exact", "calls": [{"tool": "check_availability", "args": {"slot": "10:00"}}]},
        booking,
    )
    assert exact.score == 0.0
    assert exact.reason.endswith(
        "nearest call #2 `check_availability`: date not expected, got '2026-12-03'"
    )
    whole = {"date": "2026-12-03", "slot": "10:00"}
    assert (
        grade(
            {"args": "exact", "calls": [{"tool": "check_availability", "args": whole}]}, booking
        ).score
        == 1.0
    )
    ignored = {"tool": "check_availability", "args": {"slot": "23:00"}}
    assert grade({"args": "ignore", "calls": [ignored]}, booking).score == 1.0


def test_nearest_call_is_the_closest_of_that_tool(booking):
    result = grade(
        {
            "calls": [
                {"tool": "check_availability", "args": {"date": "2026-12-03", "slot": "11:30"}}
            ]
        },
        booking,
    )
    # both calls differ only in slot; the first of the closest is named
    assert result.reason.endswith(
        "nearest call #2 `check_availability`: slot expected '11:30', got '10:00'"
    )


def test_secret_arguments_are_not_shown_in_reasons():
    record = run([call(("lookup_customer", {"email": ANA})), say("ok")])
    result = grade({"calls": [{"tool": "lookup_customer", "args": {"api_token": "x"}}]}, record)
    assert "api_token expected (redacted), got nothing (absent)" in result.reason


# -- greedy matching's known defect -------------------------------------------------------------
SWAPPED = [
    call(
        tool_call("transfer", {"source": "A", "target": "B"}),
        tool_call("transfer", {"source": "B", "target": "A"}),
    ),
    say("Moved both ways."),
]
SWAPPED_EXPECTED = [
    {"tool": "transfer", "args": {"source": {"in": ["A", "B"]}}},  # loose: either call fits
    {"tool": "transfer", "args": {"source": "A", "target": "B"}},  # only the first call fits
]


def greedy(expected, record):
    """What agentevals-style greedy matching does: each expectation takes the first free call
    that fits. Kept here as the oracle of the defect."""
    from tracegrade.graders.trajectory.grader import compile_trajectory

    spec = compile_trajectory({"calls": expected})
    free = list(request_order(record))
    met = 0
    for e in spec.calls:
        fit = next((c for c in free if c.matches(e.tool) and e.accepts(c)), None)
        if fit is not None:
            free.remove(fit)
            met += 1
    return met


@pytest.mark.parametrize("mode", ["unordered", "superset", "subset"])
def test_two_calls_of_one_tool_with_swapped_arguments(mode):
    record = run(SWAPPED)
    assert greedy(SWAPPED_EXPECTED, record) == 1  # greedy fails the second expectation
    result = grade({"match": mode, "calls": SWAPPED_EXPECTED}, record)
    assert result.score == 1.0, result.reason
    assignment = [a["call"] for a in result.details["assignment"]]
    assert assignment == [2, 1]


# -- no record, bad records, setup failures --------------------------------------------------------
def test_skips_without_a_trajectory(booking):
    context = build_context({"id": "q"}, messages=[], tool_calls=booking)
    result = GRADER.grade("", "", context)
    assert result.skipped and result.reason == "no trajectory in context, skipping"


def test_without_a_record_it_fails_loudly():
    context = build_context({"id": "q", "trajectory": {"calls": [BOOK]}}, messages=[])
    result = GRADER.grade("", "I called book_appointment(slot='11:00')", context)
    assert result.score == 0.0
    assert result.reason.startswith("no tool-call record available: a trajectory is answered only")


def test_incomplete_record_is_an_error():
    context = build_context(
        {"id": "q", "trajectory": {"calls": [BOOK]}},
        messages=[],
        tool_calls=ToolRecord([], complete=False, problems=["callback raised"]),
    )
    result = GRADER.grade("", "", context)
    assert result.error and result.score is None and "callback raised" in result.reason


@pytest.mark.parametrize(
    ("trajectory", "why"),
    [
        ({"match": "ordered", "calls": []}, "trajectory.match: trajectory.match must be one of"),
        (
            {"calls": [{"tool": "x", "args": {"a": {"regex": "("}}}]},
            "trajectory.calls.0.args.a.regex: regex does not compile",
        ),
        ({"count": {"x": {"min": 3, "max": 1}}}, "trajectory.count.x: min must not be above max"),
        (
            {"forbid": ["x"], "count": {"x": {"max": 1}}},
            "trajectory.count.x: count names a tool in forbid",
        ),
        ([], "trajectory: trajectory must be a mapping"),
    ],
)
def test_setup_failures_score_zero_naming_the_key(booking, trajectory, why):
    result = grade(trajectory, booking)
    assert result.score == 0.0 and not result.error
    assert result.reason.startswith(f"setup failure: {why}")


def test_registered_through_the_entry_point_group():
    from tracegrade.graders import load_registry

    registry = load_registry()
    assert "trajectory_grader" in registry.ids()
    grader = registry.create("trajectory_grader", services=None)
    assert isinstance(grader, TrajectoryGrader)
    assert (grader.min_score, grader.max_score, grader.binary, grader.observes_actions) == (
        0.0,
        1.0,
        True,
        True,
    )


# -- the documented examples hold -------------------------------------------------------------
def documented_trajectories() -> list[dict]:
    import re
    from pathlib import Path

    import yaml

    text = (Path(__file__).resolve().parents[1] / "docs" / "graders.md").read_text()
    section = text.split("## trajectory_grader", 1)[1].split("\n## ", 1)[0]
    found = []
    for block in re.findall(r"```yaml\n(.*?)```", section, re.S):
        for chunk in block.split("\n\n"):
            data = yaml.safe_load(chunk)
            if isinstance(data, dict) and "trajectory" in data:
                found.append(data["trajectory"])
    return found


def test_documented_examples_are_valid_and_the_mode_examples_pass(booking):
    from tracegrade.inputs.blocks.trajectory import MODES, trajectory_problems

    documented = documented_trajectories()
    assert all(trajectory_problems(t) == [] for t in documented)
    by_mode = {t.get("match", "superset"): t for t in documented[1:]}
    assert set(by_mode) == set(MODES)  # one example per mode
    for mode, trajectory in by_mode.items():
        assert grade(trajectory, booking).score == 1.0, mode


# -- assert_tool_calls(record, trajectory=...) ---------------------------------------------------
def test_assert_tool_calls_takes_a_trajectory(booking):
    from tracegrade import assert_tool_calls

    assert_tool_calls(booking, trajectory={"match": "subsequence", "calls": [LOOKUP, BOOK]})
    with pytest.raises(AssertionError) as info:
        assert_tool_calls(booking, trajectory={"calls": [BOOK], "forbid": ["check_availability"]})
    message = str(info.value)
    result = grade({"calls": [BOOK], "forbid": ["check_availability"]}, booking)
    assert f"tool calls do not match the trajectory: {result.reason}" in message
    assert "  ok   calls[0] `book_appointment`" in message
    assert "  FAIL `check_availability`: forbidden, started 2 times" in message
    # the listing numbers calls as the reasons do
    assert "#2 check_availability(date='2026-12-03', slot='10:00') -> ok" in message
    assert "#4 book_appointment(customer='C001', date='2026-12-03', slot='11:00') -> ok" in message


def test_assert_tool_calls_checks_expected_tools_and_a_trajectory_together(booking):
    from tracegrade import assert_tool_calls

    expected = [{"tool": "cancel_booking", "should_run": True}]
    with pytest.raises(AssertionError) as info:
        assert_tool_calls(booking, expected, trajectory={"calls": [{"tool": "issue_refund"}]})
    message = str(info.value)
    assert "tool calls do not meet the expectations: 0 of 1 tool expectation met" in message
    assert "tool calls do not match the trajectory: 0 of 1 trajectory constraint met" in message
    assert message.count("the record holds 4 call(s):") == 1
    with pytest.raises(TypeError, match="needs expected_tools, trajectory=, or both"):
        assert_tool_calls(booking)


def _desk_trajectories():
    from tracegrade import load_dataset

    dataset = load_dataset(
        Path(__file__).resolve().parents[1] / "examples/datasets/support_desk.yaml"
    )
    return [q for q in dataset.questions if q.trajectory]


@pytest.mark.parametrize("question", _desk_trajectories(), ids=lambda q: str(q.id))
def test_assert_tool_calls_agrees_with_trajectory_grader(question):
    from agents.support_desk import build_graph, build_regressed_graph
    from tracegrade import assert_tool_calls, capture

    for factory in (build_graph, build_regressed_graph):
        record = capture(factory(), question.input_messages())
        verdict = grade(question.trajectory, record)
        if verdict.score == 1.0:
            assert_tool_calls(record, trajectory=question.trajectory)
        else:
            with pytest.raises(AssertionError) as info:
                assert_tool_calls(record, trajectory=question.trajectory)
            assert verdict.reason in str(info.value)
