"""The results store of a run: one SQLite file (WAL) in the run directory.

Append-only: each finished question is one committed transaction (its run row, its grade rows,
its score row), so an interrupted run loses at most the questions in flight and a run never
rewrites what it already wrote. Re-grading adds rows under a new grading id.

Result rows carry no tool arguments (seed 000): the tool-call record stays in the run's trace
file; a row only says whether a record existed and how many calls it held. Every text a row
holds (the question as authored, its input and messages, the answer, errors, grader reasons,
rubric check entries and grader details) is written through the run's redaction policy: graders saw the raw values
in memory, the file keeps only redacted copies.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from ..errors import EvaluationError, InputError
from ..redaction import DEFAULT_POLICY, RedactionPolicy
from ..verdicts.scoring import GraderScore, QuestionScore, score_question
from .annotations import Annotation, answer_fingerprint, apply_annotations
from .record import question_fingerprint

__all__ = ["SCHEMA_VERSION", "STORE_FILE", "QuestionRun", "ResultStore"]

STORE_FILE = "results.sqlite"

SCHEMA_VERSION = 3
"""`PRAGMA user_version` of a store this release writes. 0: the first release (no version,
no trials, graders' details dropped); 1: a trial index on every row, graders' details kept,
each question's content fingerprint (what `compare` checks for drift); 2: the `annotations`
table (answers a person gave with `tracegrade label`); 3: how a conversation ended when it
did not end with an answer (`outcome`: interrupted, user_budget; its reason; whether the
question expected it)."""

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
    trial INTEGER NOT NULL DEFAULT 0,
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
    content_sha256 TEXT,
    outcome TEXT, outcome_reason TEXT, outcome_expected INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (target, question_id, trial)
);
CREATE TABLE IF NOT EXISTS grades (
    grading_id INTEGER NOT NULL,
    target TEXT NOT NULL,
    question_id TEXT NOT NULL,
    trial INTEGER NOT NULL DEFAULT 0,
    position INTEGER NOT NULL,
    grader_id TEXT NOT NULL,
    score REAL, min_score REAL NOT NULL, max_score REAL NOT NULL, mapped REAL,
    reason TEXT NOT NULL,
    error INTEGER NOT NULL, skipped INTEGER NOT NULL, binary INTEGER NOT NULL,
    weight REAL NOT NULL, must_pass INTEGER NOT NULL, threshold REAL NOT NULL,
    samples TEXT NOT NULL,
    checks TEXT NOT NULL,
    details TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (grading_id, target, question_id, trial, position)
);
CREATE TABLE IF NOT EXISTS annotations (
    annotation_id INTEGER PRIMARY KEY,
    target TEXT NOT NULL,
    question_id TEXT NOT NULL,
    trial INTEGER NOT NULL DEFAULT 0,
    label TEXT NOT NULL,
    answer INTEGER NOT NULL,
    note TEXT,
    author TEXT NOT NULL,
    created TEXT NOT NULL,
    answer_sha256 TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS scores (
    grading_id INTEGER NOT NULL,
    target TEXT NOT NULL,
    question_id TEXT NOT NULL,
    trial INTEGER NOT NULL DEFAULT 0,
    composite REAL, objective REAL,
    degraded INTEGER NOT NULL,
    error TEXT, error_type TEXT,
    PRIMARY KEY (grading_id, target, question_id, trial)
);
"""

_ANNOTATIONS_TABLE = _SCHEMA[_SCHEMA.index("CREATE TABLE IF NOT EXISTS annotations") :].split(
    "CREATE TABLE IF NOT EXISTS scores"
)[0]

# Version 0 -> 1: SQLite cannot change a primary key in place, so each table with a new key is
# rebuilt (created under a new name, filled, swapped). Columns a version-0 row lacks take their
# defaults (trial 0, no details); the content fingerprint is computed from the stored row.
_MIGRATE_0_TO_1 = (
    """
ALTER TABLE questions RENAME TO questions_v0;
ALTER TABLE grades RENAME TO grades_v0;
ALTER TABLE scores RENAME TO scores_v0;
"""
    + _SCHEMA
    + """
INSERT INTO questions (target, question_id, trial, ordinal, split, bundle, tags, row, input,
    messages, response, error, error_type, trace_id, latency_s, usage, has_record,
    tool_call_count, finished)
  SELECT target, question_id, 0, ordinal, split, bundle, tags, row, input, messages, response,
    error, error_type, trace_id, latency_s, usage, has_record, tool_call_count, finished
  FROM questions_v0;
INSERT INTO grades (grading_id, target, question_id, trial, position, grader_id, score,
    min_score, max_score, mapped, reason, error, skipped, binary, weight, must_pass, threshold,
    samples, checks)
  SELECT grading_id, target, question_id, 0, position, grader_id, score, min_score, max_score,
    mapped, reason, error, skipped, binary, weight, must_pass, threshold, samples, checks
  FROM grades_v0;
INSERT INTO scores (grading_id, target, question_id, trial, composite, objective, degraded,
    error, error_type)
  SELECT grading_id, target, question_id, 0, composite, objective, degraded, error, error_type
  FROM scores_v0;
DROP TABLE questions_v0;
DROP TABLE grades_v0;
DROP TABLE scores_v0;
"""
)


_MIGRATE_2_TO_3 = """
ALTER TABLE questions ADD COLUMN outcome TEXT;
ALTER TABLE questions ADD COLUMN outcome_reason TEXT;
ALTER TABLE questions ADD COLUMN outcome_expected INTEGER NOT NULL DEFAULT 0;
"""


@dataclass(slots=True)
class QuestionRun:
    """What a finished question run stores (no tool arguments; see the module docstring)."""

    target: str
    """The target it ran against."""
    question_id: str
    trial: int = 0
    """Trial index (0-based) when the target repeats each question."""
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
    content_sha256: str | None = None
    """Fingerprint of the question's content (computed from `row` when not given)."""
    outcome: str | None = None
    """How the conversation ended when not with an answer: `interrupted` (waiting on an
    `interrupt()` nobody answered), `user_budget` (the simulated user ran out of turns); None
    when it ended normally (or errored: see `error`)."""
    outcome_reason: str | None = None
    """What it was waiting on, in words."""
    outcome_expected: bool = False
    """The question said it would end this way: not a failure."""


_dumps = json.JSONEncoder(default=str).encode
"""`json.dumps(..., default=str)` without building an encoder per call (ten per question)."""


def _optional(redact: RedactionPolicy, text: str | None) -> str | None:
    return None if text is None else redact.text(text)


_JSON_COLUMNS = {
    "questions": ("tags", "row", "messages", "usage"),
    "grades": ("samples", "checks", "details"),
    "gradings": ("graders",),
    "meta": ("value",),
}
"""Columns that hold JSON text: a row whose text is not JSON is a damaged store (exit 4),
found when the store is opened rather than shown as a question that passed."""

_Method = TypeVar("_Method", bound=Callable[..., Any])


def _reads(method: _Method) -> _Method:
    """A read of the store: a damaged page, a dropped table or a row that is not what was
    written is invalid input naming the file (exit 4), never a traceback."""

    @functools.wraps(method)
    def read(self: ResultStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (sqlite3.DatabaseError, ValueError, TypeError, KeyError) as exc:
            raise self.damaged(exc) from exc

    return read  # type: ignore[return-value]


def _writes(method: _Method) -> _Method:
    """A write to the store: a full disk (or a file size limit, an I/O error) ends the run as
    incomplete (exit 3) naming the file; every question committed before it is kept, and the
    run resumes once there is room."""

    @functools.wraps(method)
    def write(self: ResultStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (sqlite3.OperationalError, OSError) as exc:
            raise EvaluationError(
                f"could not write the results store: {exc}",
                file=str(self.path),
                hint="disk full? every question committed so far is kept: free space, then "
                f"`tracegrade run --resume {self.path.parent.name}`",
            ) from exc

    return write  # type: ignore[return-value]


def _rollback(db: sqlite3.Connection) -> None:
    """Undo the open transaction; SQLite may have rolled it back itself (a full disk): the
    error that caused it is the one to report."""
    if db.in_transaction:
        db.execute("ROLLBACK")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class ResultStore:
    """The SQLite results file of one run directory.

    Opening a store written by an older release migrates it to `SCHEMA_VERSION` in one
    transaction; `open_readonly` migrates an in-memory copy instead, so reading a run (`show`,
    `compare`) never changes its files. A store newer than this release is refused (exit 4).
    """

    def __init__(
        self,
        path: Path | str,
        *,
        readonly: bool = False,
        redaction: RedactionPolicy = DEFAULT_POLICY,
    ) -> None:
        self.path = Path(path)
        self.redaction = redaction
        """Applied to every text written (reading returns what was written)."""
        if readonly:
            if not self.path.is_file():
                raise InputError(f"no results store at {self.path}", file=str(self.path))
            source = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            self._db = sqlite3.connect(":memory:", isolation_level=None)
            try:
                source.backup(self._db)
            except sqlite3.DatabaseError as exc:
                raise InputError(
                    f"{self.path} is not a readable results store: {exc}", file=str(self.path)
                ) from exc
            finally:
                source.close()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            existed = self.path.is_file() and self.path.stat().st_size > 0
            self._db = sqlite3.connect(self.path, isolation_level=None)
        try:
            if not readonly:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
            if readonly or existed:  # truncated, overwritten, bit-flipped: say so now, not later
                problems = [r[0] for r in self._db.execute("PRAGMA quick_check").fetchall()]
                if problems != ["ok"]:
                    raise sqlite3.DatabaseError("; ".join(map(str, problems[:3])))
            self._migrate()
            if readonly or existed:
                self._check_rows()
        except (sqlite3.DatabaseError, ValueError) as exc:
            self._db.close()
            raise self.damaged(exc) from exc

    def damaged(self, problem: BaseException | str) -> InputError:
        """The error for a store that is not what tracegrade wrote (exit 4, naming it)."""
        return InputError(
            f"the results store is damaged: {problem}",
            file=str(self.path),
            hint="not a readable SQLite results file; the run cannot be resumed, re-graded "
            "or shown from it",
        )

    def _check_rows(self) -> None:
        """Every table present, every JSON column JSON (SQLite's `json_valid`, no row read
        into Python)."""
        tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master")}
        missing = [
            t for t in ("questions", "grades", "scores", "gradings", "meta") if t not in tables
        ]
        if missing:
            raise ValueError(f"table {missing[0]!r} is missing")
        for table, columns in _JSON_COLUMNS.items():
            test = " OR ".join(f"json_valid({c}) = 0" for c in columns)
            bad = self._db.execute(f"SELECT rowid FROM {table} WHERE {test} LIMIT 1").fetchone()
            if bad is not None:
                raise ValueError(f"a row of table {table!r} holds text that is not JSON")

    @classmethod
    def in_run_dir(
        cls, run_dir: Path | str, *, redaction: RedactionPolicy = DEFAULT_POLICY
    ) -> ResultStore:
        return cls(Path(run_dir) / STORE_FILE, redaction=redaction)

    @classmethod
    def open_readonly(cls, run_dir: Path | str) -> ResultStore:
        """The store of `run_dir`, migrated in memory: the file is read, never written."""
        return cls(Path(run_dir) / STORE_FILE, readonly=True)

    @property
    def schema_version(self) -> int:
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        db = self._db
        version = self.schema_version
        if version > SCHEMA_VERSION:
            raise InputError(
                f"{self.path} has store schema version {version}, newer than this tracegrade "
                f"reads ({SCHEMA_VERSION})",
                file=str(self.path),
                hint="upgrade tracegrade to read this run",
            )
        if version == SCHEMA_VERSION:
            return
        exists = db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'questions'"
        ).fetchone()
        db.execute("BEGIN IMMEDIATE")
        try:
            if not exists:
                for statement in _statements(_SCHEMA):
                    db.execute(statement)
            elif version == 0:
                for statement in _statements(_MIGRATE_0_TO_1):
                    db.execute(statement)
                rows = db.execute("SELECT target, question_id, trial, row FROM questions")
                db.executemany(
                    "UPDATE questions SET content_sha256 = ? "
                    "WHERE target = ? AND question_id = ? AND trial = ?",
                    [
                        (question_fingerprint(json.loads(r[3])), r[0], r[1], r[2])
                        for r in rows.fetchall()
                    ],
                )
            if version <= 1:  # 1 -> 2: the annotations table (nothing else changed)
                for statement in _statements(_ANNOTATIONS_TABLE):
                    db.execute(statement)
            columns = {r[1] for r in db.execute("PRAGMA table_info(questions)")}
            if "outcome" not in columns:  # 2 -> 3: how a conversation ended
                for statement in _statements(_MIGRATE_2_TO_3):
                    db.execute(statement)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            _rollback(db)
            raise

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- meta and gradings ----------------------------------------------------------------
    @_writes
    def set_meta(self, key: str, value: Any) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value))
        )

    @_reads
    def meta(self, key: str, default: Any = None) -> Any:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    @_writes
    def new_grading(
        self, *, mode: str, graders: Sequence[dict[str, Any]] = (), unfinished: bool = False
    ) -> int:
        """Open a grading (the run's own, or a re-grade) and return its id. `unfinished`: a
        re-grade, never the latest until `end_grading` (marked in the same transaction, so a
        kill between the two cannot leave an empty grading as the latest)."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            cur = db.execute(
                "INSERT INTO gradings (created, mode, graders) VALUES (?, ?, ?)",
                (_now(), mode, json.dumps(list(graders), default=str)),
            )
            grading_id = int(cur.lastrowid)  # type: ignore[arg-type]
            if unfinished:
                db.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, 'true')",
                    (f"unfinished_grading:{grading_id}",),
                )
            db.execute("COMMIT")
        except BaseException:
            _rollback(db)
            raise
        return grading_id

    @_reads
    def gradings(self) -> list[dict[str, Any]]:
        rows = self._db.execute(
            "SELECT grading_id, created, mode, graders FROM gradings ORDER BY grading_id"
        ).fetchall()
        return [
            {"grading_id": r[0], "created": r[1], "mode": r[2], "graders": json.loads(r[3])}
            for r in rows
        ]

    @_reads
    def latest_grading_id(self) -> int | None:
        """The latest grading that finished (a `grade` killed half-way left a grading of some
        rows: never the run's latest); the run's own grading counts however the run ended."""
        ids = [g["grading_id"] for g in self.gradings()]
        unfinished = set(self.unfinished_gradings())
        done = [i for i in ids if i not in unfinished or i == min(ids)]
        return max(done) if done else None

    @_reads
    def unfinished_gradings(self) -> list[int]:
        """Re-gradings started and never finished (`new_grading(unfinished=True)` without
        `end_grading`)."""
        rows = self._db.execute("SELECT key FROM meta WHERE key LIKE 'unfinished_grading:%'")
        return sorted(int(r[0].split(":", 1)[1]) for r in rows)

    @_writes
    def end_grading(self, grading_id: int) -> None:
        self._db.execute("DELETE FROM meta WHERE key = ?", (f"unfinished_grading:{grading_id}",))

    # -- writing ---------------------------------------------------------------------------
    @_writes
    def commit_question(self, run: QuestionRun, score: QuestionScore, *, grading_id: int) -> None:
        """Write one finished question (run row, grade rows, score row) in one transaction."""
        db = self._db
        redact = self.redaction
        row = redact.value(run.row)
        # From the row as stored, so a run migrated from an older store (fingerprinted from
        # its stored row) and a new run fingerprint the same question alike.
        fingerprint = run.content_sha256 or question_fingerprint(row)
        score.content_sha256 = fingerprint
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(
                f"INSERT OR REPLACE INTO questions ({', '.join(_QUESTION_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(_QUESTION_COLUMNS))})",
                (
                    run.target,
                    run.question_id,
                    run.trial,
                    run.ordinal,
                    run.split,
                    run.bundle,
                    json.dumps(run.tags),
                    _dumps(row),
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
                    fingerprint,
                    run.outcome,
                    _optional(redact, run.outcome_reason),
                    int(run.outcome_expected),
                ),
            )
            self._write_score(run.target, score, grading_id)
            db.execute("COMMIT")
        except BaseException:
            _rollback(db)
            raise

    @_writes
    def commit_score(self, target: str, score: QuestionScore, *, grading_id: int) -> None:
        """Write a re-grade of an already stored question (grade and score rows only)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._write_score(target, score, grading_id)
            self._db.execute("COMMIT")
        except BaseException:
            _rollback(self._db)
            raise

    def _write_score(self, target: str, score: QuestionScore, grading_id: int) -> None:
        redact = self.redaction
        self._db.executemany(
            f"INSERT OR REPLACE INTO grades ({', '.join(_GRADE_COLUMNS)}) "
            f"VALUES ({', '.join('?' * len(_GRADE_COLUMNS))})",
            [
                (
                    grading_id,
                    target,
                    score.question_id,
                    score.trial,
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
                    _dumps(redact.value(g.details)),
                )
                for position, g in enumerate(score.graders)
            ],
        )
        self._db.execute(
            "INSERT OR REPLACE INTO scores (grading_id, target, question_id, trial, composite, "
            "objective, degraded, error, error_type) VALUES (?,?,?,?,?,?,?,?,?)",
            (
                grading_id,
                target,
                score.question_id,
                score.trial,
                score.composite,
                score.objective,
                int(score.degraded),
                _optional(redact, score.error),
                score.error_type,
            ),
        )

    # -- reading ---------------------------------------------------------------------------
    def finished_ids(self, target: str) -> set[str]:
        """Question ids of `target` with at least one committed trial."""
        return {qid for qid, _trial in self.finished_trials(target)}

    @_reads
    def finished_trials(self, target: str) -> set[tuple[str, int]]:
        """(question id, trial) pairs of `target` already committed."""
        rows = self._db.execute(
            "SELECT question_id, trial FROM questions WHERE target = ?", (target,)
        )
        return {(r[0], r[1]) for r in rows}

    @_reads
    def targets(self) -> list[str]:
        rows = self._db.execute("SELECT DISTINCT target FROM questions ORDER BY target")
        return [r[0] for r in rows]

    @_reads
    def load_runs(self, target: str | None = None) -> list[QuestionRun]:
        """The stored question runs (in selection order, trials in order)."""
        sql = f"SELECT {', '.join(_QUESTION_COLUMNS)} FROM questions"
        args: tuple[Any, ...] = ()
        if target is not None:
            sql += " WHERE target = ?"
            args = (target,)
        rows = self._db.execute(sql + " ORDER BY target, ordinal, trial", args).fetchall()
        out = []
        for values in rows:
            r = dict(zip(_QUESTION_COLUMNS, values, strict=True))
            del r["finished"]
            for key in ("tags", "row", "messages", "usage"):
                r[key] = json.loads(r[key])
            r["has_record"] = bool(r["has_record"])
            r["outcome_expected"] = bool(r["outcome_expected"])
            out.append(QuestionRun(**r))
        return out

    @_reads
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
        sql = (
            "SELECT target, question_id, trial, split, bundle, tags, trace_id, content_sha256, "
            "outcome, outcome_reason, outcome_expected FROM questions"
        )
        args: tuple[Any, ...] = ()
        if target is not None:
            sql += " WHERE target = ?"
            args = (target,)
        runs = {
            (r[0], r[1], r[2]): {
                "split": r[3],
                "bundle": r[4],
                "tags": json.loads(r[5]),
                "trace_id": r[6],
                "content_sha256": r[7],
                "outcome": r[8],
                "outcome_reason": r[9],
                "outcome_expected": bool(r[10]),
            }
            for r in self._db.execute(sql + " ORDER BY target, ordinal, trial", args)
        }
        grades: dict[tuple[str, str, int], list[GraderScore]] = {}
        for r in self._db.execute(
            "SELECT target, question_id, trial, grader_id, score, min_score, max_score, reason, "
            "error, binary, weight, must_pass, threshold, samples, checks, details FROM grades "
            "WHERE grading_id = ? ORDER BY target, question_id, trial, position",
            (grading_id,),
        ):
            grades.setdefault((r[0], r[1], r[2]), []).append(
                GraderScore(
                    grader_id=r[3],
                    score=r[4],
                    min_score=r[5],
                    max_score=r[6],
                    reason=r[7],
                    error=bool(r[8]),
                    binary=bool(r[9]),
                    weight=r[10],
                    must_pass=bool(r[11]),
                    threshold=r[12],
                    sample_scores=json.loads(r[13]),
                    checks=json.loads(r[14]),
                    details=json.loads(r[15]),
                )
            )
        # The error is the grading's own: a re-grade can degrade a question the run scored
        # (its record missing from the trace file).
        scored = {
            (r[0], r[1], r[2]): (r[3], r[4])
            for r in self._db.execute(
                "SELECT target, question_id, trial, error, error_type FROM scores "
                "WHERE grading_id = ?",
                (grading_id,),
            )
        }
        notes: dict[tuple[str, str, int], list[Annotation]] = {}
        for annotation in self.load_annotations(target=target):
            key = (annotation.target, annotation.question_id, annotation.trial)
            notes.setdefault(key, []).append(annotation)
        out = []
        for key, run in runs.items():
            if key not in scored:
                continue
            question = QuestionScore(
                question_id=key[1],
                target=key[0],
                trial=key[2],
                graders=grades.get(key, []),
                error=scored[key][0],
                error_type=scored[key][1],
                **run,
            )
            # A person's Review decisions replace the judge's "review" before scoring.
            apply_annotations(question, notes.get(key, ()))
            out.append(score_question(question))
        return out

    # -- annotations (grading by hand) ------------------------------------------------------
    @_writes
    def add_annotation(
        self,
        *,
        target: str,
        question_id: str,
        trial: int = 0,
        label: str,
        answer: bool,
        author: str,
        note: str | None = None,
        answer_sha256: str | None = None,
        created: str | None = None,
    ) -> Annotation:
        """Store one answer a person gave about a question trial, committed at once (nothing
        lost when labelling stops half way). `answer_sha256` defaults to the stored answer's,
        `created` to now (`merge` keeps when a shard's label was given)."""
        if answer_sha256 is None:
            row = self._db.execute(
                "SELECT response FROM questions WHERE target = ? AND question_id = ? AND trial = ?",
                (target, question_id, trial),
            ).fetchone()
            if row is None:
                raise InputError(
                    f"the run has no question {question_id!r} (trial {trial}) for target {target!r}"
                )
            answer_sha256 = answer_fingerprint(row[0])
        created = created or _now()
        self._db.execute(
            "INSERT INTO annotations (target, question_id, trial, label, answer, note, author, "
            "created, answer_sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                target,
                question_id,
                trial,
                label,
                int(bool(answer)),
                _optional(self.redaction, note),
                self.redaction.text(author),
                created,
                answer_sha256,
            ),
        )
        return Annotation(
            target=target,
            question_id=question_id,
            trial=trial,
            label=label,
            answer=bool(answer),
            author=author,
            created=created,
            answer_sha256=answer_sha256,
            note=note,
        )

    @_reads
    def load_annotations(self, *, target: str | None = None) -> list[Annotation]:
        """Every annotation of the run (of `target`), oldest first, each flagged stale when the
        stored answer it was about has changed since."""
        answers = {
            (r[0], r[1], r[2]): answer_fingerprint(r[3])
            for r in self._db.execute("SELECT target, question_id, trial, response FROM questions")
        }
        sql = (
            "SELECT target, question_id, trial, label, answer, note, author, created, "
            "answer_sha256 FROM annotations"
        )
        args: tuple[Any, ...] = ()
        if target is not None:
            sql += " WHERE target = ?"
            args = (target,)
        return [
            Annotation(
                target=r[0],
                question_id=r[1],
                trial=r[2],
                label=r[3],
                answer=bool(r[4]),
                note=r[5],
                author=r[6],
                created=r[7],
                answer_sha256=r[8],
                stale=answers.get((r[0], r[1], r[2])) != r[8],
            )
            for r in self._db.execute(sql + " ORDER BY annotation_id", args)
        ]


_QUESTION_COLUMNS = (
    "target",
    "question_id",
    "trial",
    "ordinal",
    "split",
    "bundle",
    "tags",
    "row",
    "input",
    "messages",
    "response",
    "error",
    "error_type",
    "trace_id",
    "latency_s",
    "usage",
    "has_record",
    "tool_call_count",
    "finished",
    "content_sha256",
    "outcome",
    "outcome_reason",
    "outcome_expected",
)

_GRADE_COLUMNS = (
    "grading_id",
    "target",
    "question_id",
    "trial",
    "position",
    "grader_id",
    "score",
    "min_score",
    "max_score",
    "mapped",
    "reason",
    "error",
    "skipped",
    "binary",
    "weight",
    "must_pass",
    "threshold",
    "samples",
    "checks",
    "details",
)


def _statements(script: str) -> list[str]:
    """A script split into statements, so a migration runs inside the caller's transaction
    (`executescript` would commit first)."""
    return [s.strip() for s in script.split(";") if s.strip()]
