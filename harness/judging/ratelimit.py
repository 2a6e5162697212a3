"""Per-provider rate limiting: requests per minute (sliding window) and concurrent requests.

One limiter per provider instance. It works across event loops (the sync `Grader.grade` runs
its own loop per call) by keeping one semaphore per running loop and the request-time window
under a thread lock.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

__all__ = ["RateLimiter"]


class RateLimiter:
    """At most `requests_per_minute` request starts in any `window_s` window, and at most
    `max_concurrency` requests in flight. None disables either bound."""

    def __init__(
        self,
        *,
        requests_per_minute: int | None = None,
        max_concurrency: int | None = None,
        window_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if requests_per_minute is not None and requests_per_minute < 1:
            raise ValueError("requests_per_minute must be at least 1")
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.requests_per_minute = requests_per_minute
        self.max_concurrency = max_concurrency
        self.window_s = window_s
        self._clock = clock
        self._starts: deque[float] = deque()
        self._lock = threading.Lock()
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._semaphores = weakref.WeakKeyDictionary()
        self.in_flight = 0
        """Requests currently inside `slot()` (for tests and diagnostics)."""
        self.peak_in_flight = 0
        """The most requests ever inside `slot()` at once."""

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one request slot: waits for the concurrency bound, then for the rate window."""
        semaphore = self._semaphore()
        if semaphore is not None:
            await semaphore.acquire()
        try:
            await self._await_rate()
            with self._lock:
                self.in_flight += 1
                self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            try:
                yield
            finally:
                with self._lock:
                    self.in_flight -= 1
        finally:
            if semaphore is not None:
                semaphore.release()

    def _semaphore(self) -> asyncio.Semaphore | None:
        if self.max_concurrency is None:
            return None
        loop = asyncio.get_running_loop()
        with self._lock:
            semaphore = self._semaphores.get(loop)
            if semaphore is None:
                semaphore = asyncio.Semaphore(self.max_concurrency)
                self._semaphores[loop] = semaphore
            return semaphore

    async def _await_rate(self) -> None:
        if self.requests_per_minute is None:
            return
        while True:
            with self._lock:
                now = self._clock()
                while self._starts and now - self._starts[0] >= self.window_s:
                    self._starts.popleft()
                if len(self._starts) < self.requests_per_minute:
                    self._starts.append(now)
                    return
                wait = self.window_s - (now - self._starts[0])
            await asyncio.sleep(max(wait, 0.001))
