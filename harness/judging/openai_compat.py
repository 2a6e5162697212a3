"""A judge provider for any OpenAI-compatible chat-completions endpoint, over httpx.

Works with OpenAI, vLLM, llama.cpp server, Ollama's `/v1` and LM Studio: the request is plain
`POST {base_url}/chat/completions`. Sampling knobs are sent only when advertised (config
`knobs`, default temperature and top_p), so a server that rejects one is never sent it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
from typing import Any

import httpx

from harness.errors import ConfigError, ProviderError
from harness.judging.breaker import DEFAULT_BREAKER_FAILURES, CircuitBreaker
from harness.judging.provider import JudgeReply, JudgeRequest, TokenLogprob
from harness.judging.ratelimit import RateLimiter
from harness.judging.retry import (
    RETRYABLE_STATUSES,
    PermanentFailure,
    RetryPolicy,
    TransientFailure,
    parse_retry_after,
    with_retries,
)

__all__ = ["DEFAULT_KNOBS", "PINNED_VALUES", "OpenAICompatibleProvider", "logprobs_from_openai"]

PINNED_VALUES: dict[str, Any] = {"temperature": 0.0, "top_p": 1.0, "seed": 0}
"""What each knob is pinned to on every scoring call, when the provider advertises it."""
DEFAULT_KNOBS: tuple[str, ...] = ("temperature", "top_p")
_REFUSALS = frozenset({400, 404, 422, 501})
"""Statuses with which a server refuses a request it cannot serve as asked (json_schema)."""


class OpenAICompatibleProvider:
    """Chat completions over httpx with rate limiting, retries, timeouts and logprobs."""

    name = "openai-compatible"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        api_key: str | None = None,
        knobs: tuple[str, ...] | list[str] = DEFAULT_KNOBS,
        structured_output: bool = True,
        timeout_s: float = 30.0,
        max_attempts: int = 4,
        backoff_base_s: float = 0.5,
        requests_per_minute: int | None = None,
        max_concurrency: int | None = 4,
        headers: dict[str, str] | None = None,
        circuit_breaker_failures: int | None = DEFAULT_BREAKER_FAILURES,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.url = f"{self.base_url}/chat/completions"
        if api_key is None and api_key_env:
            api_key = os.environ.get(api_key_env)
            if not api_key:
                raise ConfigError(
                    f"environment variable {api_key_env} (named by judge.api_key_env) is not set",
                    key="judge.api_key_env",
                    hint="export the key, or remove api_key_env for a server that needs none",
                )
        self._api_key = api_key
        unknown = set(knobs) - set(PINNED_VALUES)
        if unknown:
            raise ConfigError(
                f"unknown judge knob(s) {sorted(unknown)}; known: {sorted(PINNED_VALUES)}",
                key="judge.knobs",
            )
        self.advertised_knobs = frozenset(knobs)
        self.supports_structured_output = structured_output
        """Send `response_format: json_schema` when a request carries a schema."""
        self.structured_output_refused: str | None = None
        """Why the server refused structured output, once it has: later calls send text."""
        self.policy = RetryPolicy(
            max_attempts=max_attempts, timeout_s=timeout_s, base_delay_s=backoff_base_s
        )
        self.limiter = RateLimiter(
            requests_per_minute=requests_per_minute, max_concurrency=max_concurrency
        )
        self.breaker = CircuitBreaker(circuit_breaker_failures)
        """Opens after that many consecutive failed attempts: the provider is down for the run."""
        self._headers = dict(headers or {})
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self.calls = 0
        """HTTP requests sent by this provider (every attempt counts)."""

    def pinned_knobs(self) -> dict[str, Any]:
        return {k: v for k, v in PINNED_VALUES.items() if k in self.advertised_knobs}

    def identity(self) -> dict[str, Any]:
        return {
            "kind": self.name,
            "base_url": self.base_url,
            "model": self.model,
            "pinned_knobs": self.pinned_knobs(),
            "structured_output": self.supports_structured_output,
        }

    def body(self, request: JudgeRequest) -> dict[str, Any]:
        """The JSON body sent for `request`."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in request.messages],
        }
        body.update(self.pinned_knobs())
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        if request.logprobs:
            body["logprobs"] = True
            if request.top_logprobs:
                body["top_logprobs"] = request.top_logprobs
        if request.response_schema is not None and self.structured_output_active:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": "judge_answer",
                    "schema": request.response_schema,
                    "strict": True,
                },
            }
        return body

    @property
    def structured_output_active(self) -> bool:
        """Structured output is configured and the server has not refused it."""
        return self.supports_structured_output and self.structured_output_refused is None

    async def acomplete(self, request: JudgeRequest) -> JudgeReply:
        body = self.body(request)
        structured = "response_format" in body
        try:
            data = await self._send(body)
        except ProviderError as exc:
            # A server without json_schema support refuses the request outright (400/422, or
            # 404/501 on some gateways): ask again as text, and keep asking as text.
            if not structured or exc.context.get("status") not in _REFUSALS:
                raise
            self.structured_output_refused = str(exc)
            body.pop("response_format")
            structured = False
            data = await self._send(body)
        reply = _reply_from(data, requested_logprobs=request.logprobs)
        return dataclasses.replace(reply, structured=structured)

    async def _send(self, body: dict[str, Any]) -> dict[str, Any]:
        return await with_retries(
            lambda: self._attempt(body),
            policy=self.policy,
            provider=self.name,
            url=self.url,
            slot=self.limiter.slot,
            breaker=self.breaker,
        )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # -- internals -------------------------------------------------------------------------
    def _http(self) -> httpx.AsyncClient:
        # A client's connection pool belongs to one event loop; the sync grade path runs a loop
        # per call, so a new loop gets a new client.
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            headers = {"Content-Type": "application/json", **self._headers}
            if self._api_key:
                headers["Authorization"] = f"Bearer {self._api_key}"
            self._client = httpx.AsyncClient(headers=headers, timeout=self.policy.timeout_s)
            self._client_loop = loop
        return self._client

    async def _attempt(self, body: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        try:
            response = await self._http().post(self.url, json=body)
        except httpx.TimeoutException as exc:
            raise TransientFailure(f"timed out ({type(exc).__name__})") from exc
        except httpx.TransportError as exc:
            raise TransientFailure(f"{type(exc).__name__}: {exc}") from exc
        status = response.status_code
        if status >= 400:
            detail = f"{response.reason_phrase}: {response.text[:300]}".strip()
            if status in RETRYABLE_STATUSES or status >= 500:
                raise TransientFailure(
                    detail,
                    status=status,
                    retry_after=parse_retry_after(response.headers.get("retry-after")),
                )
            raise PermanentFailure(detail, status=status)
        try:
            data = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise PermanentFailure(
                f"response body is not JSON ({exc}): {response.text[:200]!r}", status=status
            ) from exc
        if not isinstance(data, dict) or not data.get("choices"):
            raise PermanentFailure(
                f"response has no choices: {response.text[:200]!r}", status=status
            )
        return data


def _reply_from(data: dict[str, Any], *, requested_logprobs: bool) -> JudgeReply:
    choice = data["choices"][0] or {}
    message = choice.get("message") or {}
    text = message.get("content")
    if not isinstance(text, str):
        # A refusal or a tool call in place of an answer: no text to parse is a judge error
        # later, with the raw body kept for inspection.
        text = ""
    logprobs = logprobs_from_openai(choice.get("logprobs")) if requested_logprobs else None
    return JudgeReply(text=text, logprobs=logprobs, model=str(data.get("model", "")), raw=data)


def logprobs_from_openai(block: Any) -> tuple[TokenLogprob, ...] | None:
    """OpenAI's `choices[0].logprobs.content` as TokenLogprobs; None when not given."""
    if not isinstance(block, dict) or not isinstance(block.get("content"), list):
        return None
    out = []
    for item in block["content"]:
        if not isinstance(item, dict) or "token" not in item:
            continue
        top = tuple(
            (str(alt.get("token", "")), float(alt.get("logprob", float("-inf"))))
            for alt in item.get("top_logprobs") or ()
            if isinstance(alt, dict)
        )
        out.append(TokenLogprob(token=str(item["token"]), logprob=float(item["logprob"]), top=top))
    return tuple(out)
