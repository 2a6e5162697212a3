"""The results store's SQLite schema: its tables, the columns a row is written with, and the
migrations that bring a store of an older release to `SCHEMA_VERSION` (`tracegrade.rundir.store`
opens the file and reads and writes the rows)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from ..errors import InputError
from .record import question_fingerprint

__all__ = [
    "GRADE_COLUMNS",
    "QUESTION_COLUMNS",
    "SCHEMA_VERSION",
    "migrate",
    "named_rows",
    "rollback",
]

SCHEMA_VERSION = 4
"""`PRAGMA user_version` of a store this release writes. 0: the first release (no version,
no trials, graders' details dropped); 1: a trial index on every row, graders' details kept,
each question's content fingerprint (what `compare` checks for drift); 2: the `annotations`
table (answers a person gave with `tracegrade label`); 3: how a conversation ended when it
did not end with an answer (`outcome`: interrupted, user_budget; its reason; whether the
question expected it); 4: the judges' model calls of each grading (`scores.judge_usage`; the
agent's calls and latencies live in the `usage` JSON every version has)."""

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
    judge_usage TEXT NOT NULL DEFAULT '{}',
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


_MIGRATE_3_TO_4 = """
ALTER TABLE scores ADD COLUMN judge_usage TEXT NOT NULL DEFAULT '{}';
"""


QUESTION_COLUMNS = (
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

GRADE_COLUMNS = (
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


def rollback(db: sqlite3.Connection) -> None:
    """Undo the open transaction; SQLite may have rolled it back itself (a full disk): the
    error that caused it is the one to report."""
    if db.in_transaction:
        db.execute("ROLLBACK")


def migrate(db: sqlite3.Connection, path: Path) -> None:
    """Bring the store in `db` to `SCHEMA_VERSION` in one transaction (a new file gets the
    whole schema); a store newer than this release is refused (exit 4)."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise InputError(
            f"{path} has store schema version {version}, newer than this tracegrade "
            f"reads ({SCHEMA_VERSION})",
            file=str(path),
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
        columns = {r[1] for r in db.execute("PRAGMA table_info(scores)")}
        if "judge_usage" not in columns:  # 3 -> 4: the judges' calls per grading
            for statement in _statements(_MIGRATE_3_TO_4):
                db.execute(statement)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        rollback(db)
        raise


def named_rows(db: sqlite3.Connection, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
    """The rows of a query, each read by column name (never by position: a column added by a
    migration, or a reordered SELECT, cannot shift a value into another field)."""
    cursor = db.execute(sql, args)
    cursor.row_factory = sqlite3.Row
    return cursor.fetchall()
