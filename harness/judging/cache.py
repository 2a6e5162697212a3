"""A content-addressed judge cache in SQLite, so re-grading a stored run makes no calls.

The key is the sha256 of everything that decides an answer: provider kind, base URL, model,
pinned knobs (the provider's identity), the full messages, the response schema, the logprob
settings, `max_tokens` and the sample index. The sample index keeps repeated samples meant to be
independent from being served one answer. Only replies a caller accepts are stored, so an
unusable answer is asked for again next time rather than replayed forever.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..canonical import content_hash
from .provider import JudgeProvider, JudgeReply, JudgeRequest, TokenLogprob

__all__ = ["DEFAULT_CACHE_FILENAME", "JudgeCache", "cache_key", "complete_cached"]

DEFAULT_CACHE_FILENAME = "judge-cache.sqlite3"


def cache_key(provider_identity: dict[str, Any], request: JudgeRequest) -> str:
    """sha256 hex of the canonical JSON of the provider identity and the whole request."""
    material = {
        "provider": provider_identity,
        "messages": [dict(m) for m in request.messages],
        "response_schema": request.response_schema,
        "logprobs": request.logprobs,
        "top_logprobs": request.top_logprobs,
        "max_tokens": request.max_tokens,
        "sample_index": request.sample_index,
    }
    return content_hash(material)


class JudgeCache:
    """SQLite-backed store of judge replies by content key. Safe across threads and tasks."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        with self._lock:
            if str(path) != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA busy_timeout=5000")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS judge_replies ("
                " key TEXT PRIMARY KEY, reply TEXT NOT NULL, created_at REAL NOT NULL)"
            )
        self.hits = 0
        """Lookups served from the cache by this instance."""
        self.misses = 0
        """Lookups that found nothing."""

    @staticmethod
    def default_path(runs_dir: str | Path) -> Path:
        """Where a run keeps its cache: beside the runs, shared by every run and re-grade."""
        return Path(runs_dir) / DEFAULT_CACHE_FILENAME

    def get(self, key: str) -> JudgeReply | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT reply FROM judge_replies WHERE key = ?", (key,)
            ).fetchone()
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
        return _decode(row[0])

    def put(self, key: str, reply: JudgeReply) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO judge_replies (key, reply, created_at) VALUES (?, ?, ?)",
                (key, _encode(reply), time.time()),
            )

    # Local SQLite answers in microseconds: the async twins call straight through.
    async def aget(self, key: str) -> JudgeReply | None:
        return self.get(key)

    async def aput(self, key: str, reply: JudgeReply) -> None:
        self.put(key, reply)

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM judge_replies").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> JudgeCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def complete_cached(
    provider: JudgeProvider,
    request: JudgeRequest,
    *,
    cache: JudgeCache | None,
    use_cache: bool = True,
    accept: Callable[[JudgeReply], bool] | None = None,
) -> JudgeReply:
    """One judge call through the cache: a hit makes no provider call (`reply.cached` is True);
    a miss calls the provider and stores the reply when `accept(reply)` (default: always)."""
    if cache is None or not use_cache:
        return await provider.acomplete(request)
    key = cache_key(provider.identity(), request)
    hit = await cache.aget(key)
    if hit is not None:
        return hit
    reply = await provider.acomplete(request)
    if accept is None or accept(reply):
        await cache.aput(key, reply)
    return reply


def _encode(reply: JudgeReply) -> str:
    logprobs = (
        None
        if reply.logprobs is None
        else [[t.token, t.logprob, [list(pair) for pair in t.top]] for t in reply.logprobs]
    )
    return json.dumps(
        {
            "text": reply.text,
            "logprobs": logprobs,
            "model": reply.model,
            "raw": reply.raw,
            "structured": reply.structured,
        },
        default=str,
    )


def _decode(payload: str) -> JudgeReply:
    data = json.loads(payload)
    logprobs = data.get("logprobs")
    return JudgeReply(
        text=data["text"],
        logprobs=None
        if logprobs is None
        else tuple(
            TokenLogprob(token=t, logprob=lp, top=tuple((a, b) for a, b in top))
            for t, lp, top in logprobs
        ),
        model=data.get("model", ""),
        raw=data.get("raw") or {},
        cached=True,
        structured=bool(data.get("structured", False)),
    )
