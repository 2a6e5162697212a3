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
      circuit_breaker_failures: 5     # consecutive failed attempts (429s too) that mark it down
      max_total_wait_s: 600           # the run's total waiting between attempts, all calls
      max_response_bytes: 10000000    # one response body, after decompression (openai-compatible)
      grading_deadline_s: 300         # all judge gradings of one question, retries included
      requests_per_minute: 600
      max_concurrency: 4
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError, PluginError
from ..usercode.plugins import PROVIDERS_GROUP, Plugin, load_plugins
from .breaker import DEFAULT_BREAKER_FAILURES, CircuitBreaker
from .cache import DEFAULT_CACHE_FILENAME, JudgeCache, cache_key, complete_cached
from .client import JudgeClient, redact_request
from .langchain_adapter import LangChainBackend, LangChainProvider, load_chat_model
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

PROVIDER_GROUP = PROVIDERS_GROUP
"""The entry-point group provider backends register in (built-ins included)."""
PROVIDER_KINDS = ("openai-compatible", "langchain")
"""The built-in provider kinds."""
DEFAULT_GRADING_DEADLINE_S = 300.0
"""How long all the gradings of one question may take (code graders too), retries and queueing
included, unless the judge block or the target sets `grading_deadline_s`."""
# The wrapper's keys, common to every backend.
_COMMON_KEYS = {
    "timeout_s",
    "max_attempts",
    "requests_per_minute",
    "max_concurrency",
    "circuit_breaker_failures",
    "max_total_wait_s",
}
# Keys of the judge block that belong to judges or the runner, not to the provider.
_NON_PROVIDER_KEYS = {
    "provider",
    "cache",
    "judge_response_char_limit",
    "templates",
    "grading_deadline_s",
}


def provider_backends() -> dict[str, Plugin]:
    """Installed provider backends by kind (entry-point group `tracegrade.providers`), each
    loaded and validated (a `from_config(config, *, base_dir)` classmethod) as it registers;
    two distributions registering one kind is a `PluginError` naming both."""
    return load_plugins(PROVIDER_GROUP, kind="judge provider", validate=_validate_backend)


def _validate_backend(backend_cls: Any, source: str) -> None:
    if not callable(getattr(backend_cls, "from_config", None)):
        raise PluginError(
            f"judge provider: {source} has no from_config(config, *, base_dir)",
            plugin=source,
            key="judge.provider",
        )


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
    backend_cls = backends[kind].obj
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
            f"judge provider {kind!r} ({backends[kind].source}) failed to start: "
            f"{type(exc).__name__}: {exc}",
            plugin=backends[kind].source,
            key="judge.provider",
        ) from exc
    return ManagedProvider(backend, **common)
