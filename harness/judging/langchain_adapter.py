"""A judge provider wrapping any LangChain chat model (for example from `init_chat_model`).

It advertises the sampling knobs the model can bind (the model's own fields), pins temperature 0
and top_p 1 among them, and reads logprobs from `response_metadata["logprobs"]` when the model
returns them (ChatOpenAI does with `logprobs=True`). Rate limiting, retries and the per-call
timeout are the same as the HTTP provider's; any exception from the model is an attempt failure.
"""

from __future__ import annotations

from typing import Any

from harness.judging.breaker import DEFAULT_BREAKER_FAILURES, CircuitBreaker
from harness.judging.openai_compat import PINNED_VALUES, logprobs_from_openai
from harness.judging.provider import JudgeReply, JudgeRequest
from harness.judging.ratelimit import RateLimiter
from harness.judging.retry import RetryPolicy, TransientFailure, with_retries

__all__ = ["LangChainProvider"]


class LangChainProvider:
    """Judge calls through a LangChain `BaseChatModel`."""

    name = "langchain"

    def __init__(
        self,
        *,
        chat_model: Any,
        knobs: tuple[str, ...] | list[str] | None = None,
        timeout_s: float = 30.0,
        max_attempts: int = 4,
        backoff_base_s: float = 0.5,
        requests_per_minute: int | None = None,
        max_concurrency: int | None = 4,
        circuit_breaker_failures: int | None = DEFAULT_BREAKER_FAILURES,
    ) -> None:
        self.chat_model = chat_model
        self.model = _model_name(chat_model)
        fields = _fields_of(chat_model)
        bindable = frozenset(k for k in PINNED_VALUES if k in fields)
        # Configured knobs narrow what is advertised; they never add a knob the model lacks.
        self.advertised_knobs = bindable if knobs is None else bindable & frozenset(knobs)
        self.supports_logprobs = "logprobs" in fields
        self.supports_structured_output = False
        self.policy = RetryPolicy(
            max_attempts=max_attempts, timeout_s=timeout_s, base_delay_s=backoff_base_s
        )
        self.limiter = RateLimiter(
            requests_per_minute=requests_per_minute, max_concurrency=max_concurrency
        )
        self.breaker = CircuitBreaker(circuit_breaker_failures)
        """Opens after that many consecutive failed attempts: the provider is down for the run."""
        self.calls = 0
        """Model invocations made (every attempt counts)."""

    def pinned_knobs(self) -> dict[str, Any]:
        return {k: v for k, v in PINNED_VALUES.items() if k in self.advertised_knobs}

    def identity(self) -> dict[str, Any]:
        return {
            "kind": self.name,
            "base_url": _base_url(self.chat_model),
            "model": self.model,
            "class": f"{type(self.chat_model).__module__}.{type(self.chat_model).__qualname__}",
            "pinned_knobs": self.pinned_knobs(),
        }

    async def acomplete(self, request: JudgeRequest) -> JudgeReply:
        kwargs: dict[str, Any] = dict(self.pinned_knobs())
        if request.max_tokens is not None and "max_tokens" in _fields_of(self.chat_model):
            kwargs["max_tokens"] = request.max_tokens
        if request.logprobs and self.supports_logprobs:
            kwargs["logprobs"] = True
            if request.top_logprobs:
                kwargs["top_logprobs"] = request.top_logprobs
        runnable = self.chat_model.bind(**kwargs) if kwargs else self.chat_model
        messages = [dict(m) for m in request.messages]

        async def attempt() -> Any:
            self.calls += 1
            try:
                return await runnable.ainvoke(messages)
            except Exception as exc:  # the isolation point: any model failure is an attempt failure
                raise TransientFailure(f"{type(exc).__name__}: {exc}") from exc

        message = await with_retries(
            attempt,
            policy=self.policy,
            provider=self.name,
            url=_base_url(self.chat_model) or self.model,
            slot=self.limiter.slot,
            breaker=self.breaker,
        )
        metadata = getattr(message, "response_metadata", None) or {}
        logprobs = logprobs_from_openai(metadata.get("logprobs")) if request.logprobs else None
        return JudgeReply(
            text=_text_of(message),
            logprobs=logprobs,
            model=str(metadata.get("model_name") or metadata.get("model") or self.model),
            raw={"response_metadata": _jsonable(metadata)},
        )


def _fields_of(model: Any) -> set[str]:
    fields = getattr(type(model), "model_fields", None) or {}
    names = set(fields)
    for info in fields.values():
        alias = getattr(info, "alias", None)
        if alias:
            names.add(alias)
    return names


def _model_name(model: Any) -> str:
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def _base_url(model: Any) -> str:
    for attr in ("openai_api_base", "base_url", "api_base"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return ""


def _text_of(message: Any) -> str:
    text = getattr(message, "text", None)
    if isinstance(text, str):  # a str subclass in langchain-core 1.x, a method in older ones
        return str(text)
    if callable(text):
        text = text()
        if isinstance(text, str):
            return text
    content = getattr(message, "content", "")
    return content if isinstance(content, str) else ""


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)
