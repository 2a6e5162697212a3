"""The results store of a run: one SQLite file (WAL) in the run directory.

Append-only: each finished question is one committed transaction (its run row, its grade rows,
its score row), so an interrupted run loses at most the questions in flight and a run never
rewrites what it already wrote. Re-grading adds rows under a new grading id.

Result rows carry no tool arguments (seed 000): the tool-call record stays in the run's trace
file; a row only says whether a record existed and how many calls it held. Every text a row
holds (the question as authored, its input and messages, the answer, errors, grader reasons and
rubric check entries) is written through the run's redaction policy: graders saw the raw values
in memory, the file keeps only redacted copies.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.redaction import DEFAULT_POLICY, RedactionPolicy
from harness.runs.scoring import GraderScore, QuestionScore, score_question

__all__ = ["STORE_FILE", "QuestionRun", "ResultStore"]

STORE_FILE = "results.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS gradings (
    grading_id INTEGER PRIMARY KEY,
    created TEXT NOT NULL,
    mode TEXT NOT NULL,
    graders TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS questions (
    target TEXT NOT NULL,
    question_id TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    split TEXT, bundle TEXT, tags TEXT NOT NULL,
    row TEXT NOT NULL,
    input TEXT NOT NULL,
    messages TEXT NOT NULL,
    response TEXT NOT NULL,
    error TEXT, error_type TEXT, trace_id TEXT,
    latency_s REAL NOT NULL,
    usage TEXT NOT NULL,
    has_record INTEGER NOT NULL,
    tool_call_count INTEGER,
    finished TEXT NOT NULL,
    PRIMARY KEY (target, question_id)
);
CREATE TABLE IF NOT EXISTS grades (
    grading_id INTEGER NOT NULL,
    target TEXT NOT NULL,
    question_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    grader_id TEXT NOT NULL,
    score REAL, min_score REAL NOT NULL, max_score REAL NOT NULL, mapped REAL,
    reason TEXT NOT NULL,
    error INTEGER NOT NULL, skipped INTEGER NOT NULL, binary INTEGER NOT NULL,
    weight REAL NOT NULL, must_pass INTEGER NOT NULL, threshold REAL NOT NULL,
    samples TEXT NOT NULL,
    checks TEXT NOT NULL,
    PRIMARY KEY (grading_id, target, question_id, position)
);
CREATE TABLE IF NOT EXISTS scores (
    grading_id INTEGER NOT NULL,
    target TEXT NOT NULL,
    question_id TEXT NOT NULL,
    composite REAL, objective REAL,
    degraded INTEGER NOT NULL,
    error TEXT, error_type TEXT,
    PRIMARY KEY (grading_id, target, question_id)
);
"""


@dataclass(slots=True)
class QuestionRun:
    """What a finished question run stores (no tool arguments; see the module docstring)."""

    target: str
    """The target it ran against."""
    question_id: str
    ordinal: int = 0
    """Position of the question in the selection, so reports keep dataset order."""
    split: str | None = None
    bundle: str | None = None
    tags: list[str] = field(default_factory=list)
    row: dict[str, Any] = field(default_factory=dict)
    """The question as authored (the grader context is rebuilt from it when re-grading)."""
    input: str = ""
    """The flattened transcript graders received as `input`."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    """The question's input messages (role/content) as the agent received them."""
    response: str = ""
    """The agent's final answer text."""
    error: str | None = None
    """Why the agent run failed; None when it ran."""
    error_type: str | None = None
    trace_id: str | None = None
    latency_s: float = 0.0
    usage: dict[str, Any] = field(default_factory=dict)
    has_record: bool = False
    """A tool-call record existed (agent mode, captured). False in chat mode."""
    tool_call_count: int | None = None
    """Number of calls in the record; None when no record exists."""


_dumps = json.JSONEncoder(default=str).encode
"""`json.dumps(..., default=str)` without building an encoder per call (ten per question)."""


