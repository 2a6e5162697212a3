"""A judge provider backend wrapping any LangChain chat model (for example `init_chat_model`).

It advertises the sampling knobs the model can bind (the model's own fields), and reads
logprobs from `response_metadata["logprobs"]` when the model returns them (ChatOpenAI does with
`logprobs=True`). Structured output goes through the model's `with_structured_output` where it
has one. Rate limiting, retries, the per-attempt timeout and the pinned knobs come from
`ManagedProvider`, as for the HTTP backend; any exception from the model is a retryable failure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..usercode.loading import load_object
from .breaker import DEFAULT_BREAKER_FAILURES
from .managed import PINNED_VALUES, ManagedProvider
from .openai_compat import logprobs_from_openai
from .provider import Failure, JudgeReply, JudgeRequest

__all__ = ["LangChainBackend", "LangChainProvider", "load_chat_model"]


class _StructuredRefused(Exception):
    """The model cannot enforce a schema."""


class LangChainBackend:
    """Judge calls through a LangChain `BaseChatModel`."""

    name = "langchain"
    config_keys = frozenset({"chat_model", "knobs"})

    def __init__(self, *, chat_model: Any, knobs: tuple[str, ...] | list[str] | None = None):
        self.chat_model = chat_model
        self.model = _model_name(chat_model)
        fields = _fields_of(chat_model)
        bindable = frozenset(k for k in PINNED_VALUES if k in fields)
        # Configured knobs narrow what is advertised; they never add a knob the model lacks.
        self.advertised_knobs = bindable if knobs is None else bindable & frozenset(knobs)
        self.supports_logprobs = "logprobs" in fields
        self.supports_structured_output = callable(
            getattr(type(chat_model), "with_structured_output", None)
        ) and _overrides_structured_output(chat_model)

    @classmethod
    def from_config(
        cls, config: Mapping[str, Any], *, base_dir: str | Path | None = None
    ) -> LangChainBackend:
        if "chat_model" not in config:
            raise ConfigError(
                "a langchain judge provider needs chat_model (module:attr or path.py:attr)",
                key="judge.chat_model",
            )
        knobs = config.get("knobs")
        return cls(
            chat_model=load_chat_model(config["chat_model"], base_dir=base_dir),
            knobs=tuple(knobs) if knobs is not None else None,
        )

    def location(self) -> str:
        return _base_url(self.chat_model) or self.model

    def describe(self) -> dict[str, Any]:
        return {
            "base_url": _base_url(self.chat_model),
            "class": f"{type(self.chat_model).__module__}.{type(self.chat_model).__qualname__}",
        }

    async def open(self) -> None:
        return None  # the chat model owns its clients

    async def send(
        self, request: JudgeRequest, *, knobs: dict[str, Any], structured: bool
    ) -> JudgeReply:
        kwargs: dict[str, Any] = dict(knobs)
        if request.max_tokens is not None and "max_tokens" in _fields_of(self.chat_model):
            kwargs["max_tokens"] = request.max_tokens
        if request.logprobs and self.supports_logprobs:
            kwargs["logprobs"] = True
            if request.top_logprobs:
                kwargs["top_logprobs"] = request.top_logprobs
        messages = [dict(m) for m in request.messages]
        if structured and request.response_schema is not None:
            model = self.chat_model
            if kwargs:  # pin the knobs on a copy, since a bound model loses the method
                model = model.model_copy(update={k: v for k, v in kwargs.items() if k in knobs})
            try:
                structured_model = model.with_structured_output(request.response_schema)
            except NotImplementedError as exc:
                raise _StructuredRefused(f"{type(exc).__name__}: {exc}") from exc
            answer = await structured_model.ainvoke(messages)
            return JudgeReply(text=json.dumps(answer, default=str), model=self.model)
        runnable = self.chat_model.bind(**kwargs) if kwargs else self.chat_model
        message = await runnable.ainvoke(messages)
        metadata = getattr(message, "response_metadata", None) or {}
        logprobs = logprobs_from_openai(metadata.get("logprobs")) if request.logprobs else None
        return JudgeReply(
            text=_text_of(message),
            logprobs=logprobs,
            model=str(metadata.get("model_name") or metadata.get("model") or self.model),
            raw={"response_metadata": _jsonable(metadata)},
            usage=_jsonable(getattr(message, "usage_metadata", None)) or None,
        )

    def classify(self, error: Exception) -> Failure | None:
        if isinstance(error, _StructuredRefused):  # the wrapper falls back to text
            return Failure(f"structured output unsupported: {error}", retryable=False, status=501)
        # The isolation point: any model failure is an attempt failure, worth another try.
        return Failure(f"{type(error).__name__}: {error}", retryable=True)

    async def aclose(self) -> None:
        return None


class LangChainProvider(ManagedProvider):
    """The LangChain backend in the shared wrapper."""

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
        super().__init__(
            LangChainBackend(chat_model=chat_model, knobs=knobs),
            timeout_s=timeout_s,
            max_attempts=max_attempts,
            backoff_base_s=backoff_base_s,
            requests_per_minute=requests_per_minute,
            max_concurrency=max_concurrency,
            circuit_breaker_failures=circuit_breaker_failures,
        )
        self.chat_model = chat_model


def _overrides_structured_output(model: Any) -> bool:
    """The model class implements `with_structured_output` itself (the base class raises)."""
    try:
        from langchain_core.language_models import BaseChatModel
    except ImportError:  # pragma: no cover - langchain-core is a core dependency
        return False
    method = getattr(type(model), "with_structured_output", None)
    return method is not None and method is not BaseChatModel.with_structured_output


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


def load_chat_model(spec: Any, *, base_dir: str | Path | None = None) -> Any:
    """A LangChain chat model from `module:attr` or `path.py:attr` (an instance, or a zero-arg
    factory returning one). An object that is already a model is returned as is."""
    if not isinstance(spec, str):
        return spec
    module_part, sep, attr = spec.rpartition(":")
    if not sep or not module_part or not attr:
        raise ConfigError(
            f"chat_model {spec!r} must be 'module:attr' or 'path.py:attr'", key="judge.chat_model"
        )
    try:
        target = load_object(
            spec,
            base_dir=Path(base_dir) if base_dir is not None else Path.cwd(),
            key="judge.chat_model",
            namespace="_tracegrade_judge_model",
        )
    except ConfigError as exc:
        raise ConfigError(
            f"cannot load chat_model {spec!r}: {exc.message}",
            key="judge.chat_model",
            file=exc.file,
            line=exc.line,
            hint=exc.hint,
        ) from exc
    if callable(target) and not hasattr(target, "ainvoke"):
        try:
            target = target()
        except Exception as exc:  # a factory failing is a bad config, reported as one
            raise ConfigError(
                f"chat_model factory {spec!r} failed: {type(exc).__name__}: {exc}",
                key="judge.chat_model",
            ) from exc
    if not hasattr(target, "ainvoke"):
        raise ConfigError(
            f"chat_model {spec!r} is not a LangChain chat model", key="judge.chat_model"
        )
    return target
