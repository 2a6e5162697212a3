"""Judge providers, the judge cache, rate limiting, retries and prompt rendering.

`build_provider(judge_config)` turns the config's `judge:` block into a provider: the backend
that `provider:` names (entry-point group `tracegrade.providers`) inside `ManagedProvider`:

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
from importlib import metadata
from pathlib import Path
from typing import Any

from ..errors import ConfigError, PluginError
from .breaker import DEFAULT_BREAKER_FAILURES, CircuitBreaker
from .cache import DEFAULT_CACHE_FILENAME, JudgeCache, cache_key, complete_cached
from .client import JudgeClient, redact_request
from .langchain_adapter import LangChainBackend, LangChainProvider
from .managed import ManagedProvider
from .openai_compat import OpenAICompatibleBackend, OpenAICompatibleProvider
from .provider import (
    Failure,
    JudgeProvider,
    JudgeReply,
    JudgeRequest,
    ProviderBackend,
    TokenLogprob,
)
from .ratelimit import RateLimiter
from .rendering import (
    NO_TOOLS_CALLED,
    TOOL_CALLS_HEADER,
    escape_fences,
    fence,
    render_tool_calls,
)
from .retry import RetryPolicy

__all__ = [
    "DEFAULT_BREAKER_FAILURES",
    "DEFAULT_CACHE_FILENAME",
    "DEFAULT_GRADING_DEADLINE_S",
    "NO_TOOLS_CALLED",
    "PROVIDER_GROUP",
    "PROVIDER_KINDS",
    "TOOL_CALLS_HEADER",
    "CircuitBreaker",
    "Failure",
    "JudgeCache",
    "JudgeClient",
    "JudgeProvider",
    "JudgeReply",
    "JudgeRequest",
    "LangChainBackend",
    "LangChainProvider",
    "ManagedProvider",
    "OpenAICompatibleBackend",
    "OpenAICompatibleProvider",
    "ProviderBackend",
    "RateLimiter",
    "RetryPolicy",
    "TokenLogprob",
    "build_provider",
    "cache_key",
    "complete_cached",
    "escape_fences",
    "fence",
    "load_chat_model",
    "provider_backends",
    "redact_request",
    "render_tool_calls",
]

PROVIDER_GROUP = "tracegrade.providers"
"""The entry-point group provider backends register in (built-ins included)."""
PROVIDER_KINDS = ("openai-compatible", "langchain")
"""The built-in provider kinds."""
DEFAULT_GRADING_DEADLINE_S = 300.0
"""How long all the judge gradings of one question may take, retries and queueing included."""
# The wrapper's keys, common to every backend.
_COMMON_KEYS = {
    "timeout_s",
    "max_attempts",
    "requests_per_minute",
    "max_concurrency",
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


def provider_backends() -> dict[str, metadata.EntryPoint]:
    """Installed provider backends by kind (entry-point group `tracegrade.providers`)."""
    found: dict[str, metadata.EntryPoint] = {}
    for entry_point in metadata.entry_points(group=PROVIDER_GROUP):
        found.setdefault(entry_point.name, entry_point)
    return found


def _load_backend_class(kind: str, entry_point: metadata.EntryPoint) -> Any:
    dist = getattr(entry_point, "dist", None)
    source = (
        f"provider plugin {dist.metadata['Name'] if dist is not None else 'unknown'!r}, "
        f"entry point {entry_point.name} = {entry_point.value}"
    )
    try:
        backend_cls = entry_point.load()
    except Exception as exc:  # isolation point: a broken plugin is named, never a traceback
        raise PluginError(
            f"judge provider {kind!r}: {source} cannot be loaded: {type(exc).__name__}: {exc}",
            plugin=source,
            key="judge.provider",
        ) from exc
    if not callable(getattr(backend_cls, "from_config", None)):
        raise PluginError(
            f"judge provider {kind!r}: {source} has no from_config(config, *, base_dir)",
            plugin=source,
            key="judge.provider",
        )
    return backend_cls


def build_provider(
    judge_config: Mapping[str, Any], *, base_dir: str | Path | None = None
) -> JudgeProvider:
    """A provider from the config's `judge:` block: the backend its `provider:` names (from the
    `tracegrade.providers` entry points) inside `ManagedProvider`. `base_dir` resolves paths in
    the block (the config file's directory). Bad settings raise `ConfigError` naming the key; a
    plugin that cannot be loaded raises `PluginError` naming it."""
    config = dict(judge_config)
    kind = config.get("provider", "openai-compatible")
    backends = provider_backends()
    if kind not in backends:
        raise ConfigError(
            f"unknown judge provider {kind!r}; expected one of {', '.join(sorted(backends))}",
            key="judge.provider",
        )
    backend_cls = _load_backend_class(kind, backends[kind])
    specific = set(getattr(backend_cls, "config_keys", ()))
    unknown = set(config) - specific - _COMMON_KEYS - _NON_PROVIDER_KEYS
    if unknown:
        key = sorted(unknown)[0]
        raise ConfigError(f"unknown key {key!r} for judge provider {kind}", key=f"judge.{key}")
    if "knobs" in config:
        knobs = config["knobs"]
        if not isinstance(knobs, (list, tuple)) or not all(isinstance(k, str) for k in knobs):
            raise ConfigError("judge.knobs must be a list of knob names", key="judge.knobs")
    common = {key: config[key] for key in _COMMON_KEYS if config.get(key) is not None}
    try:
        backend = backend_cls.from_config(config, base_dir=base_dir)
    except (ConfigError, PluginError):
        raise
    except Exception as exc:  # isolation point: a plugin's constructor failing is named
        raise PluginError(
            f"judge provider {kind!r} ({backends[kind].value}) failed to start: "
            f"{type(exc).__name__}: {exc}",
            plugin=backends[kind].value,
            key="judge.provider",
        ) from exc
    return ManagedProvider(backend, **common)


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
