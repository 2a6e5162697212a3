"""The assignment behind trajectory_grader: the verdict never depends on the order expectations
are listed in (unordered, superset, subset), and both algorithms are optimal, checked against
brute force on small instances."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tracegrade import Outcome, ToolCall, ToolRecord
from tracegrade.graders import TrajectoryGrader, build_context
from tracegrade.graders.trajectory.matching import align_in_groups, align_in_order, max_matching

GRADER = TrajectoryGrader()
TOOLS = ["search", "book", "cancel"]
VALUES = ["a", "b", "c"]


def make_call(seq: int, name: str, args: dict, outcome: Outcome, turn: int, index: int) -> ToolCall:
    return ToolCall(
        seq=seq,
        name=name,
        qualified_id=f"desk:{name}",
        call_id=f"c{seq}",
        arguments=args,
        outcome=outcome,
        agent="desk",
        model_turn=turn,
        index_in_turn=index,
        start_ns=seq * 10 + 1,
        end_ns=seq * 10 + 6,
    )


calls_strategy = st.lists(
    st.tuples(
        st.sampled_from(TOOLS),
        st.fixed_dictionaries(
            {}, optional={"x": st.sampled_from(VALUES), "y": st.sampled_from(VALUES)}
        ),
        st.sampled_from([Outcome.OK, Outcome.OK, Outcome.ERROR, Outcome.NOT_EXECUTED]),
        st.booleans(),  # in the same model turn as the call before (parallel)
    ),
    max_size=8,
)
arg_value = st.one_of(
    st.sampled_from(VALUES),
    st.builds(lambda v: {"in": v}, st.lists(st.sampled_from(VALUES), min_size=1, max_size=2)),
    st.just({"any": True}),
    st.just({"absent": True}),
    st.builds(lambda v: {"not": v}, st.sampled_from(VALUES)),
)
expected_strategy = st.lists(
    st.fixed_dictionaries(
        {"tool": st.sampled_from(TOOLS)},
        optional={
            "args": st.dictionaries(st.sampled_from(["x", "y"]), arg_value, max_size=2),
            "outcome": st.sampled_from(["ok", "error"]),
        },
    ),
    max_size=6,
)


def build_record(calls) -> ToolRecord:
    made, turn, index = [], 0, 0
    for seq, (name, args, outcome, parallel) in enumerate(calls):
        if seq and parallel:
            index += 1
        else:
            turn, index = turn + (seq > 0), 0
        made.append(make_call(seq, name, args, outcome, turn, index))
    return ToolRecord(made)


def verdict(trajectory, record):
    context = build_context({"id": "q", "trajectory": trajectory}, messages=[], tool_calls=record)
    result = GRADER.grade("", "", context)
    met = sorted(c["met"] for c in result.details["constraints"])
    return result.score, met, result.details["precision"], result.details["recall"]


SWAPPED_CALLS = [
    ("book", {"x": "a", "y": "b"}, Outcome.OK, False),
    ("book", {"x": "b", "y": "a"}, Outcome.OK, True),
]
SWAPPED_EXPECTED = [
    {"tool": "book", "args": {"x": {"in": ["a", "b"]}}},
    {"tool": "book", "args": {"x": "a"}},
]


@settings(max_examples=300, deadline=None)
@given(
    calls=calls_strategy,
    expected=expected_strategy,
    mode=st.sampled_from(["unordered", "superset", "subset"]),
    args=st.sampled_from(["subset", "exact", "ignore"]),
    seed=st.integers(0, 2**32),
)
@example(calls=SWAPPED_CALLS, expected=SWAPPED_EXPECTED, mode="superset", args="subset", seed=0)
def test_order_of_expectations_never_changes_the_verdict(calls, expected, mode, args, seed):
    record = build_record(calls)
    shuffled = list(expected)
    random.Random(seed).shuffle(shuffled)
    first = verdict({"match": mode, "args": args, "calls": expected}, record)
    for other in (shuffled, expected[::-1]):
        assert verdict({"match": mode, "args": args, "calls": other}, record) == first


def brute_force_matching(edges, n_actual) -> int:
    best = 0
    for size in range(len(edges), 0, -1):
        for chosen in itertools.combinations(range(len(edges)), size):
            for picks in itertools.product(*(edges[i] for i in chosen)):
                if len(set(picks)) == size:
                    return size
    return best


def brute_force_alignment(edges, n_actual) -> int:
    best = 0
    for size in range(1, len(edges) + 1):
        for chosen in itertools.combinations(range(len(edges)), size):
            for picks in itertools.combinations(range(n_actual), size):
                if all(j in edges[i] for i, j in zip(chosen, picks, strict=True)):
                    best = size
                    break
    return best


graphs = st.integers(0, 6).flatmap(
    lambda n_actual: st.tuples(
        st.lists(
            st.lists(st.integers(0, max(n_actual - 1, 0)), unique=True, max_size=n_actual).map(
                sorted
            ),
            max_size=6,
        ),
        st.just(n_actual),
    )
)


@settings(max_examples=300, deadline=None)
@given(graph=graphs)
def test_max_matching_is_a_maximum_matching(graph):
    edges, n_actual = graph
    assign = max_matching(edges, n_actual)
    taken = [j for j in assign if j is not None]
    assert len(taken) == len(set(taken))
    assert all(j in edges[i] for i, j in enumerate(assign) if j is not None)
    assert len(taken) == brute_force_matching(edges, n_actual)


@settings(max_examples=300, deadline=None)
@given(graph=graphs)
def test_alignment_preserves_order_and_is_longest(graph):
    edges, n_actual = graph
    assign = align_in_order(edges, n_actual)
    taken = [j for j in assign if j is not None]
    assert taken == sorted(taken) and len(taken) == len(set(taken))
    assert all(j in edges[i] for i, j in enumerate(assign) if j is not None)
    assert len(taken) == brute_force_alignment(edges, n_actual)


def test_matching_stays_polynomial_on_a_long_chain():
    # Each expectation fits its own call and the next one: a greedy pass in the wrong order
    # leaves long augmenting paths, which the iterative search walks without recursion.
    n = 3000
    edges = [[i + 1, i] if i + 1 < n else [i] for i in range(n)]
    edges = [sorted(e, reverse=True) for e in edges]
    assign = max_matching(edges, n)
    assert sum(j is not None for j in assign) == n


# -- parallel tool calls: no order among the calls of one model message -----------------------


def brute_force_group_alignment(edges, group_of) -> int:
    """Most expected calls aligned so that groups never go backwards along the expected list
    (calls of one group in any order), by trying every assignment."""
    best = 0
    n_actual = len(group_of)
    for size in range(1, len(edges) + 1):
        for chosen in itertools.combinations(range(len(edges)), size):
            for picks in itertools.permutations(range(n_actual), size):
                groups = [group_of[j] for j in picks]
                if groups == sorted(groups) and all(
                    j in edges[i] for i, j in zip(chosen, picks, strict=True)
                ):
                    best = size
                    break
    return best


grouped_graphs = st.lists(st.integers(1, 3), max_size=3).flatmap(
    lambda sizes: st.tuples(
        st.lists(
            st.lists(st.integers(0, max(sum(sizes) - 1, 0)), unique=True, max_size=sum(sizes)).map(
                sorted
            ),
            max_size=5,
        ),
        st.just([g for g, size in enumerate(sizes) for _ in range(size)]),
    )
)


@settings(max_examples=300, deadline=None)
@given(graph=grouped_graphs)
def test_group_alignment_keeps_message_order_and_is_longest(graph):
    edges, group_of = graph
    edges = [[j for j in e if j < len(group_of)] for e in edges]
    assign = align_in_groups(edges, group_of)
    taken = [j for j in assign if j is not None]
    assert len(taken) == len(set(taken))
    assert all(j in edges[i] for i, j in enumerate(assign) if j is not None)
    groups = [group_of[j] for j in taken]
    assert groups == sorted(groups)
    assert len(taken) == brute_force_group_alignment(edges, group_of)


def _messages_record(messages):
    """A record from model messages, each a list of (tool, args) requested together."""
    made, seq = [], 0
    for turn, message in enumerate(messages):
        for index, (name, args) in enumerate(message):
            made.append(make_call(seq, name, args, Outcome.OK, turn, index))
            seq += 1
    return ToolRecord(made)


messages_strategy = st.lists(
    st.lists(
        st.tuples(st.sampled_from(TOOLS), st.fixed_dictionaries({"x": st.sampled_from(VALUES)})),
        min_size=1,
        max_size=3,
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=200, deadline=None)
@given(
    messages=messages_strategy,
    mode=st.sampled_from(["strict", "subsequence"]),
    seed=st.integers(0, 2**32),
)
def test_parallel_calls_match_in_any_order_among_themselves(messages, mode, seed):
    rnd = random.Random(seed)
    record = _messages_record(messages)
    # The expected calls list each message's calls in an order of their own: the model's
    # listing order carries no meaning, so the trajectory holds.
    expected = []
    for message in messages:
        listed = list(message)
        rnd.shuffle(listed)
        expected += [{"tool": name, "args": dict(args)} for name, args in listed]
    trajectory = {"match": mode, "args": "exact", "calls": expected}
    assert verdict(trajectory, record)[0] == 1.0
    # ... and the record's listing order within a message changes nothing either.
    relisted = _messages_record([rnd.sample(m, len(m)) for m in messages])
    assert verdict(trajectory, relisted) == verdict(trajectory, record)


@pytest.mark.parametrize("mode", ["strict", "subsequence"])
def test_the_order_between_messages_still_counts(mode):
    # Two calls expected in the opposite order of the messages that requested them: out of
    # order; the same two calls requested in one message: in any order.
    first, second = ("search", {"x": "a"}), ("book", {"x": "b"})
    expected = [{"tool": "book", "args": {"x": "b"}}, {"tool": "search", "args": {"x": "a"}}]
    apart = _messages_record([[first], [second]])
    assert verdict({"match": mode, "args": "exact", "calls": expected}, apart)[0] < 1.0
    together = _messages_record([[first, second]])
    assert verdict({"match": mode, "args": "exact", "calls": expected}, together)[0] == 1.0


def test_parallel_calls_in_strict_mode_the_listed_order_was_a_false_failure():
    # The model asked for both lookups in one message, listing cancel first; the dataset
    # expects lookup then cancel. Until parallel calls had no order, strict failed this.
    record = _messages_record([[("cancel", {"x": "a"}), ("search", {"x": "b"})], [("book", {})]])
    expected = [
        {"tool": "search", "args": {"x": "b"}},
        {"tool": "cancel", "args": {"x": "a"}},
        {"tool": "book"},
    ]
    score, met, _, _ = verdict({"match": "strict", "calls": expected}, record)
    assert score == 1.0 and all(met)
