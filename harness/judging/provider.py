"""The judge provider contract: what judges and rubric judges call (`JudgeProvider`) and what
a provider backend implements (`ProviderBackend`: send one request, classify a failure).

Backends live beside this module (OpenAI-compatible over httpx, LangChain adapter) or in
plugins (entry-point group `tracegrade.providers`); `tracegrade.judging.managed.ManagedProvider`
wraps every backend with the shared policies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "Failure",
    "JudgeProvider",
    "JudgeReply",
    "JudgeRequest",
    "ProviderBackend",
    "TokenLogprob",
]


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """One scoring call."""

    messages: tuple[dict[str, str], ...]
    """Chat messages (role/content) exactly as sent."""
    response_schema: dict[str, Any] | None = None
    """A JSON Schema for the answer; used as a structured-output format when advertised."""
    logprobs: bool = False
    """Ask for token logprobs (rubric judges turn them into outcome probabilities)."""
    top_logprobs: int | None = None
    max_tokens: int | None = None
    sample_index: int = 0
    """Which independent sample this is; part of the cache key so samples stay independent."""


@dataclass(frozen=True, slots=True)
class TokenLogprob:
    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()
    """(token, logprob) alternatives at this position, most likely first."""


@dataclass(frozen=True, slots=True)
class JudgeReply:
    text: str
    """The answer text (the structured-output JSON when a schema was used)."""
    logprobs: tuple[TokenLogprob, ...] | None = None
    """Per-token logprobs when asked for and given, else None."""
    model: str = ""
    """The model that answered, as the provider reported it."""
    raw: dict[str, Any] = field(default_factory=dict)
    """The provider's raw response body, for inspection."""
    cached: bool = False
    """True when served from the judge cache (no provider call made)."""
    structured: bool = False
    """True when the answer came through structured output (a JSON schema the provider
    enforced); False when it is free text the judge parses."""
    usage: dict[str, Any] | None = None
    """Token usage the provider reported (LangChain's `usage_metadata` or an OpenAI-style
    `usage`); None when it reported none (then the call's tokens are unknown)."""


@runtime_checkable
class JudgeProvider(Protocol):
    name: str
    """Provider kind, e.g. "openai-compatible" or "langchain"."""
    model: str

    @property
    def advertised_knobs(self) -> frozenset[str]:
        """Sampling knobs the provider accepts ("temperature", "top_p", "seed"...); read-only,
        so a plain attribute and a property both implement it."""

    def pinned_knobs(self) -> dict[str, Any]:
        """The knobs actually pinned on every scoring call (temperature 0, top_p 1 where
        advertised): recorded in the run identity snapshot."""
        ...

    def identity(self) -> dict[str, Any]:
        """Provider kind, base URL (no key), model, pinned knobs."""
        ...

    async def acomplete(self, request: JudgeRequest) -> JudgeReply:
        """One call, with the provider's rate limiting, retries and timeout applied.
        Raises `tracegrade.errors.ProviderError` when it cannot get an answer."""
        ...


@dataclass(frozen=True, slots=True)
class Failure:
    """A backend's classification of one failed attempt."""

    detail: str
    """What went wrong, for the error message (no secrets)."""
    retryable: bool
    """Another attempt may succeed (429, 5xx, timeout, connection); False for 401, 404, a
    malformed body..."""
    status: int | None = None
    """The HTTP status, when there was one."""
    retry_after: float | None = None
    """Seconds the server asked to wait (`Retry-After`), when it did."""


@runtime_checkable
class ProviderBackend(Protocol):
    """What a provider plugin implements. A class registered in the `tracegrade.providers`
    entry-point group also has `config_keys` (the judge-block keys it reads) and
    `from_config(config, *, base_dir) -> backend` (raising `ConfigError` naming the key)."""

    name: str
    """Provider kind, e.g. "openai-compatible"."""
    model: str
    advertised_knobs: frozenset[str]
    """Sampling knobs it accepts among temperature, top_p, seed (the wrapper pins them)."""
    supports_structured_output: bool
    """It can enforce a JSON schema on the answer (`send(..., structured=True)`)."""

    def location(self) -> str:
        """Where requests go (a URL, or the model name), for error messages."""
        ...

    def describe(self) -> dict[str, Any]:
        """Identity details beyond kind and model (base URL, class; never a key)."""
        ...

    async def open(self) -> None:
        """Make ready for the running event loop (build an HTTP client); idempotent. Called
        before the first timed attempt."""
        ...

    async def send(
        self, request: JudgeRequest, *, knobs: dict[str, Any], structured: bool
    ) -> JudgeReply:
        """One attempt: send `request` with `knobs` pinned (and the response schema enforced
        when `structured`), return the reply. Raises on any failure."""
        ...

    def classify(self, error: Exception) -> Failure | None:
        """What kind of failure `error` (raised by `send`) is; None when it is not a provider
        failure at all (a bug: it propagates unchanged)."""
        ...

    async def aclose(self) -> None:
        """Release clients."""
        ...
