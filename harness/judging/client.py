"""The judge client: the one way every judge path (the six LLM judges, the rubric judge, the
`@grader` judge closure) reaches the provider. It holds the provider, the judge cache and the
judge settings, puts every prompt part through the run's redaction policy before anything leaves
the process (and before the cache keys or keeps it), and serves repeated requests from the cache
(a re-grade pays nothing)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..cost.usage import model_call, record_judge_call
from ..redaction import DEFAULT_POLICY, RedactionPolicy
from .cache import complete_cached
from .provider import JudgeProvider, JudgeReply, JudgeRequest

__all__ = ["JudgeClient", "redact_request"]


def redact_request(request: JudgeRequest, policy: RedactionPolicy = DEFAULT_POLICY) -> JudgeRequest:
    """`request` with every message's content redacted by `policy` (the run's: a value its
    `allow` lists reaches the judge as written)."""
    messages = tuple(
        {**m, "content": policy.text(m["content"])} if isinstance(m.get("content"), str) else m
        for m in request.messages
    )
    return dataclasses.replace(request, messages=messages)


class JudgeClient:
    """Provider + cache + settings, shared by every grader of a run (`GraderServices`)."""

    def __init__(
        self,
        provider: JudgeProvider,
        *,
        cache: Any = None,
        use_cache: bool = True,
        settings: Mapping[str, Any] | None = None,
        redaction: RedactionPolicy = DEFAULT_POLICY,
    ) -> None:
        self.provider = provider
        self.redaction = redaction
        """The run's redaction policy, applied to every request before the cache and the wire."""
        self.cache = cache
        """A `JudgeCache`, or None to call the provider every time."""
        self.use_cache = use_cache and cache is not None
        self.settings = dict(settings or {})
        """The judge settings of the config (templates, response limit, deadline...)."""

    @property
    def model(self) -> str:
        return str(getattr(self.provider, "model", ""))

    def identity(self) -> dict[str, Any]:
        return dict(self.provider.identity())

    async def acomplete(
        self, request: JudgeRequest, *, accept: Callable[[JudgeReply], bool] | None = None
    ) -> JudgeReply:
        """One judge call: redacted, through the cache (a reply is stored only when
        `accept(reply)`), else the provider with all its policies. Raises `ProviderError`.
        A call the provider answered is metered for the question being graded (a cached answer
        cost nothing and is not a call)."""
        started = time.perf_counter()
        reply = await complete_cached(
            self.provider,
            redact_request(request, self.redaction),
            cache=self.cache,
            use_cache=self.use_cache,
            accept=accept,
        )
        if not reply.cached:
            usage = reply.usage
            if usage is None and isinstance(reply.raw.get("usage"), Mapping):
                usage = reply.raw["usage"]
            model = reply.model or self.model or "judge"
            record_judge_call(model_call(model, usage, time.perf_counter() - started))
        return reply
