"""The one wrapper around every judge provider backend.

A backend (OpenAI-compatible HTTP, LangChain, or a plugin registered in the
`tracegrade.providers` entry-point group) only sends one request and classifies a failure
(retryable or not, Retry-After). Everything else lives here, once: rate limiting, retries with
backoff and Retry-After, the timeout over each whole attempt, the run's circuit breaker and its
bound on the total time spent waiting between attempts, the
pinned sampling knobs, the identity recorded in the run snapshot, structured output with its
text fallback, and the backend's client lifecycle (opened for the running event loop before the
first timed attempt, so building a client never eats an attempt's timeout).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import ProviderError
from .breaker import DEFAULT_BREAKER_FAILURES, DEFAULT_MAX_TOTAL_WAIT_S, CircuitBreaker, WaitBudget
from .provider import JudgeReply, JudgeRequest, ProviderBackend
from .ratelimit import RateLimiter
from .retry import PermanentFailure, RetryPolicy, TransientFailure, with_retries

__all__ = ["PINNED_VALUES", "REFUSAL_STATUSES", "ManagedProvider"]

PINNED_VALUES: dict[str, Any] = {"temperature": 0.0, "top_p": 1.0, "seed": 0}
"""What each knob is pinned to on every scoring call, when the backend advertises it."""
REFUSAL_STATUSES = frozenset({400, 404, 422, 501})
"""Statuses with which a server refuses a request it cannot serve as asked (json_schema)."""


class ManagedProvider:
    """A `JudgeProvider` made of a backend and the policies every backend shares."""

    def __init__(
        self,
        backend: ProviderBackend,
        *,
        timeout_s: float = 30.0,
        max_attempts: int = 4,
        backoff_base_s: float = 0.5,
        requests_per_minute: int | None = None,
        max_concurrency: int | None = 4,
        circuit_breaker_failures: int | None = DEFAULT_BREAKER_FAILURES,
        max_total_wait_s: float | None = DEFAULT_MAX_TOTAL_WAIT_S,
    ) -> None:
        self.backend = backend
        self.name = backend.name
        self.model = backend.model
        self.policy = RetryPolicy(
            max_attempts=max_attempts, timeout_s=timeout_s, base_delay_s=backoff_base_s
        )
        self.limiter = RateLimiter(
            requests_per_minute=requests_per_minute, max_concurrency=max_concurrency
        )
        self.breaker = CircuitBreaker(circuit_breaker_failures)
        """Opens after that many consecutive failed attempts: the provider is down for the run."""
        self.wait_budget = WaitBudget(max_total_wait_s)
        """The run's total waiting between attempts, all calls together."""
        self.structured_output_refused: str | None = None
        """Why the backend refused structured output, once it has: later calls ask for text."""
        self.calls = 0
        """Attempts sent to the backend (every retry counts)."""

    # -- what the run records ----------------------------------------------------------------
    @property
    def advertised_knobs(self) -> frozenset[str]:
        return self.backend.advertised_knobs

    @property
    def supports_structured_output(self) -> bool:
        return self.backend.supports_structured_output

    @property
    def structured_output_active(self) -> bool:
        """Structured output is supported and has not been refused."""
        return self.supports_structured_output and self.structured_output_refused is None

    def pinned_knobs(self) -> dict[str, Any]:
        return {k: v for k, v in PINNED_VALUES.items() if k in self.advertised_knobs}

    def identity(self) -> dict[str, Any]:
        """Backend kind and location (never a key), model, pinned knobs: the cache key's
        provider part, so it holds no state that changes during a run."""
        return {
            "kind": self.name,
            **self.backend.describe(),
            "model": self.model,
            "pinned_knobs": self.pinned_knobs(),
        }

    # -- calls ---------------------------------------------------------------------------
    async def acomplete(self, request: JudgeRequest) -> JudgeReply:
        """One call with every policy applied; `ProviderError` when no answer can be had."""
        # Opened (for this event loop) outside any attempt's timeout; idempotent.
        await self.backend.open()
        structured = request.response_schema is not None and self.structured_output_active
        try:
            reply = await self._send(request, structured)
        except ProviderError as exc:
            # A server without json_schema support refuses the request outright: ask again as
            # text, and from now on only as text.
            if not structured or exc.context.get("status") not in REFUSAL_STATUSES:
                raise
            self.structured_output_refused = str(exc)
            structured = False
            reply = await self._send(request, structured)
        return dataclasses.replace(reply, structured=structured)

    async def aclose(self) -> None:
        await self.backend.aclose()

    async def _send(self, request: JudgeRequest, structured: bool) -> JudgeReply:
        knobs = self.pinned_knobs()

        async def attempt() -> JudgeReply:
            self.calls += 1
            try:
                return await self.backend.send(request, knobs=knobs, structured=structured)
            except Exception as exc:  # the backend says what kind of failure it was
                failure = self.backend.classify(exc)
                if failure is None:  # not a provider failure: a bug, surfaced as one
                    raise
                cls = TransientFailure if failure.retryable else PermanentFailure
                kwargs = {"retry_after": failure.retry_after} if failure.retryable else {}
                raise cls(failure.detail, status=failure.status, **kwargs) from exc

        return await with_retries(
            attempt,
            policy=self.policy,
            provider=self.name,
            url=self.backend.location(),
            slot=self.limiter.slot,
            breaker=self.breaker,
            budget=self.wait_budget,
        )
