"""Agent traces of an archive of any size, in bounded memory: spans spilled to a temporary
SQLite file keyed by trace id as they are read, then each trace read back whole, one at a time.

A collector archive holds the spans of many traces interleaved (each batch the exporter sent
is one line), so a trace is whole only once the whole archive was read. Holding every span
until then makes memory grow with the archive; here the spans wait on disk instead, and what
stays in memory is one trace and SQLite's bounded page cache.

`TraceSpill.traces()` yields each agent trace in start order; `pair_spilled` pairs them with
the questions and keeps the pairs on disk too, so grading walks them in (start, trace id) order
without holding them.
"""

from __future__ import annotations

import contextlib
import marshal
import pickle
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import EvaluationError
from . import archive
from .archive import Pair, Pairer, TraceSet
from .dialects import AgentTrace, agent_trace, dialect_of
from .policy import TracePolicy
from .spans import Span, files_under, read_spans

__all__ = ["SpilledPairs", "TraceSpill", "spill_trace_files"]

_CACHE_KB = 4 * 1024
"""SQLite's page cache per connection (KiB): the memory the spill may use, whatever its size.
SQLite's sorter (the trace index, the order of the traces and pairs) takes as much again, so
this bounds it too: at 16 MB a 1 GB archive peaked 13 MB above a 100 MB one."""
_BATCH = 2_000
_READ_BATCH = 200
_LISTED = 10
POLICY = "trace policy"
"""How a trace the trace policy grades is paired (with a question of its own)."""


def _dump_span(span: Span) -> bytes:
    """A span as spilled: its fields as a marshalled tuple (a third of pickling the dataclass,
    whose slots pickle field by field), or pickled when a value is not a plain JSON-like one (a
    trace source plugin's own types); the first byte says which."""
    row: Any = (
        span.trace_id,
        span.span_id,
        span.parent_id,
        span.name,
        span.start_ns,
        span.end_ns,
        span.attributes,
        span.status_code,
        span.status_message,
        span.resource,
        span.kind,
    )
    try:
        return b"m" + marshal.dumps(row)
    except ValueError:  # unmarshallable: a subclass, an object
        return b"p" + pickle.dumps(row, protocol=5)


def _load_span(data: bytes) -> Span:
    body = memoryview(data)[1:]
    return Span(*(marshal.loads(body) if data[:1] == b"m" else pickle.loads(body)))


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    db.execute(f"PRAGMA cache_size=-{_CACHE_KB}")
    db.execute("PRAGMA temp_store=FILE")
    return db