def _optional(redact: RedactionPolicy, text: str | None) -> str | None:
    return None if text is None else redact.text(text)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class ResultStore:
    """The SQLite results file of one run directory."""

    def __init__(self, path: Path | str, *, redaction: RedactionPolicy = DEFAULT_POLICY) -> None:
        self.path = Path(path)
        self.redaction = redaction
        """Applied to every text written (reading returns what was written)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    @classmethod
    def in_run_dir(
        cls, run_dir: Path | str, *, redaction: RedactionPolicy = DEFAULT_POLICY
    ) -> ResultStore:
        return cls(Path(run_dir) / STORE_FILE, redaction=redaction)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- meta and gradings ----------------------------------------------------------------
    def set_meta(self, key: str, value: Any) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value))
        )

    def meta(self, key: str, default: Any = None) -> Any:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def new_grading(self, *, mode: str, graders: Sequence[dict[str, Any]] = ()) -> int:
        """Open a grading (the run's own, or a re-grade) and return its id."""
        cur = self._db.execute(
            "INSERT INTO gradings (created, mode, graders) VALUES (?, ?, ?)",
            (_now(), mode, json.dumps(list(graders), default=str)),
        )
        return int(cur.lastrowid)  # type: ignore[arg-type]

    def gradings(self) -> list[dict[str, Any]]:
        rows = self._db.execute(
            "SELECT grading_id, created, mode, graders FROM gradings ORDER BY grading_id"
        ).fetchall()
        return [
            {"grading_id": r[0], "created": r[1], "mode": r[2], "graders": json.loads(r[3])}
            for r in rows
        ]

    def latest_grading_id(self) -> int | None:
        row = self._db.execute("SELECT MAX(grading_id) FROM gradings").fetchone()
        return row[0]

    # -- writing ---------------------------------------------------------------------------
    def commit_question(self, run: QuestionRun, score: QuestionScore, *, grading_id: int) -> None:
        """Write one finished question (run row, grade rows, score row) in one transaction."""
        db = self._db
        redact = self.redaction
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(
                "INSERT OR REPLACE INTO questions VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run.target,
                    run.question_id,
                    run.ordinal,
                    run.split,
                    run.bundle,
                    json.dumps(run.tags),
                    _dumps(redact.value(run.row)),
                    redact.text(run.input),
                    _dumps(redact.value(run.messages)),
                    redact.answer(run.response),
                    _optional(redact, run.error),
                    run.error_type,
                    run.trace_id,
                    run.latency_s,
                    _dumps(run.usage),
                    int(run.has_record),
                    run.tool_call_count,
                    _now(),
                ),
            )
            self._write_score(run.target, score, grading_id)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def commit_score(self, target: str, score: QuestionScore, *, grading_id: int) -> None:
        """Write a re-grade of an already stored question (grade and score rows only)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._write_score(target, score, grading_id)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def _write_score(self, target: str, score: QuestionScore, grading_id: int) -> None:
        redact = self.redaction
        self._db.executemany(
            "INSERT OR REPLACE INTO grades VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                (
                    grading_id,
                    target,
                    score.question_id,
                    position,
                    g.grader_id,
                    g.score,
                    g.min_score,
                    g.max_score,
                    g.mapped,
                    redact.text(g.reason),
                    int(g.error),
                    int(g.skipped),
                    int(g.binary),
                    g.weight,
                    int(g.must_pass),
                    g.threshold,
                    json.dumps(g.sample_scores),
                    _dumps(redact.value(g.checks)),
                )
                for position, g in enumerate(score.graders)
            ],
        )
        self._db.execute(
            "INSERT OR REPLACE INTO scores VALUES (?,?,?,?,?,?,?,?)",
            (
                grading_id,
                target,
                score.question_id,
                score.composite,
                score.objective,
                int(score.degraded),
                _optional(redact, score.error),
                score.error_type,
            ),
        )

    # -- reading ---------------------------------------------------------------------------
    def finished_ids(self, target: str) -> set[str]:
        """Questions of `target` already committed (what `--resume` skips)."""
        rows = self._db.execute("SELECT question_id FROM questions WHERE target = ?", (target,))
        return {r[0] for r in rows}

    def targets(self) -> list[str]:
        rows = self._db.execute("SELECT DISTINCT target FROM questions ORDER BY target")
        return [r[0] for r in rows]

    def load_runs(self, target: str | None = None) -> list[QuestionRun]:
        """The stored question runs (in selection order)."""
        sql = "SELECT * FROM questions"
        args: tuple[Any, ...] = ()
        if target is not None:
            sql += " WHERE target = ?"
            args = (target,)
        rows = self._db.execute(sql + " ORDER BY target, ordinal", args).fetchall()
        return [
            QuestionRun(
                target=r[0],
                question_id=r[1],
                ordinal=r[2],
                split=r[3],
                bundle=r[4],
                tags=json.loads(r[5]),
                row=json.loads(r[6]),
                input=r[7],
                messages=json.loads(r[8]),
                response=r[9],
                error=r[10],
                error_type=r[11],
                trace_id=r[12],
                latency_s=r[13],
                usage=json.loads(r[14]),
                has_record=bool(r[15]),
                tool_call_count=r[16],
            )
            for r in rows
        ]

    def load_scores(
        self, *, grading_id: int | None = None, target: str | None = None
    ) -> list[QuestionScore]:
        """Question scores of one grading (default: the latest), rebuilt from the rows, in
        selection order. Questions never graded under that grading are left out."""
        if grading_id is None:
            grading_id = self.latest_grading_id()
            if grading_id is None:
                return []
        # Only the columns a score needs: rows, inputs and responses stay on disk.
        sql = "SELECT target, question_id, split, bundle, tags, trace_id FROM questions"
        args: tuple[Any, ...] = ()
        if target is not None:
            sql += " WHERE target = ?"
            args = (target,)
        runs = {
            (r[0], r[1]): {
                "split": r[2],
                "bundle": r[3],
                "tags": json.loads(r[4]),
                "trace_id": r[5],
            }
            for r in self._db.execute(sql + " ORDER BY target, ordinal", args)
        }
        grades: dict[tuple[str, str], list[GraderScore]] = {}
        for r in self._db.execute(
            "SELECT target, question_id, grader_id, score, min_score, max_score, reason, error, "
            "binary, weight, must_pass, threshold, samples, checks FROM grades "
            "WHERE grading_id = ? ORDER BY target, question_id, position",
            (grading_id,),
        ):
            grades.setdefault((r[0], r[1]), []).append(
                GraderScore(
                    grader_id=r[2],
                    score=r[3],
                    min_score=r[4],
                    max_score=r[5],
                    reason=r[6],
                    error=bool(r[7]),
                    binary=bool(r[8]),
                    weight=r[9],
                    must_pass=bool(r[10]),
                    threshold=r[11],
                    sample_scores=json.loads(r[12]),
                    checks=json.loads(r[13]),
                )
            )
        # The error is the grading's own: a re-grade can degrade a question the run scored
        # (its record missing from the trace file).
        scored = {
            (r[0], r[1]): (r[2], r[3])
            for r in self._db.execute(
                "SELECT target, question_id, error, error_type FROM scores WHERE grading_id = ?",
                (grading_id,),
            )
        }
        out = []
        for key, run in runs.items():
            if key not in scored:
                continue
            out.append(
                score_question(
                    QuestionScore(
                        question_id=key[1],
                        target=key[0],
                        graders=grades.get(key, []),
                        error=scored[key][0],
                        error_type=scored[key][1],
                        **run,
                    )
                )
            )
        return out
