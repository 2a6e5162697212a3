"""The real state an agent's tools act on, one per question (DESIGN.md, `state_grader`).

A target may declare an environment factory; the runner makes a fresh environment per question
(so concurrent questions never share state), hands it to the agent factory so the tools act on
it, and puts it in the grader context under `environment` so `state_grader` reads what the tools
left. Floor 2: imports nothing from tracegrade.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["Environment", "SQLiteEnvironment"]


@runtime_checkable
class Environment(Protocol):
    """The read interface graders use. Writes are the tools' business, not the grader's."""

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """Run one SQL statement and return all rows as tuples."""
        ...

    def read(self, key: str) -> Any:
        """The value stored under `key`; raises `KeyError` when the key is absent."""
        ...

    def close(self) -> None:
        """Release the environment. Idempotent."""
        ...


_KV_DDL = "CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL)"


class SQLiteEnvironment:
    """An `Environment` over a real SQLite database (in memory by default).

    Key/value state lives in a `kv` table (values stored as JSON text, so `read` gives back
    what `write` was given for JSON-representable values). `schema_sql` runs once at creation
    (`executescript`), e.g. to create and seed the tables the agent's tools work on.
    The connection is shared across threads behind a lock, because LangGraph may run tool
    calls on worker threads.
    """

    def __init__(self, path: str = ":memory:", *, schema_sql: str = "") -> None:
        self.path = path
        self._lock = threading.RLock()
        self._closed = False
        self.connection = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        """The live connection, for tools that need more than `query`/`write`."""
        with self._lock:
            self.connection.execute(_KV_DDL)
            if schema_sql:
                self.connection.executescript(schema_sql)

    # -- read interface ------------------------------------------------------------------
    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock:
            cursor = self.connection.execute(sql, tuple(params))
            return [tuple(row) for row in cursor.fetchall()]

    def read(self, key: str) -> Any:
        with self._lock:
            row = self.connection.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
        if row is None:
            raise KeyError(key)
        return json.loads(row[0])

    # -- write side, for tools -----------------------------------------------------------
    def write(self, key: str, value: Any) -> None:
        """Store `value` (JSON-serialisable) under `key`, replacing any earlier value."""
        text = json.dumps(value)
        with self._lock:
            self.connection.execute(
                "INSERT INTO kv (key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, text),
            )

    def delete(self, key: str) -> None:
        """Remove `key` if present."""
        with self._lock:
            self.connection.execute("DELETE FROM kv WHERE key = ?", (key,))

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one writing statement; returns the number of rows changed."""
        with self._lock:
            return self.connection.execute(sql, tuple(params)).rowcount

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self.connection.close()

    def __enter__(self) -> SQLiteEnvironment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteEnvironment({self.path!r})"
