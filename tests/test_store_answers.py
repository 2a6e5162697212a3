"""`ResultStore.load_answers`: the answers the HTML report shows, read without building each
question's whole validated result, are the answers `load_runs` reads; a damaged row is
invalid input either way."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracegrade import InputError, QuestionAnswer, QuestionResult
from tracegrade.rundir.store import ResultStore

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
_ANSWERS = st.builds(
    QuestionAnswer,
    ordinal=st.integers(0, 50),
    row=st.dictionaries(st.text(max_size=6), _JSON, max_size=3),
    input=st.text(max_size=20),
    messages=st.lists(
        st.fixed_dictionaries({"role": st.sampled_from(["user", "system"]), "content": _JSON}),
        max_size=3,
    ),
    response=st.text(max_size=20),
    latency_s=st.floats(0, 100),
    usage=st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
    has_record=st.booleans(),
    tool_call_count=st.none() | st.integers(0, 9),
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(answers=st.lists(_ANSWERS, min_size=1, max_size=4))
def test_answers_are_what_load_runs_reads(tmp_path_factory, answers):
    path = tmp_path_factory.mktemp("store") / "r.sqlite"
    with ResultStore(path) as store:
        gid = store.new_grading(mode="run")
        for i, answer in enumerate(answers):
            q = QuestionResult(id=f"q{i}", target="t", trial=i % 2, answer=answer)
            store.commit_question(q, grading_id=gid)
    with ResultStore(path) as store:
        expected = {(r.id, r.trial): r.answer for r in store.load_runs("t")}
        got = store.load_answers("t")
        assert got == expected
        assert {k: v.model_dump() for k, v in got.items()} == {
            k: v.model_dump() for k, v in expected.items()
        }
        assert store.load_answers("other") == {}


def test_a_damaged_row_is_invalid_input_as_load_runs_says(tmp_path):
    path = tmp_path / "r.sqlite"
    with ResultStore(path) as store:
        gid = store.new_grading(mode="run")
        q = QuestionResult(id="q", target="t", answer=QuestionAnswer(messages=[]))
        store.commit_question(q, grading_id=gid)
    with sqlite3.connect(path) as db:  # not a list of messages: not what the store wrote
        db.execute("""UPDATE questions SET messages = '{"role": "user"}'""")
    with ResultStore(path) as store:
        with pytest.raises(InputError):
            store.load_runs("t")
        with pytest.raises(InputError):
            store.load_answers("t")
