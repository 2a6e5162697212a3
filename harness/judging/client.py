"""The judge client: the one way every judge path (the six LLM judges, the rubric judge, the
`@grader` judge closure) reaches the provider. It holds the provider, the judge cache and the
judge settings, puts every prompt part through `tracegrade.redaction` before anything leaves
the process, and serves repeated requests from the cache (a re-grade pays nothing)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from ..redaction import redact_text
from .cache import complete_cached
from .provider import JudgeProvider, JudgeReply, JudgeRequest

__all__ = ["JudgeClient", "redact_request"]


def redact_request(request: JudgeRequest) -> JudgeRequest:
    """`request` with every message's content redacted (secret-looking values replaced)."""
    messages = tuple(
        {**m, "content": redact_text(m["content"])} if isinstance(m.get("content"), str) else m
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
    ) -> None:
        self.provider = provider
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
        `accept(reply)`), else the provider with all its policies. Raises `ProviderError`."""
        return await complete_cached(
            self.provider,
            redact_request(request),
            cache=self.cache,
            use_cache=self.use_cache,
            accept=accept,
        )
