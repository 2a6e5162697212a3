"""interrupt_grader on hand-built records: count, payload/node/tool, order relative to tool
calls (`before`/`after`), ends_interrupted; a verdict that does not depend on the order of the
`includes` entries (property-tested)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade import Outcome, ToolCall, ToolRecord
from tracegrade.graders import InterruptGrader
from tracegrade.records import Interruption


def tc(seq, name, start, end):
    return ToolCall(
        seq=seq,
        name=name,
        qualified_id=f"desk:{name}",
        call_id=f"c{seq}",
        arguments={},
        outcome=Outcome.OK,
        agent="desk",
        start_ns=start,
        end_ns=end,
    )


def pause(seq, value, start, *, node="approval", resumed=True):
    return Interruption(
        seq=seq, value=value, node=node, agent="desk", start_ns=start, resumed=resumed
    )


RECORD = ToolRecord(
    [tc(0, "lookup_order", 10, 20), tc(1, "issue_refund", 40, 50)],
    interruptions=[
        pause(0, {"question": "approve refund?", "amount": 40}, 30),
        pause(1, "anything else?", 60, node="followup", resumed=False),
    ],
)


def grade(spec, record=RECORD):
    return InterruptGrader().grade("", "", {"expected_interrupts": spec, "tool_calls": record})


def test_an_approval_asked_between_the_lookup_and_the_refund_passes():
    spec = {
        "count": 2,
        "includes": [
            {
                "payload": {"question": {"contains": "refund"}},
                "node": "approval",
                "after": "lookup_order",
                "before": "issue_refund",
            },
            {"payload": {"value": "anything else?"}, "node": "followup"},
        ],
        "ends_interrupted": True,
    }
    result = grade(spec)
    assert result.score == 1.0, result.reason


def test_asked_after_the_refund_ran_fails_naming_why():
    entry = {"node": "followup", "payload": {"value": "anything else?"}, "before": "issue_refund"}
    result = grade({"includes": [entry]})
    assert result.score == 0.0
    assert "`issue_refund` had already run when it was asked" in result.reason


def test_count_and_ending_are_checked():
    result = grade({"count": {"max": 1}, "ends_interrupted": False})
    assert result.score == 0.0
    assert "expected at most 1, the run paused on 2 interrupts" in result.reason
    assert "it ended waiting" in result.reason


def test_no_record_and_no_expectation():
    result = InterruptGrader().grade("", "", {"expected_interrupts": {"count": 1}})
    assert result.score == 0.0 and "no tool-call record available" in result.reason
    assert InterruptGrader().grade("", "", {"tool_calls": RECORD}).skipped


ENTRIES = [
    {"node": "approval"},
    {"payload": {"value": {"type": "string"}}},
    {"after": "lookup_order"},
    {"before": "issue_refund"},
    {"node": "followup", "after": "issue_refund"},
    {"payload": {"amount": {"min": 100}}},
]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(ENTRIES), min_size=1, max_size=4), st.randoms())
def test_the_verdict_does_not_depend_on_the_order_of_includes(entries, rng):
    shuffled = list(entries)
    rng.shuffle(shuffled)
    first, second = grade({"includes": entries}), grade({"includes": shuffled})
    assert first.score == second.score
