"""Judge providers, the judge cache, rate limiting, retries and prompt rendering.

`build_provider(judge_config)` turns the config's `judge:` block into a provider:

    judge:
      provider: openai-compatible     # or "langchain" with chat_model: module:attr | path.py:attr
      base_url: http://127.0.0.1:8080/v1
      model: gpt-4o-mini
      api_key_env: OPENAI_API_KEY     # optional
      knobs: [temperature, top_p]     # sampling knobs the provider accepts (default these two)
      structured_output: true         # send response_format json_schema (default true)
      headers: {X-Tenant: eval}       # extra HTTP headers on every request (openai-compatible)
      timeout_s: 30                   # bounds each whole attempt
      max_attempts: 4
      circuit_breaker_failures: 5     # consecutive failed attempts that mark the provider down
      grading_deadline_s: 300         # all judge gradings of one question, retries included
      requests_per_minute: 600
      max_concurrency: 4
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.errors import ConfigError
from harness.judging.breaker import DEFAULT_BREAKER_FAILURES, CircuitBreaker
from harness.judging.cache import DEFAULT_CACHE_FILENAME, JudgeCache, cache_key, complete_cached
from harness.judging.langchain_adapter import LangChainProvider
from harness.judging.openai_compat import DEFAULT_KNOBS, OpenAICompatibleProvider
from harness.judging.provider import JudgeProvider, JudgeReply, JudgeRequest, TokenLogprob
from harness.judging.ratelimit import RateLimiter
from harness.judging.rendering import (
    NO_TOOLS_CALLED,
    TOOL_CALLS_HEADER,
    escape_fences,
    fence,
    render_tool_calls,
)
from harness.judging.retry import RetryPolicy

__all__ = [
    "DEFAULT_BREAKER_FAILURES",
    "DEFAULT_CACHE_FILENAME",
    "DEFAULT_GRADING_DEADLINE_S",
    "NO_TOOLS_CALLED",
    "PROVIDER_KINDS",
    "TOOL_CALLS_HEADER",
    "CircuitBreaker",
    "JudgeCache",
    "JudgeProvider",
    "JudgeReply",
    "JudgeRequest",
    "LangChainProvider",
    "OpenAICompatibleProvider",
    "RateLimiter",
    "RetryPolicy",
    "TokenLogprob",
    "build_provider",
    "cache_key",
    "complete_cached",
    "escape_fences",
    "fence",
    "load_chat_model",
    "render_tool_calls",
]

PROVIDER_KINDS = ("openai-compatible", "langchain")
DEFAULT_GRADING_DEADLINE_S = 300.0
"""How long all the judge gradings of one question may take, retries and queueing included."""
_COMMON_KEYS = {
    "timeout_s",
    "max_attempts",
    "requests_per_minute",
    "max_concurrency",
    "knobs",
    "circuit_breaker_failures",
}
# Keys of the judge block that belong to judges or the runner, not to the provider.
_NON_PROVIDER_KEYS = {
    "provider",
    "cache",
    "judge_response_char_limit",
    "templates",
    "grading_deadline_s",
}


def build_provider(
    judge_config: Mapping[str, Any], *, base_dir: str | Path | None = None
) -> JudgeProvider:
    """A provider from the config's `judge:` block. `base_dir` resolves a `path.py:attr`
    chat model (the config file's directory). Bad settings raise `ConfigError` naming the key."""
    config = dict(judge_config)
    kind = config.get("provider", "openai-compatible")
    if kind not in PROVIDER_KINDS:
        raise ConfigError(
            f"unknown judge provider {kind!r}; expected one of {', '.join(PROVIDER_KINDS)}",
            key="judge.provider",
        )
    common: dict[str, Any] = {}
    for key in (
        "timeout_s",
        "max_attempts",
        "requests_per_minute",
        "max_concurrency",
        "circuit_breaker_failures",
    ):
        if config.get(key) is not None:
            common[key] = config[key]
    if "knobs" in config:
        knobs = config["knobs"]
        if not isinstance(knobs, (list, tuple)) or not all(isinstance(k, str) for k in knobs):
            raise ConfigError("judge.knobs must be a list of knob names", key="judge.knobs")
        common["knobs"] = tuple(knobs)

    if kind == "langchain":
        _reject_unknown(config, {"chat_model"})
        if "chat_model" not in config:
            raise ConfigError(
                "a langchain judge provider needs chat_model (module:attr or path.py:attr)",
                key="judge.chat_model",
            )
        return LangChainProvider(
            chat_model=load_chat_model(config["chat_model"], base_dir=base_dir), **common
        )

    _reject_unknown(config, {"base_url", "model", "api_key_env", "structured_output", "headers"})
    for required in ("base_url", "model"):
        if not config.get(required):
            raise ConfigError(
                f"the openai-compatible judge provider needs {required}", key=f"judge.{required}"
            )
    return OpenAICompatibleProvider(
        base_url=str(config["base_url"]),
        model=str(config["model"]),
        api_key_env=config.get("api_key_env"),
        knobs=common.pop("knobs", DEFAULT_KNOBS),
        structured_output=bool(config.get("structured_output", True)),
        headers=config.get("headers"),
        **common,
    )


def _reject_unknown(config: Mapping[str, Any], specific: set[str]) -> None:
    unknown = set(config) - specific - _COMMON_KEYS - _NON_PROVIDER_KEYS
    if unknown:
        key = sorted(unknown)[0]
        raise ConfigError(
            f"unknown key {key!r} for judge provider {config.get('provider', 'openai-compatible')}",
            key=f"judge.{key}",
        )


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
        if module_part.endswith(".py") or "/" in module_part:
            path = Path(module_part)
            if not path.is_absolute() and base_dir is not None:
                path = Path(base_dir) / path
            module_name = f"_tracegrade_judge_model_{abs(hash(str(path.resolve())))}"
            spec_obj = importlib.util.spec_from_file_location(module_name, path)
            if spec_obj is None or spec_obj.loader is None:
                raise ConfigError(f"cannot load {path}", key="judge.chat_model", file=str(path))
            module = importlib.util.module_from_spec(spec_obj)
            sys.modules[module_name] = module
            spec_obj.loader.exec_module(module)
        else:
            module = importlib.import_module(module_part)
        target = getattr(module, attr)
    except ConfigError:
        raise
    except Exception as exc:  # import-time failure of user code: report it as bad config
        raise ConfigError(
            f"cannot load chat_model {spec!r}: {type(exc).__name__}: {exc}", key="judge.chat_model"
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
