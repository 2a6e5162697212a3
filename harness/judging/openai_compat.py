"""The judge provider backend for any OpenAI-compatible chat-completions endpoint, over httpx.

Works with OpenAI, vLLM, llama.cpp server, Ollama's `/v1` and LM Studio: the request is plain
`POST {base_url}/chat/completions`. Sampling knobs are sent only when advertised (config
`knobs`, default temperature and top_p), so a server that rejects one is never sent it. The
backend only sends and classifies; `ManagedProvider` adds retries, limits and the rest.
"""

from __future__ import annotations

import asyncio
import json
import os
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from ..errors import ConfigError
from .breaker import DEFAULT_BREAKER_FAILURES
from .managed import PINNED_VALUES, ManagedProvider
from .provider import Failure, JudgeReply, JudgeRequest, TokenLogprob
from .retry import RETRYABLE_STATUSES, parse_retry_after

__all__ = [
    "DEFAULT_KNOBS",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "PINNED_VALUES",
    "OpenAICompatibleBackend",
    "OpenAICompatibleProvider",
    "logprobs_from_openai",
]

DEFAULT_KNOBS: tuple[str, ...] = ("temperature", "top_p")
DEFAULT_MAX_RESPONSE_BYTES = 10_000_000
"""Cap on a judge response body after decompression (`judge.max_response_bytes`): a server
sending a gigabyte, or a small gzip body that inflates to one, fails that call instead of
filling memory."""
_READ = 65_536


class _StatusError(Exception):
    """The server answered with an HTTP error status (or a body that is not an answer)."""

    def __init__(self, detail: str, *, status: int, retry_after: float | None = None) -> None:
        super().__init__(detail)
        self.detail, self.status, self.retry_after = detail, status, retry_after


class _BodyError(Exception):
    """A 2xx whose body is not a chat completion: retrying will not fix it."""

    def __init__(self, detail: str, *, status: int) -> None:
        super().__init__(detail)
        self.detail, self.status = detail, status


class OpenAICompatibleBackend:
    """Chat completions over httpx: builds the body, posts it, classifies what went wrong."""

    name = "openai-compatible"
    config_keys = frozenset(
        {
            "base_url",
            "model",
            "api_key_env",
            "structured_output",
            "headers",
            "knobs",
            "max_response_bytes",
        }
    )
    """The judge-block keys this backend reads (the wrapper's common keys aside)."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        api_key: str | None = None,
        knobs: tuple[str, ...] | list[str] = DEFAULT_KNOBS,
        structured_output: bool = True,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 30.0,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.max_response_bytes = int(max_response_bytes)
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
        self._headers = dict(headers or {})
        self._timeout_s = timeout_s
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def from_config(
        cls, config: Mapping[str, Any], *, base_dir: str | Path | None = None
    ) -> OpenAICompatibleBackend:
        for required in ("base_url", "model"):
            if not config.get(required):
                raise ConfigError(
                    f"the openai-compatible judge provider needs {required}",
                    key=f"judge.{required}",
                )
        return cls(
            base_url=str(config["base_url"]),
            model=str(config["model"]),
            api_key_env=config.get("api_key_env"),
            knobs=tuple(config.get("knobs", DEFAULT_KNOBS)),
            structured_output=bool(config.get("structured_output", True)),
            headers=config.get("headers"),
            timeout_s=float(config.get("timeout_s", 30.0)),
            max_response_bytes=int(config.get("max_response_bytes") or DEFAULT_MAX_RESPONSE_BYTES),
        )

    def location(self) -> str:
        return self.url

    def describe(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "structured_output": self.supports_structured_output}

    def body(
        self, request: JudgeRequest, *, knobs: Mapping[str, Any], structured: bool
    ) -> dict[str, Any]:
        """The JSON body sent for `request`."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in request.messages],
        }
        body.update(knobs)
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        if request.logprobs:
            body["logprobs"] = True
            if request.top_logprobs:
                body["top_logprobs"] = request.top_logprobs
        if structured and request.response_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": "judge_answer",
                    "schema": request.response_schema,
                    "strict": True,
                },
            }
        return body

    async def open(self) -> None:
        # A client's connection pool belongs to one event loop; the sync grade path runs a loop
        # per call, so a new loop gets a new client.
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            headers = {"Content-Type": "application/json", **self._headers}
            if self._api_key:
                headers["Authorization"] = f"Bearer {self._api_key}"
            # httpx's own limits sit above the wrapper's whole-attempt timeout: never first.
            self._client = httpx.AsyncClient(headers=headers, timeout=self._timeout_s * 2)
            self._client_loop = loop

    async def send(
        self, request: JudgeRequest, *, knobs: dict[str, Any], structured: bool
    ) -> JudgeReply:
        if self._client is None or self._client_loop is not asyncio.get_running_loop():
            await self.open()
        assert self._client is not None
        body = self.body(request, knobs=knobs, structured=structured)
        # Streamed and decompressed here, within `max_response_bytes`: httpx's own decoding
        # would hold a whole gigabyte (or a gzip bomb's inflation) before we could refuse it.
        headers = {"Accept-Encoding": "gzip, deflate"}
        async with self._client.stream("POST", self.url, json=body, headers=headers) as response:
            status = response.status_code
            content = await _read_capped(response, self.max_response_bytes, status=status)
        text = content.decode("utf-8", "replace")
        if status >= 400:
            detail = f"{response.reason_phrase}: {text[:300]}".strip()
            retry_after = parse_retry_after(response.headers.get("retry-after"))
            raise _StatusError(detail, status=status, retry_after=retry_after)
        try:
            data = json.loads(content)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise _BodyError(
                f"response body is not JSON ({exc}): {text[:200]!r}", status=status
            ) from exc
        if not isinstance(data, dict) or not data.get("choices"):
            raise _BodyError(f"response has no choices: {text[:200]!r}", status=status)
        return _reply_from(data, requested_logprobs=request.logprobs)

    def classify(self, error: Exception) -> Failure | None:
        if isinstance(error, _StatusError):
            retryable = error.status in RETRYABLE_STATUSES or error.status >= 500
            return Failure(
                error.detail,
                retryable=retryable,
                status=error.status,
                retry_after=error.retry_after if retryable else None,
            )
        if isinstance(error, _BodyError):
            return Failure(error.detail, retryable=False, status=error.status)
        if isinstance(error, httpx.TimeoutException):
            return Failure(f"timed out ({type(error).__name__})", retryable=True)
        if isinstance(error, httpx.TransportError):
            return Failure(f"{type(error).__name__}: {error}", retryable=True)
        return None

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


