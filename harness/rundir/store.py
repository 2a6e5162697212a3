"""The results store of a run: one SQLite file (WAL) in the run directory.

Append-only: each finished question (its run row, its grade rows, its score row) is committed in
one transaction, alone or with others finished beside it (`commit_questions`), so an interrupted
run loses at most the questions in flight and a run never rewrites what it already wrote.
Re-grading adds rows under a new grading id.

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
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from ..canonical import json_loads
from ..cost.usage import stored_usage
from ..errors import EvaluationError, InputError
from ..redaction import DEFAULT_POLICY, RedactionPolicy
from ..verdicts.result import QuestionAnswer, QuestionResult, question_fingerprint
from ..verdicts.scoring import GraderVerdict, score_question
from .annotations import Annotation, apply_annotations, insert_annotation, read_annotations
from .schema import (
    GRADE_COLUMNS,
    QUESTION_COLUMNS,
    SCHEMA_VERSION,
    migrate,
    named_rows,
    rollback,
)

__all__ = ["SCHEMA_VERSION", "STORE_FILE", "ResultStore"]

STORE_FILE = "results.sqlite"
SCORE_PAGE = 500
"""Question runs `iter_scores` reads at a time."""


_dumps = json.JSONEncoder(default=str).encode
"""`json.dumps(..., default=str)` without building an encoder per call (ten per question)."""


def _optional(redact: RedactionPolicy, text: str | None) -> str | None:
    return None if text is None else redact.text(text)


_JSON_COLUMNS = {
    "questions": ("tags", "row", "messages", "usage"),
    "grades": ("samples", "checks", "details"),
    "scores": ("judge_usage",),
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


def _using(keyed: str) -> str:
    return " USING (target, question_id, trial)" if keyed else ""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _question_fields(r: sqlite3.Row) -> dict[str, Any]:
    """What a question row says of its question and how its run ended, by column name (the
    result's fields of the same names)."""
    return {
        "split": r["split"],
        "bundle": r["bundle"],
        "tags": json.loads(r["tags"]),
        "trace_id": r["trace_id"],
        "content_sha256": r["content_sha256"],
        "outcome": r["outcome"],
        "outcome_reason": r["outcome_reason"],
        "outcome_expected": bool(r["outcome_expected"]),
    }


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
        migrate(self._db, self.path)

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
            rollback(db)
            raise
        return grading_id

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        return named_rows(self._db, sql, args)

    @_reads
    def gradings(self) -> list[dict[str, Any]]:
        rows = self._rows(
            "SELECT grading_id, created, mode, graders FROM gradings ORDER BY grading_id"
        )
        return [{**dict(r), "graders": json.loads(r["graders"])} for r in rows]

    @_reads
    def own_grading_id(self) -> int | None:
        """The run's own grading (its first: the one its questions were committed under);
        None before the run opened it (`RunDirectory.own_grading` opens it)."""
        row = self._db.execute("SELECT MIN(grading_id) FROM gradings").fetchone()
        return None if row is None or row[0] is None else int(row[0])

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
    def copy_grading(self, source: int, *, mode: str) -> int:
        """A new grading holding `source`'s rows, graders and scope, now the latest: a run or
        a resume that finished after a newer grading was made (a `grade` while it ran, or of
        the interrupted run) is decided on its current rows, never on that older grading."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            (graders,) = db.execute(
                "SELECT graders FROM gradings WHERE grading_id = ?", (source,)
            ).fetchone()
            cur = db.execute(
                "INSERT INTO gradings (created, mode, graders) VALUES (?, ?, ?)",
                (_now(), mode, graders),
            )
            grading_id = int(cur.lastrowid)  # type: ignore[arg-type]
            for table in ("grades", "scores"):
                columns = [
                    r[1] for r in db.execute(f"PRAGMA table_info({table})") if r[1] != "grading_id"
                ]
                names = ", ".join(columns)
                db.execute(
                    f"INSERT INTO {table} (grading_id, {names}) "
                    f"SELECT ?, {names} FROM {table} WHERE grading_id = ?",
                    (grading_id, source),
                )
            db.execute(
                "INSERT OR REPLACE INTO meta (key, value) SELECT ?, value FROM meta WHERE key = ?",
                (f"grading:{grading_id}", f"grading:{source}"),
            )
            db.execute("COMMIT")
        except BaseException:
            rollback(db)
            raise
        return grading_id

    def current_grading(self, grading_id: int, *, mode: str) -> int:
        """`grading_id` when it is the run's latest grading, else a copy of it made the latest
        (`copy_grading`): what a run or resume that just committed into it is decided on."""
        latest = self.latest_grading_id()
        if latest is None or latest == grading_id:
            return grading_id
        return self.copy_grading(grading_id, mode=mode)

    @_writes
    def end_grading(self, grading_id: int) -> None:
        self._db.execute("DELETE FROM meta WHERE key = ?", (f"unfinished_grading:{grading_id}",))

    # -- writing ---------------------------------------------------------------------------
    def commit_question(self, result: QuestionResult, *, grading_id: int) -> None:
        """Write one finished question (question row, grade rows, score row) in one
        transaction."""
        self.commit_questions([result], grading_id=grading_id)

    @_writes
    def commit_questions(
        self,
        results: Sequence[QuestionResult],
        *,
        grading_id: int,
        numbered: Callable[[], None] | None = None,
    ) -> None:
        """Write finished questions (each its question row from the result and its `answer`,
        its grade rows and score row) in one transaction: all of them or none. A caller
        grading many (a monitor run) commits them together, so a question costs its rows
        rather than a transaction of its own. Each result's `content_sha256` is set when it
        had none.

        With `numbered`, each item's trial is the next free one of its question, decided
        inside the transaction (several processes commit into one store: `receive
        --workers`), and `numbered()` runs once they are numbered, before any row is written
        (it writes their records, which hold the trial)."""
        db = self._db
        redact = self.redaction
        values: list[tuple[object, ...]] = []
        for q in results:
            answer = q.answer
            row = redact.view(answer.row)
            # From the row as stored, so a run migrated from an older store (fingerprinted
            # from its stored row) and a new run fingerprint the same question alike.
            q.content_sha256 = q.content_sha256 or question_fingerprint(row)
            values.append(
                (
                    q.target,
                    q.id,
                    q.trial,
                    answer.ordinal,
                    q.split,
                    q.bundle,
                    json.dumps(q.tags),
                    _dumps(row),
                    redact.text(answer.input),
                    _dumps(redact.view(answer.messages)),
                    redact.answer(answer.response),
                    _optional(redact, q.error),
                    q.error_type,
                    q.trace_id,
                    answer.latency_s,
                    _dumps(answer.usage),
                    int(answer.has_record),
                    answer.tool_call_count,
                    _now(),
                    q.content_sha256,
                    q.outcome,
                    _optional(redact, q.outcome_reason),
                    int(q.outcome_expected),
                )
            )
        db.execute("BEGIN IMMEDIATE")
        try:
            if numbered is not None:
                self._number(results, values)
                numbered()
            db.executemany(
                f"INSERT OR REPLACE INTO questions ({', '.join(QUESTION_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(QUESTION_COLUMNS))})",
                values,
            )
            for q in results:
                self._write_score(q.target, q, grading_id)
            db.execute("COMMIT")
        except BaseException:
            rollback(db)
            raise

    def _number(self, results: Sequence[QuestionResult], values: list[tuple[object, ...]]) -> None:
        """Each item's trial: the next after every stored trial of its question (and the
        batch's earlier items)."""
        at = QUESTION_COLUMNS.index("trial")
        following: dict[tuple[str, str], int] = {}
        for n, q in enumerate(results):
            key = (q.target, q.id)
            if key not in following:
                row = self._db.execute(
                    "SELECT MAX(trial) FROM questions WHERE target = ? AND question_id = ?", key
                ).fetchone()
                following[key] = 0 if row[0] is None else int(row[0]) + 1
            q.trial = following[key]
            following[key] += 1
            values[n] = (*values[n][:at], q.trial, *values[n][at + 1 :])

    @_writes
    def commit_score(self, target: str, score: QuestionResult, *, grading_id: int) -> None:
        """Write a re-grade of an already stored question (grade and score rows only)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._write_score(target, score, grading_id)
            self._db.execute("COMMIT")
        except BaseException:
            rollback(self._db)
            raise

    def _write_score(self, target: str, score: QuestionResult, grading_id: int) -> None:
        redact = self.redaction
        self._db.executemany(
            f"INSERT OR REPLACE INTO grades ({', '.join(GRADE_COLUMNS)}) "
            f"VALUES ({', '.join('?' * len(GRADE_COLUMNS))})",
            [
                (
                    grading_id,
                    target,
                    score.id,
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
                    _dumps(redact.view(g.checks)),
                    _dumps(redact.view(g.details)),
                )
                for position, g in enumerate(score.graders)
            ],
        )
        self._db.execute(
            "INSERT OR REPLACE INTO scores (grading_id, target, question_id, trial, composite, "
            "objective, degraded, error, error_type, judge_usage) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                grading_id,
                target,
                score.id,
                score.trial,
                score.composite,
                score.objective,
                int(score.degraded),
                _optional(redact, score.error),
                score.error_type,
                _dumps(score.usage.judges.model_dump(mode="json")) if score.usage else "{}",
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
    def load_runs(self, target: str | None = None) -> list[QuestionResult]:
        """The stored question runs (in selection order, trials in order): each result with
        its `answer` (what the agent received and answered) and no grades."""
        sql = f"SELECT {', '.join(QUESTION_COLUMNS)} FROM questions"
        args: tuple[Any, ...] = ()
        if target is not None:
            sql += " WHERE target = ?"
            args = (target,)
        out = []
        for r in self._rows(sql + " ORDER BY target, ordinal, trial", args):
            answer = QuestionAnswer(
                ordinal=r["ordinal"],
                row=json.loads(r["row"]),
                input=r["input"],
                messages=json.loads(r["messages"]),
                response=r["response"],
                latency_s=r["latency_s"],
                usage=json.loads(r["usage"]),
                has_record=bool(r["has_record"]),
                tool_call_count=r["tool_call_count"],
            )
            out.append(
                QuestionResult(
                    target=r["target"],
                    id=r["question_id"],
                    trial=r["trial"],
                    error=r["error"],
                    error_type=r["error_type"],
                    answer=answer,
                    **_question_fields(r),
                )
            )
        return out

    @_reads
    def load_answers(self, target: str) -> dict[tuple[str, int], QuestionAnswer]:
        """What the agent received and answered in each question run of `target`, by (question
        id, trial): `load_runs`'s answers without the results around them, for a page that
        shows thousands. A row of the shapes the store writes is taken as it is; any other
        is validated as `load_runs` validates it (a damaged one is invalid input)."""
        rows = self._db.execute(
            "SELECT question_id, trial, ordinal, row, input, messages, response, latency_s, "
            "usage, has_record, tool_call_count FROM questions WHERE target = ?",
            (target,),
        )
        out = {}
        for qid, trial, ordinal, row, text, messages, response, latency, usage, has, count in rows:
            fields = {
                "ordinal": ordinal,
                "row": json_loads(row),
                "input": text,
                "messages": json_loads(messages),
                "response": response,
                "latency_s": latency,
                "usage": json_loads(usage),
                "has_record": bool(has),
                "tool_call_count": count,
            }
            written = (
                type(ordinal) is int
                and type(fields["row"]) is dict
                and type(text) is str
                and type(fields["messages"]) is list
                and all(type(m) is dict for m in fields["messages"])
                and type(response) is str
                and type(latency) is float
                and type(fields["usage"]) is dict
                and (count is None or type(count) is int)
            )
            out[(qid, trial)] = (
                QuestionAnswer.model_construct(**fields) if written else QuestionAnswer(**fields)
            )
        return out

    @_reads
    def load_scores(
        self, *, grading_id: int | None = None, target: str | None = None
    ) -> list[QuestionResult]:
        """Question scores of one grading (default: the latest), rebuilt from the rows, in
        selection order. Questions never graded under that grading are left out."""
        return list(self._scores(grading_id, target, None))

    def iter_scores(
        self, *, grading_id: int | None = None, target: str | None = None
    ) -> Iterator[QuestionResult]:
        """`load_scores` a page of `SCORE_PAGE` question runs at a time: what is held is one
        page, whatever the run's size (a streamed run's verdict and reports)."""
        try:
            yield from self._scores(grading_id, target, SCORE_PAGE)
        except (sqlite3.DatabaseError, ValueError, TypeError, KeyError) as exc:
            raise self.damaged(exc) from exc

    def _scores(
        self, grading_id: int | None, target: str | None, page: int | None
    ) -> Iterator[QuestionResult]:
        if grading_id is None:
            grading_id = self.latest_grading_id()
            if grading_id is None:
                return
        # Only the columns a score needs: rows, inputs and responses stay on disk.
        sql = (
            "SELECT target, question_id, trial, split, bundle, tags, trace_id, content_sha256, "
            "outcome, outcome_reason, outcome_expected, usage FROM questions"
        )
        args: tuple[Any, ...] = ()
        if target is not None:
            sql += " WHERE target = ?"
            args = (target,)
        notes: dict[tuple[str, str, int], list[Annotation]] = {}
        for annotation in self.load_annotations(target=target):
            key = (annotation.target, annotation.question_id, annotation.trial)
            notes.setdefault(key, []).append(annotation)
        order = " ORDER BY target, ordinal, trial"
        if page is None:
            yield from self._page_scores(grading_id, self._rows(sql + order, args), "", notes)
            return
        # the order is sorted over the row ids alone: sorting whole rows held them all in
        # SQLite's sorter (25 MB for 44,000 question runs), then read back a page at a time
        ids = self._db.execute(
            "SELECT rowid FROM questions" + (" WHERE target = ?" if target else "") + order, args
        )
        self._db.execute(
            "CREATE TEMP TABLE IF NOT EXISTS page_keys (target TEXT, question_id TEXT, trial INTEGER)"
        )
        while batch := [r[0] for r in ids.fetchmany(page)]:
            marks = ", ".join("?" * len(batch))
            where = " WHERE " if target is None else " AND "
            found = {
                r["rowid"]: r
                for r in self._rows(
                    sql.replace("SELECT ", "SELECT rowid, ", 1) + f"{where}rowid IN ({marks})",
                    (*args, *batch),
                )
            }
            rows = [found[i] for i in batch if i in found]
            self._db.execute("DELETE FROM temp.page_keys")
            self._db.executemany(
                "INSERT INTO temp.page_keys VALUES (?, ?, ?)",
                [(r["target"], r["question_id"], r["trial"]) for r in rows],
            )
            # the page's keys drive the loop: each row found by the table's primary key
            yield from self._page_scores(grading_id, rows, "temp.page_keys CROSS JOIN ", notes)

    def _page_scores(
        self,
        grading_id: int,
        rows: Sequence[sqlite3.Row],
        keyed: str,
        notes: dict[tuple[str, str, int], list[Annotation]],
    ) -> Iterator[QuestionResult]:
        runs = {
            (r["target"], r["question_id"], r["trial"]): {
                **_question_fields(r),
                "usage": json.loads(r["usage"]),
            }
            for r in rows
        }
        grades: dict[tuple[str, str, int], list[GraderVerdict]] = {}
        for r in self._rows(
            "SELECT target, question_id, trial, grader_id, score, min_score, max_score, reason, "
            "error, binary, weight, must_pass, threshold, samples, checks, details FROM "
            f"{keyed}grades{_using(keyed)} WHERE grading_id = ? "
            "ORDER BY target, question_id, trial, position",
            (grading_id,),
        ):
            grades.setdefault((r["target"], r["question_id"], r["trial"]), []).append(
                GraderVerdict(
                    grader_id=r["grader_id"],
                    score=r["score"],
                    min_score=r["min_score"],
                    max_score=r["max_score"],
                    reason=r["reason"],
                    error=bool(r["error"]),
                    binary=bool(r["binary"]),
                    weight=r["weight"],
                    must_pass=bool(r["must_pass"]),
                    threshold=r["threshold"],
                    sample_scores=json.loads(r["samples"]),
                    checks=json.loads(r["checks"]),
                    details=json.loads(r["details"]),
                )
            )
        # The error is the grading's own: a re-grade can degrade a question the run scored
        # (its record missing from the trace file).
        scored = {
            (r["target"], r["question_id"], r["trial"]): r
            for r in self._rows(
                "SELECT target, question_id, trial, error, error_type, judge_usage FROM "
                f"{keyed}scores{_using(keyed)} WHERE grading_id = ?",
                (grading_id,),
            )
        }
        for key, run in runs.items():
            if key not in scored:
                continue
            score = scored[key]
            usage = stored_usage(run.pop("usage"), json.loads(score["judge_usage"]))
            question = QuestionResult(
                id=key[1],
                target=key[0],
                trial=key[2],
                graders=grades.get(key, []),
                error=score["error"],
                error_type=score["error_type"],
                usage=usage,
                **run,
            )
            # A person's Review decisions replace the judge's "review" before scoring.
            apply_annotations(question, notes.get(key, ()))
            yield score_question(question)

    # -- annotations (grading by hand): the rows, in `tracegrade.rundir.annotations` -----------
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
        return insert_annotation(
            self._db,
            self.redaction,
            target=target,
            question_id=question_id,
            trial=trial,
            label=label,
            answer=answer,
            author=author,
            note=note,
            answer_sha256=answer_sha256,
            created=created or _now(),
        )

    @_reads
    def load_annotations(self, *, target: str | None = None) -> list[Annotation]:
        """Every annotation of the run (of `target`), oldest first, each flagged stale when the
        stored answer it was about has changed since."""
        return read_annotations(self._db, target=target)
