"""Retries for judge calls: exponential backoff with jitter, `Retry-After` honoured on 429/5xx,
a timeout per attempt, a bounded number of attempts. Exhausting them raises `ProviderError`
naming the provider, the URL and the last status, so the outage is named where it surfaces.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import ProviderError
from .breaker import CircuitBreaker, WaitBudget

__all__ = [
    "RETRYABLE_STATUSES",
    "PermanentFailure",
    "RetryPolicy",
    "TransientFailure",
    "parse_retry_after",
    "with_retries",
]

T = TypeVar("T")

RETRYABLE_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
"""HTTP statuses worth another attempt (any other 5xx is retried too)."""


class TransientFailure(Exception):
    """An attempt failed in a way another attempt may not (429, 5xx, timeout, connection)."""

    def __init__(self, detail: str, *, status: int | None = None, retry_after: float | None = None):
        super().__init__(detail)
        self.detail = detail
        self.status = status
        self.retry_after = retry_after


class PermanentFailure(Exception):
    """An attempt failed in a way retrying cannot fix (401, 404, a malformed body)."""

    def __init__(self, detail: str, *, status: int | None = None):
        super().__init__(detail)
        self.detail = detail
        self.status = status


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard one judge call tries."""

    max_attempts: int = 4
    """Attempts in all, the first included."""
    timeout_s: float = 30.0
    """Limit on each attempt."""
    base_delay_s: float = 0.5
    """First backoff; doubles each attempt."""
    max_delay_s: float = 30.0
    """Cap on a computed backoff."""
    max_retry_after_s: float = 120.0
    """Longest `Retry-After` honoured: a server asking for more (an hour, a day) is treated as
    an outage, and the call fails at once instead of waiting."""

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        """Delay before attempt `attempt + 1` (attempt counts from 1)."""
        computed = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        # "Equal jitter": spread concurrent clients apart without ever waiting near zero.
        delay = computed / 2 + random.uniform(0, computed / 2)
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.max_retry_after_s))
        return delay


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds from a `Retry-After` header (delta seconds or an HTTP date); None if absent/bad."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


async def with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    provider: str,
    url: str,
    slot: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    breaker: CircuitBreaker | None = None,
    budget: WaitBudget | None = None,
) -> T:
    """Run `attempt` until it returns, retrying `TransientFailure` and timeouts per `policy`.

    `attempt` signals failures by raising `TransientFailure` or `PermanentFailure`; anything
    else it raises propagates unchanged (a bug, not an outage). `slot` (a rate limiter's) is
    held around each attempt and acquired outside its timeout, so queueing is never a timeout.
    `policy.timeout_s` bounds each whole attempt (connect, send, wait, read the body).
    `breaker` (the run's) is told every attempt's outcome; once open, no attempt is made.
    `budget` (the run's) bounds the waiting between attempts of all calls together.
    """
    last_status: int | None = None
    last_detail = ""
    attempts = max(1, policy.max_attempts)
    for number in range(1, attempts + 1):
        retry_after: float | None = None
        if breaker is not None:
            breaker.check(provider=provider, url=url)
        try:
            async with slot() if slot is not None else nullcontext():
                if breaker is not None:  # it may have opened while this call queued
                    breaker.check(provider=provider, url=url)
                async with asyncio.timeout(policy.timeout_s):
                    result = await attempt()
            if breaker is not None:
                breaker.success()
            return result
        except TimeoutError:
            last_status, last_detail = None, f"timed out after {policy.timeout_s:g}s"
            if breaker is not None:
                breaker.failure(last_detail)
        except TransientFailure as failure:
            last_status, last_detail = failure.status, failure.detail
            retry_after = failure.retry_after
            if breaker is not None:  # a 429 on every request is an outage too
                breaker.failure(_cause(failure.status, failure.detail))
        except PermanentFailure as failure:
            if breaker is not None:
                breaker.failure(_cause(failure.status, failure.detail))
            raise _provider_error(
                provider, url, failure.status, failure.detail, number, permanent=True
            ) from failure
        if number < attempts:
            if retry_after is not None and retry_after > policy.max_retry_after_s:
                detail = (
                    f"{last_detail} (the server asked to wait {retry_after:g}s, more than the "
                    f"{policy.max_retry_after_s:g}s tracegrade waits: treated as an outage)"
                )
                raise _provider_error(provider, url, last_status, detail, number, permanent=False)
            delay = policy.backoff(number, retry_after)
            if budget is not None and not budget.take(delay):
                detail = (
                    f"{last_detail} (the run's judge waiting, judge.max_total_wait_s = "
                    f"{budget.total_s:g}s, is spent: no more retries)"
                )
                raise _provider_error(provider, url, last_status, detail, number, permanent=False)
            await sleep(delay)
    raise _provider_error(provider, url, last_status, last_detail, attempts, permanent=False)


def _cause(status: int | None, detail: str) -> str:
    return f"HTTP {status}: {detail}" if status is not None else detail


def _provider_error(
    provider: str, url: str, status: int | None, detail: str, attempts: int, *, permanent: bool
) -> ProviderError:
    status_text = f"HTTP {status}" if status is not None else "no HTTP status"
    how = "failed" if permanent else f"failed after {attempts} attempts"
    return ProviderError(
        f"judge provider {provider} at {url} {how}; last status {status_text}: {detail}",
        provider=provider,
        url=url,
        status=status,
        attempts=attempts,
    )