class TraceSpill:
    """Spans on disk by trace id, and what was read (`summary`: a `TraceSet` whose `traces`
    stays empty; its counts and notes are the archive's)."""

    def __init__(self, directory: Path | str | None = None) -> None:
        self.where = Path(directory if directory is not None else tempfile.gettempdir())
        with self.writing(OSError):
            self._dir = tempfile.TemporaryDirectory(prefix="tracegrade-spill-", dir=directory)
        self.path = Path(self._dir.name) / "spans.sqlite"
        with self.writing():
            self.db = _connect(self.path)
            self.db.execute(
                "CREATE TABLE spans (trace_id TEXT NOT NULL, start_ns INTEGER, data BLOB)"
            )
        self.summary = TraceSet()
        self.agent_traces = 0
        self.dropped_agent_spans = 0
        """Spans of the agent traces dropped for their size: what the run could not grade, so
        it is incomplete (a lost trace is never a pass)."""
        self._indexed = False

    @contextlib.contextmanager
    def writing(self, *also: type[Exception]) -> Iterator[None]:
        """A write to the spill: a full temporary directory (or a file size limit, an I/O
        error) is an incomplete evaluation (exit 3) naming the directory, never a traceback.
        Only SQLite's errors unless `also` names more (reading the archive raises its own)."""
        caught: tuple[type[Exception], ...] = (sqlite3.OperationalError, *also)
        try:
            yield
        except caught as exc:
            raise EvaluationError(
                f"could not spill the traces to the temporary directory {self.where}: {exc}",
                file=str(self.where),
                hint="the archive's spans need about its size there: free space, or point "
                "TMPDIR at a directory with room",
            ) from exc

    def close(self) -> None:
        if hasattr(self, "db"):
            self.db.close()
        self._dir.cleanup()

    def __enter__(self) -> TraceSpill:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, spans: Iterable[Span]) -> None:
        """Spill spans (any order, any number of traces)."""
        batch: list[tuple[str, int, bytes]] = []
        insert = "INSERT INTO spans VALUES (?, ?, ?)"
        with self.writing():
            self.db.execute("BEGIN")
            for span in spans:
                self.summary.spans += 1
                batch.append((span.trace_id, span.start_ns, _dump_span(span)))
                if len(batch) >= _BATCH:
                    self.db.executemany(insert, batch)
                    batch.clear()
            self.db.executemany(insert, batch)
            self.db.execute("COMMIT")

    def traces(self) -> Iterator[AgentTrace]:
        """Every agent trace, whole, in (start, trace id) order; traces with no agent spans are
        counted (`summary.not_agent`), traces past the span cap dropped and listed."""
        with self.writing():  # the index and the sort write to the temporary directory
            if not self._indexed:
                self.db.execute("CREATE INDEX spans_by_trace ON spans (trace_id)")
                self._indexed = True
            order = self.db.execute(
                "SELECT trace_id, COUNT(*) FROM spans GROUP BY trace_id "
                "ORDER BY MIN(start_ns), trace_id"
            )
        reader = sqlite3.connect(self.path)  # a second cursor while the first walks the groups
        try:
            for trace_id, count in order:
                if count > archive.MAX_SPANS_PER_TRACE:
                    self.summary.too_large.append(trace_id)
                    if self._holds_agent_spans(reader, trace_id):
                        self.dropped_agent_spans += count
                    continue
                rows = reader.execute("SELECT data FROM spans WHERE trace_id = ?", (trace_id,))
                spans = [_load_span(row[0]) for row in rows]
                trace = agent_trace(spans)
                if trace is None:
                    self.summary.not_agent += 1
                    continue
                self.agent_traces += 1
                yield trace
        finally:
            reader.close()

    @staticmethod
    def _holds_agent_spans(reader: sqlite3.Connection, trace_id: str) -> bool:
        """Whether a trace too large to hold has agent spans: read a batch at a time."""
        rows = reader.execute("SELECT data FROM spans WHERE trace_id = ?", (trace_id,))
        while batch := rows.fetchmany(_BATCH):
            if dialect_of([_load_span(row[0]) for row in batch]) is not None:
                return True
        return False

    def notes(self) -> list[str]:
        notes = self.summary.notes()
        notes[0] = (
            f"read {self.summary.spans} span(s) in {self.agent_traces + self.summary.not_agent} "
            "trace(s)"
        )
        return notes


def spill_trace_files(
    paths: Sequence[Path | str], directory: Path | str | None = None
) -> TraceSpill:
    """Every span of the trace files (directories: the trace files under them), spilled."""
    files = files_under(paths)
    spill = TraceSpill(directory)
    try:
        for path in files:
            spill.add(read_spans(path, spill.summary.problems))
    except BaseException:
        spill.close()
        raise
    return spill


