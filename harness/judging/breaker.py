"""The judge provider's circuit breaker: after N consecutive failed attempts the provider is
treated as down for the rest of the run, and every judge call still to come errors at once with
the cause instead of waiting out its own timeouts and retries.

A hanging judge server otherwise costs every remaining call `timeout_s x max_attempts`: hours on
a large dataset, all to reach the same exit 3. Rate limiting (429) is not an outage and never
counts; any answer from the server closes the count again.
"""

from __future__ import annotations

import threading

from ..errors import ProviderError

__all__ = ["DEFAULT_BREAKER_FAILURES", "CircuitBreaker"]

DEFAULT_BREAKER_FAILURES = 5
"""Consecutive failed attempts (timeouts, connection errors, 5xx, refusals) that open it."""


class CircuitBreaker:
    """Counts consecutive failed provider attempts; opens for good at `threshold`.

    Thread-safe: the sync grading path runs a loop per call and several loops may share one
    provider. `threshold=None` disables it (never opens)."""

    def __init__(self, threshold: int | None = DEFAULT_BREAKER_FAILURES) -> None:
        if threshold is not None and threshold < 1:
            raise ValueError("the circuit breaker threshold must be at least 1")
        self.threshold = threshold
        self._lock = threading.Lock()
        self._consecutive = 0
        self._cause: str | None = None
        self.opened_after: int | None = None
        """How many consecutive failures opened it (None while closed)."""

    @property
    def is_open(self) -> bool:
        return self.opened_after is not None

    @property
    def cause(self) -> str | None:
        """The last failure before it opened."""
        return self._cause

    def success(self) -> None:
        with self._lock:
            if self.opened_after is None:
                self._consecutive = 0

    def failure(self, cause: str) -> None:
        with self._lock:
            self._consecutive += 1
            if self.opened_after is None:
                self._cause = cause
                if self.threshold is not None and self._consecutive >= self.threshold:
                    self.opened_after = self._consecutive

    def check(self, *, provider: str, url: str) -> None:
        """Raise the open circuit's `ProviderError`, naming the cause; nothing while closed."""
        if self.opened_after is None:
            return
        raise ProviderError(
            f"judge provider {provider} at {url} is down: {self.opened_after} consecutive "
            f"failures opened the circuit breaker, so this call was not attempted; "
            f"last failure: {self._cause}",
            provider=provider,
            url=url,
            circuit_open=True,
        )
