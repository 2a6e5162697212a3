"""The results store: one committed row per question, loaded back, append-only, no tool args."""

from __future__ import annotations

import sqlite3

import pytest

from tracegrade import QuestionAnswer, QuestionResult
from tracegrade.rundir.store import ResultStore
from tracegrade.verdicts.scoring import GraderVerdict, score_question


def _score(qid: str, value: float | None = 4.0, error: str | None = None) -> QuestionResult:
    graders = (
        []
        if error
        else [
            GraderVerdict(
                grader_id="g",
                score=value,
                min_score=0.0,
                max_score=5.0,
                reason="ok",
                must_pass=True,
                threshold=3.0,
                sample_scores=[value],
                checks=[{"id": "c", "status": "pass", "required": True}],
            ),
        ]
    )
    return score_question(QuestionResult(id=qid, target="t", graders=graders, error=error))


def _run(qid: str, *, tags: tuple[str, ...] | list[str] = (), **kw) -> dict:
    """What the agent's run adds to a result: its answer (and the question's tags)."""
    answer = QuestionAnswer(response=f"answer {qid}", row={"id": qid}, **kw)
    return {"tags": list(tags), "answer": answer}


def _with(run: dict, score: QuestionResult) -> QuestionResult:
    return score.model_copy(update=run)


def test_round_trip_of_runs_and_scores(tmp_path):
    with ResultStore(tmp_path / "r.sqlite") as store:
        gid = store.new_grading(mode="run", graders=[{"id": "g"}])
        store.commit_question(
            _with(
                _run("b", ordinal=1, tags=["x"], has_record=True, tool_call_count=2), _score("b")
            ),
            grading_id=gid,
        )
        store.commit_question(
            _with(_run("a", ordinal=0), _score("a", error="boom")), grading_id=gid
        )
    with ResultStore(tmp_path / "r.sqlite") as store:  # reopened: everything was committed
        runs = store.load_runs()
        assert [r.id for r in runs] == ["a", "b"]  # selection order
        assert runs[1].tags == ["x"] and runs[1].answer.tool_call_count == 2
        scores = {s.id: s for s in store.load_scores()}
        assert scores["b"].composite == 4.0 and scores["b"].graders[0].must_pass
        assert scores["b"].graders[0].checks[0]["status"] == "pass"
        assert scores["a"].errored and scores["a"].composite == 0.0
        assert store.finished_ids("t") == {"a", "b"}


def test_a_regrade_adds_rows_and_keeps_the_old_grading(tmp_path):
    with ResultStore(tmp_path / "r.sqlite") as store:
        first = store.new_grading(mode="run")
        store.commit_question(_with(_run("a"), _score("a", 4.0)), grading_id=first)
        second = store.new_grading(mode="stored")
        store.commit_score("t", _score("a", 1.0), grading_id=second)
        assert store.load_scores(grading_id=first)[0].composite == 4.0
        assert store.load_scores()[0].composite == 1.0  # the latest by default
        assert store.latest_grading_id() == second


def test_commit_is_append_only(tmp_path):
    path = tmp_path / "r.sqlite"
    with ResultStore(path) as store:
        gid = store.new_grading(mode="run")
        store.commit_question(_with(_run("a"), _score("a")), grading_id=gid)
        with sqlite3.connect(path) as other:  # a second reader sees the committed row at once
            first_rowid = other.execute(
                "SELECT rowid FROM questions WHERE question_id='a'"
            ).fetchone()
        for i in range(50):
            store.commit_question(_with(_run(f"q{i}"), _score(f"q{i}")), grading_id=gid)
        with sqlite3.connect(path) as other:
            assert (
                other.execute("SELECT rowid FROM questions WHERE question_id='a'").fetchone()
                == first_rowid
            )
            assert other.execute("SELECT COUNT(*) FROM questions").fetchone()[0] == 51


def test_schema_has_no_column_for_tool_arguments(tmp_path):
    with ResultStore(tmp_path / "r.sqlite") as store:
        columns = [r[1] for r in store._db.execute("PRAGMA table_info(questions)")]
    assert "has_record" in columns and "tool_call_count" in columns
    assert not [c for c in columns if "argument" in c or c in ("args", "tool_calls")]


def test_a_batch_of_questions_is_one_commit_read_back_whole_or_not_at_all(tmp_path):
    path = tmp_path / "r.sqlite"
    with ResultStore(path) as store:
        gid = store.new_grading(mode="run")
        batch = [_with(_run(f"q{i}", ordinal=i), _score(f"q{i}", float(i % 6))) for i in range(40)]
        store.commit_questions(batch, grading_id=gid)
        # a batch that fails half way (a value no column can hold) leaves nothing of it
        bad = [_with(_run("x", ordinal=40), _score("x")), _with(_run("y", ordinal=41), _score("y"))]
        bad[1].graders[0].sample_scores = [object()]
        with pytest.raises(TypeError):
            store.commit_questions(bad, grading_id=gid)
    with ResultStore(path) as store:  # reopened: the first batch, whole
        assert [r.id for r in store.load_runs()] == [f"q{i}" for i in range(40)]
        scores = store.load_scores()
        assert [s.composite for s in scores] == [float(i % 6) for i in range(40)]
        assert all(s.content_sha256 for s in scores)