class OpenAICompatibleProvider(ManagedProvider):
    """The OpenAI-compatible backend in the shared wrapper: what `build_provider` returns for
    `provider: openai-compatible`, and the direct way to build one in code."""

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
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        backend = OpenAICompatibleBackend(
            base_url=base_url,
            model=model,
            api_key_env=api_key_env,
            api_key=api_key,
            knobs=knobs,
            structured_output=structured_output,
            headers=headers,
            timeout_s=timeout_s,
            max_response_bytes=max_response_bytes,
        )
        super().__init__(
            backend,
            timeout_s=timeout_s,
            max_attempts=max_attempts,
            backoff_base_s=backoff_base_s,
            requests_per_minute=requests_per_minute,
            max_concurrency=max_concurrency,
            circuit_breaker_failures=circuit_breaker_failures,
        )
        self.base_url = backend.base_url
        self.url = backend.url


async def _read_capped(response: httpx.Response, cap: int, *, status: int) -> bytes:
    """The response body, decompressed (gzip, deflate), at most `cap` bytes; `_BodyError`
    (this call fails, not retried) past it, having read no more than one chunk beyond."""
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    too_large = f"response body exceeds judge.max_response_bytes ({cap:,} bytes"
    if encoding in ("", "identity"):
        decoder = None
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise _BodyError(f"{too_large}; it declares {int(declared):,})", status=status)
    elif encoding in ("gzip", "x-gzip", "deflate"):
        decoder = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header, detected
    else:
        raise _BodyError(f"unsupported response content-encoding {encoding!r}", status=status)
    out = bytearray()
    try:
        async for chunk in response.aiter_raw(_READ):
            if decoder is None:
                out += chunk
            else:
                while chunk and len(out) <= cap:
                    out += decoder.decompress(chunk, cap + 1 - len(out))
                    chunk = decoder.unconsumed_tail
            if len(out) > cap:
                raise _BodyError(f"{too_large} after decompression)", status=status)
    except zlib.error as exc:
        raise _BodyError(f"response body does not decompress ({exc})", status=status) from exc
    return bytes(out)


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