class SpilledPairs:
    """Traces paired with questions, kept on disk in (start, trace id) order; what matched
    nothing is counted, the first few listed."""

    def __init__(self, spill: TraceSpill) -> None:
        self.db = spill.db
        self.writing = spill.writing
        with self.writing():
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS pairs (start_ns INTEGER, trace_id TEXT, "
                "question_id TEXT, how TEXT, spans INTEGER, data BLOB)"
            )
            self.db.execute("DELETE FROM pairs")
        self.counts: dict[str, int] = {}
        self.questions: set[str] = set()
        """The dataset questions paired."""
        self.by_policy: set[str] = set()
        """The questions of the traces the trace policy grades (one per trace)."""
        self.unmatched = 0
        self.unmatched_ids: list[str] = []
        self.ambiguous: list[tuple[str, list[str]]] = []
        self.ambiguous_count = 0
        self.outside_window = 0

    def pair(
        self,
        traces: Iterable[AgentTrace],
        pairer: Pairer,
        *,
        since_ns: int | None = None,
        until_ns: int | None = None,
        policy: TracePolicy | None = None,
    ) -> None:
        """Pair each trace in the window; with a `policy`, a trace that matches no question
        is paired with its own (`policy.question`), graded by the policy."""
        batch: list[tuple[int, str, str, str, int, bytes]] = []
        insert = "INSERT INTO pairs VALUES (?, ?, ?, ?, ?, ?)"
        for trace in traces:
            if (since_ns is not None and trace.start_ns < since_ns) or (
                until_ns is not None and trace.start_ns >= until_ns
            ):
                self.outside_window += 1
                continue
            found = pairer.pair(trace)
            if found is None and policy:
                found = Pair(policy.question(trace), trace, POLICY)
            if isinstance(found, Pair):
                qid = str(found.question.id)
                self.counts[found.how] = self.counts.get(found.how, 0) + 1
                (self.by_policy if found.how == POLICY else self.questions).add(qid)
                data = pickle.dumps(trace, protocol=5)
                row = (trace.start_ns, trace.trace_id, qid, found.how, trace.span_count, data)
                batch.append(row)
                if len(batch) >= _BATCH:
                    with self.writing():
                        self.db.executemany(insert, batch)
                    batch.clear()
            elif isinstance(found, list):
                self.ambiguous_count += 1
                if len(self.ambiguous) < _LISTED:
                    self.ambiguous.append((trace.trace_id, found))
            else:
                self.unmatched += 1
                if len(self.unmatched_ids) < _LISTED:
                    self.unmatched_ids.append(trace.trace_id)
        with self.writing():
            self.db.executemany(insert, batch)

    def __len__(self) -> int:
        return sum(self.counts.values())

    def trials(
        self, question_of: Callable[[str, AgentTrace], Any]
    ) -> Iterator[tuple[Any, AgentTrace, str, int]]:
        """(question, trace, how, trial): a question's traces in start order are its trials
        (`question_of(question id, trace)` finds the question)."""
        for qid, how, trial, _trace_id, _spans, data in self.numbered():
            trace = pickle.loads(data)
            yield question_of(qid, trace), trace, how, trial

    def numbered(self) -> Iterator[tuple[str, str, int, str, int, bytes]]:
        """(question id, how, trial, trace id, spans, the pickled trace) in start order: what
        `trials` yields, the trace left pickled (`grade-traces --workers` sends it as is)."""
        seen: dict[str, int] = {}
        # sorted without the traces (the sorter held them all), read back a batch at a time
        order = self.db.execute(
            "SELECT rowid, question_id, how, trace_id, spans FROM pairs ORDER BY start_ns, trace_id"
        )
        while batch := order.fetchmany(_READ_BATCH):
            marks = ", ".join("?" * len(batch))
            data = dict(
                self.db.execute(
                    f"SELECT rowid, data FROM pairs WHERE rowid IN ({marks})", [b[0] for b in batch]
                )
            )
            for rowid, qid, how, trace_id, spans in batch:
                trial = seen[qid] = seen.get(qid, -1) + 1
                yield qid, how, trial, trace_id, spans, data.pop(rowid)

    def repeats(self) -> int:
        (most,) = self.db.execute(
            "SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) AS n FROM pairs GROUP BY question_id)"
        ).fetchone()
        return max(1, int(most))

    def notes(self, questions: int) -> list[str]:
        paired = {k: n for k, n in self.counts.items() if k != POLICY}
        how = ", ".join(f"{n} by {k}" for k, n in sorted(paired.items())) or "none"
        notes = [
            f"paired {sum(paired.values())} trace(s) with {len(self.questions)} of {questions} "
            f"question(s): {how}"
        ]
        if self.by_policy:
            notes.append(
                f"{len(self.by_policy)} trace(s) graded by the trace policy (they match no "
                "question)"
            )
        if self.outside_window:
            notes.append(f"{self.outside_window} trace(s) outside --since/--until; not graded")
        if self.unmatched:
            listed = ", ".join(self.unmatched_ids)
            more = self.unmatched - len(self.unmatched_ids)
            notes.append(
                f"{self.unmatched} trace(s) matched no question: {listed}"
                + (f" and {more} more" if more else "")
            )
        for trace_id, ids in self.ambiguous:
            notes.append(
                f"trace {trace_id} matches {len(ids)} questions by its input "
                f"({', '.join(ids)}); not graded"
            )
        return notes
