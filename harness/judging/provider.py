"""The judge provider contract: what judges and rubric judges call, what providers implement.

Providers live beside this module (OpenAI-compatible over httpx, LangChain adapter).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["JudgeProvider", "JudgeReply", "JudgeRequest", "TokenLogprob"]


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


@runtime_checkable
class JudgeProvider(Protocol):
    name: str
    """Provider kind, e.g. "openai-compatible" or "langchain"."""
    model: str
    advertised_knobs: frozenset[str]
    """Sampling knobs the provider accepts ("temperature", "top_p", "seed"...)."""

    def pinned_knobs(self) -> dict[str, Any]:
        """The knobs actually pinned on every scoring call (temperature 0, top_p 1 where
        advertised): recorded in the run identity snapshot."""
        ...

    def identity(self) -> dict[str, Any]:
        """Provider kind, base URL (no key), model, pinned knobs."""
        ...

    async def acomplete(self, request: JudgeRequest) -> JudgeReply:
        """One call, with the provider's rate limiting, retries and timeout applied.
        Raises `harness.errors.ProviderError` when it cannot get an answer."""
        ...
