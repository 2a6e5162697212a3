"""grade-traces reads an archive through a spill (spans on disk by trace id, one trace in memory
at a time): whatever order the spans arrive in, across lines and files, each trace comes back
whole, the same trace the in-memory grouping reads, in start order."""

from __future__ import annotations

import enum
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_grade_traces import _genai_request, _genai_trace
from tracegrade.traces import archive
from tracegrade.traces import spill as spill_module
from tracegrade.traces.spans import Span, spans_of_request
from tracegrade.traces.spill import SpilledPairs, TraceSpill, spill_trace_files


def _spans(trace_id: str, start: int) -> list[Span]:
    request = _genai_request(
        _genai_trace(trace_id, "paris", calls=[("lookup", "c1", {})], ran=[("lookup", "c1", 0)])
    )
    spans = list(spans_of_request(request))
    for s in spans:
        s.start_ns += start
        s.end_ns += start
    return spans


def _key(trace) -> tuple:
    return (
        trace.trace_id,
        trace.start_ns,
        trace.span_count,
        [(c.name, c.outcome, c.call_id) for c in trace.record],
        trace.record.complete,
    )


@settings(max_examples=40, deadline=None)
@given(
    starts=st.lists(st.integers(0, 10**6), min_size=1, max_size=8, unique=True),
    seed=st.randoms(use_true_random=False),
)
def test_any_interleaving_of_spans_gives_the_traces_the_in_memory_grouping_gives(starts, seed):
    spans = [s for n, start in enumerate(starts) for s in _spans(f"{n + 1:032x}", start)]
    seed.shuffle(spans)
    expected = archive.traces_of_spans(list(spans))
    with TraceSpill() as spill:
        for cut in range(0, len(spans), 3):  # arriving in small, interleaved batches
            spill.add(spans[cut : cut + 3])
        got = list(spill.traces())
        assert [_key(t) for t in got] == [_key(t) for t in expected.traces]
        assert [t.start_ns for t in got] == sorted(t.start_ns for t in got)
        assert spill.summary.spans == len(spans)


def test_a_trace_split_across_files_is_read_whole_and_the_span_cap_still_drops(
    tmp_path, monkeypatch
):
    first, second = _spans("a" * 32, 0), _spans("b" * 32, 5)
    (tmp_path / "1.jsonl").write_text(
        json.dumps(_genai_request([_otlp(s) for s in first[:2] + second[:1]])) + "\n"
    )
    (tmp_path / "2.jsonl").write_text(
        json.dumps(_genai_request([_otlp(s) for s in second[1:] + first[2:]])) + "\n"
    )
    with spill_trace_files([tmp_path]) as spill:
        assert [t.trace_id for t in spill.traces()] == ["a" * 32, "b" * 32]
        assert all(len(t.record) == 1 and t.record.complete for t in spill.traces())
    monkeypatch.setattr(archive, "MAX_SPANS_PER_TRACE", len(first) - 1)
    with spill_trace_files([tmp_path]) as spill:
        assert list(spill.traces()) == []
        assert spill.summary.too_large == ["a" * 32, "b" * 32]
        assert any("dropped for holding more than" in n for n in spill.notes())


def test_pairs_wait_on_disk_and_come_back_as_trials_in_start_order():
    class Q:
        def __init__(self, qid: str) -> None:
            self.id, self.input = qid, "hi"

        def flattened_input(self) -> str:
            return self.input

        def input_messages(self) -> list:
            return [{"role": "user", "content": self.input}]

    with TraceSpill() as spill:
        for n, start in enumerate((30, 10, 20)):
            spill.add(_spans(f"{n + 1:032x}", start))
        pairs = SpilledPairs(spill)
        question = Q("paris")
        pairs.pair(spill.traces(), archive.Pairer([question]), since_ns=15)
        trials = list(pairs.trials(lambda qid, _trace: {"paris": question}[qid]))
        assert [(t.trace_id, trial) for _, t, _, trial in trials] == [
            (f"{3:032x}", 0),
            (f"{1:032x}", 1),
        ]
        assert pairs.outside_window == 1 and pairs.repeats() == 2
        assert (
            pairs.notes(1)[0] == "paired 2 trace(s) with 1 of 1 question(s): 2 by conversation-id"
        )


def _otlp(span: Span) -> dict:
    from tracegrade.traces.spans import request_of_spans

    return request_of_spans([span])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]


class _Level(enum.IntEnum):
    HIGH = 3


class _Text(str):
    """A value of a trace source plugin's own type: no plain JSON-like value."""


_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**80), 2**80)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.binary(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=40, deadline=None)
@given(
    values=st.dictionaries(st.text(min_size=1, max_size=6), _VALUES, max_size=4),
    odd=st.sampled_from([None, _Level.HIGH, _Text("plugin"), ("a", 1)]),
)
def test_a_span_comes_back_from_the_spill_as_it_went_in_whatever_its_values(values, odd):

    spans = _spans("c" * 32, 0)
    spans[0].attributes.update(values)
    spans[1].resource = {"service.name": "app", "odd": odd}
    seen: list[list[Span]] = []
    with pytest.MonkeyPatch.context() as patch:
        read = spill_module.agent_trace
        patch.setattr(spill_module, "agent_trace", lambda got: seen.append(got) or read(got))
        with TraceSpill() as spill:
            spill.add(spans)
            (trace,) = list(spill.traces())
    assert trace.trace_id == "c" * 32
    (back,) = seen
    assert sorted(back, key=lambda s: s.span_id) == sorted(spans, key=lambda s: s.span_id)
    assert [type(s.resource.get("odd")) for s in back if "odd" in s.resource] == [type(odd)]
