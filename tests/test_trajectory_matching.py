"""The assignment behind trajectory_grader: the verdict never depends on the order expectations
are listed in (unordered, superset, subset), and both algorithms are optimal, checked against
brute force on small instances."""

from __future__ import annotations

import itertools
import random

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tracegrade.graders.context import build_context
from tracegrade.graders.trajectory import TrajectoryGrader
from tracegrade.graders.trajectory_matching import align_in_order, max_matching
from tracegrade.records import Outcome, ToolCall, ToolRecord

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
