"""Finished questions committed in batches: one trace-file flush and one SQLite transaction
for the questions that finished within `BATCH_S` of each other (at most `BATCH_MAX`), rather
than one each.

Each commit flushes the trace file on the event loop first (the batch span processor encodes
and writes in the caller's thread: an export call, a write and a flush) and opens a transaction:
costs per commit, not per span or row, paid per question before. A batch keeps the order that
makes `--resume` safe (the trace file is flushed before the rows that point into it are
committed) and loses, on a kill -9, at most the questions finished in the last `BATCH_S`
besides those in flight (they run again on resume). Cancelling the run commits what finished.
A serial run (`concurrency` 1) commits each question as it finishes: nothing runs beside it to
share a commit with.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ...verdicts.result import QuestionResult

__all__ = ["BATCH_MAX", "BATCH_S", "CommitBatch"]

BATCH_S = 0.2
"""How long a finished question may wait for others to be committed with."""
BATCH_MAX = 64
"""A batch this large is committed at once."""


class CommitBatch:
    """`add(result)` each finished question; `close()` commits what is left. `commit` stores one
    result; its `many(results)`, when it has one, stores a batch in one transaction (else each
    is committed in turn). A failed commit is raised by the next `add` or `close`."""

    def __init__(
        self,
        commit: Callable[[QuestionResult], None],
        *,
        before_commit: Callable[[], None] | None = None,
        max_size: int = BATCH_MAX,
        max_wait_s: float = BATCH_S,
    ) -> None:
        self.commit = commit
        self.before_commit = before_commit
        self.max_size = max_size
        self.max_wait_s = max_wait_s
        self.committed = 0
        self._pending: list[QuestionResult] = []
        self._timer: asyncio.TimerHandle | None = None
        self._failure: BaseException | None = None

    def add(self, result: QuestionResult) -> None:
        self._raise_failure()
        self._pending.append(result)
        if len(self._pending) >= self.max_size or self.max_wait_s <= 0:
            self.flush()
        elif self._timer is None:
            # one timer per batch, not per question
            self._timer = asyncio.get_running_loop().call_later(self.max_wait_s, self._on_timer)

    def flush(self) -> None:
        """Commit every pending result now (the trace file first)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._pending = self._pending, []
        if not batch:
            return
        if self.before_commit is not None:
            self.before_commit()
        many = getattr(self.commit, "many", None)
        if many is not None and len(batch) > 1:
            many(batch)
            self.committed += len(batch)
            return
        for result in batch:
            self.commit(result)
            self.committed += 1

    def close(self) -> None:
        """Commit what is left; raise a commit that failed on the timer."""
        self._raise_failure()
        self.flush()

    def _on_timer(self) -> None:
        self._timer = None
        try:
            self.flush()
        except BaseException as exc:  # raised in the run by the next add() or close()
            self._failure = exc

    def _raise_failure(self) -> None:
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure
