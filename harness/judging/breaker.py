"""The judge provider's circuit breaker: after N consecutive failed attempts the provider is
treated as down for the rest of the run, and every judge call still to come errors at once with
the cause instead of waiting out its own timeouts and retries.

A hanging judge server otherwise costs every remaining call `timeout_s x max_attempts`: hours on
a large dataset, all to reach the same exit 3. A 429 counts too: a server that rate-limits every
request is as down as one that never answers (any answer from the server closes the count
again, so a 429 now and then between answers never opens it).

`WaitBudget` bounds the run's total waiting between attempts (backoff and `Retry-After`, all
calls together): past it, a call that would wait fails at once instead.
"""

from __future__ import annotations

import threading

from ..errors import ProviderError

__all__ = ["DEFAULT_BREAKER_FAILURES", "DEFAULT_MAX_TOTAL_WAIT_S", "CircuitBreaker", "WaitBudget"]

DEFAULT_BREAKER_FAILURES = 5
"""Consecutive failed attempts (timeouts, connection errors, 429, 5xx, refusals) that open it."""
DEFAULT_MAX_TOTAL_WAIT_S = 600.0
"""The run's total judge wait between attempts (`judge.max_total_wait_s`), all calls summed."""


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


class WaitBudget:
    """Seconds the run's judge calls may still spend waiting between attempts, all together.
    Thread-safe; `total_s=None` means unbounded."""

    def __init__(self, total_s: float | None = DEFAULT_MAX_TOTAL_WAIT_S) -> None:
        self.total_s = total_s
        self._lock = threading.Lock()
        self.spent_s = 0.0

    def take(self, seconds: float) -> bool:
        """Reserve `seconds` of waiting; False (nothing reserved) when the budget cannot."""
        with self._lock:
            if self.total_s is not None and self.spent_s + seconds > self.total_s:
                return False
            self.spent_s += seconds
            return True
