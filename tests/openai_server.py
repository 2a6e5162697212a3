"""A real OpenAI-compatible chat-completions server on loopback, for judge, rubric and runner tests.

It listens on 127.0.0.1 on an ephemeral port in a background thread and answers
`POST /v1/chat/completions` with scripted answers. Nothing is mocked: the client under test
speaks real HTTP to it.

Usage::

    from tests import openai_server as loopback
    from tests.openai_server import rate_limited, score

    # The fixture under the name tests request. (`from tests.openai_server import
    # openai_server` works for pytest too, but ruff then flags every test parameter F811.)
    openai_server = loopback.openai_server

    def test_something(openai_server):
        openai_server.enqueue(rate_limited(retry_after=0.1), score(4, "good"))
        provider = build_provider({"base_url": openai_server.base_url, "model": "m"})
        ...
        assert len(openai_server.requests) == 2
        assert "<agent_response>" in openai_server.requests[-1].prompt

API
- `OpenAIServer.base_url` -> "http://127.0.0.1:PORT/v1" (give it to a provider as `base_url`).
- `enqueue(*answers)`: answers served in order, one per request. When the queue is empty,
  `responder(body)` is called if set (a function of the parsed request body returning an
  Answer, a str or a dict), else `default` is served (initially `score(3, "default answer")`).
- `requests`: every request received, in arrival order, as `Recorded(path, headers, body,
  prompt)`; `prompt` is all message contents joined by newlines. `reset()` clears requests and
  queue and restores the default.
- Answers (plain functions returning `Answer`):
  `reply(content)` a 200 with that assistant content; a dict content is JSON-encoded;
  `score(value, reason)` the JSON `{"score": value, "reason": reason}`;
  `non_numeric_score()` `{"score": "excellent", ...}`; `off_scale(7)` = `score(7, ...)`;
  `rate_limited(retry_after=1.0)` a 429 with `Retry-After`; `server_error(status=500)`;
  `slow(seconds, then=...)` waits before answering (to trigger a client timeout);
  `malformed_body()` a 200 whose body is not JSON;
  `huge(n, declared=True)` a 200 chat completion of `n` bytes, streamed (never held whole),
  with its Content-Length or (`declared=False`) without one;
  `gzip_bomb(n)` a 200 `Content-Encoding: gzip` body of about n/1000 bytes that inflates to a
  chat completion of `n` bytes.
- `tool_calls((name, arguments), ...)`: an assistant message requesting those tool calls.
- Streaming: a request with `"stream": true` is answered as server-sent events (the content in
  word pieces, each tool call whole, the usage last when `stream_options.include_usage`).
- Logprobs: when a request asks for `logprobs`, the answer carries OpenAI-format
  `choices[0].logprobs.content`: `Answer.logprobs` if given (a list of
  `(token, logprob, [(alt_token, alt_logprob), ...])`), else one entry per content chunk with
  logprob 0.0. `top_logprobs` alternatives are cut to the request's `top_logprobs`.
- `answer_model`: the `model` field answers report (default: echo the request's model).
- `HangingServer` (fixture `hanging_server`): accepts every connection and never answers;
  `.base_url`, `.accepted`.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

__all__ = [
    "Answer",
    "HangingServer",
    "OpenAIServer",
    "Recorded",
    "gzip_bomb",
    "hanging_server",
    "huge",
    "malformed_body",
    "non_numeric_score",
    "off_scale",
    "openai_server",
    "rate_limited",
    "reply",
    "score",
    "server_error",
    "slow",
    "tool_calls",
]


@dataclass
class Answer:
    """One scripted answer."""

    content: str = ""
    """The assistant message content (status 200 answers)."""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    """Seconds to wait before answering."""
    raw_body: bytes | None = None
    """Sent verbatim instead of a chat-completions body."""
    logprobs: list[tuple[str, float, list[tuple[str, float]]]] | None = None
    """Explicit per-token logprobs; None derives them from the content when asked."""
    stream: Callable[[], Iterator[bytes]] | None = None
    """Chunks sent as the body (with `stream_length` as its Content-Length) in place of any
    other body: a body too large to build in memory."""
    stream_length: int = 0
    """-1: no Content-Length; the connection closes after the body."""
    tool_calls: list[tuple[str, dict[str, Any]]] | None = None
    """Tool calls the assistant message requests, as (name, arguments)."""


@dataclass
class Recorded:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    prompt: str
    """All message contents of the request joined by newlines."""


def reply(content: str | dict[str, Any], **kwargs: Any) -> Answer:
    text = content if isinstance(content, str) else json.dumps(content)
    return Answer(content=text, **kwargs)


def tool_calls(*calls: tuple[str, dict[str, Any]], content: str = "") -> Answer:
    """A 200 whose assistant message requests `calls` (name, arguments), ids `call_<n>`."""
    return Answer(content=content, tool_calls=list(calls))


def score(value: Any, reason: str = "scripted", **kwargs: Any) -> Answer:
    return reply({"score": value, "reason": reason}, **kwargs)


def non_numeric_score() -> Answer:
    return score("excellent", "words, not a number")


def off_scale(value: float = 7) -> Answer:
    return score(value, "graded on another scale")


def rate_limited(retry_after: float = 1.0) -> Answer:
    body = json.dumps({"error": {"message": "rate limited", "type": "rate_limit"}}).encode()
    return Answer(status=429, headers={"Retry-After": f"{retry_after:g}"}, raw_body=body)


def server_error(status: int = 500) -> Answer:
    body = json.dumps({"error": {"message": "internal error", "type": "server_error"}}).encode()
    return Answer(status=status, raw_body=body)


def slow(seconds: float, then: Answer | None = None) -> Answer:
    answer = then if then is not None else score(3, "slow answer")
    answer.delay_s = seconds
    return answer


def malformed_body() -> Answer:
    return Answer(raw_body=b'{"choices": [ this is not json')


_HEAD = b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "'
_TAIL = b'"}, "finish_reason": "stop"}], "model": "m"}'
_CHUNK = 1 << 20


def _padded(n: int) -> Iterator[bytes]:
    """A chat completion of `n` bytes in all: its content is `a`s."""
    left = max(0, n - len(_HEAD) - len(_TAIL))
    yield _HEAD
    while left:
        step = min(left, _CHUNK)
        yield b"a" * step
        left -= step
    yield _TAIL


def huge(n: int, *, declared: bool = True) -> Answer:
    """`declared=False`: no Content-Length (the body ends when the connection closes), so
    only reading it tells its size."""
    length = max(n, len(_HEAD) + len(_TAIL)) if declared else -1
    return Answer(stream=lambda: _padded(n), stream_length=length)


def gzip_bomb(n: int) -> Answer:
    compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)  # gzip framing
    body = b"".join(compressor.compress(c) for c in _padded(n)) + compressor.flush()
    return Answer(
        headers={"Content-Encoding": "gzip"}, stream=lambda: iter([body]), stream_length=len(body)
    )


class OpenAIServer:
    """The server; see the module docstring."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.responder: Callable[[dict[str, Any]], Answer | str | dict] | None = None
        self.default: Answer = score(3, "default answer")
        self.answer_model: str | None = None
        self._queue: deque[Answer] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> OpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def enqueue(self, *answers: Answer) -> None:
        with self._lock:
            self._queue.extend(answers)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.responder = None
            self.default = score(3, "default answer")

    # -- called by the handler --------------------------------------------------------------
    def _next_answer(self, body: dict[str, Any]) -> Answer:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            answer = self.responder(body)
            if isinstance(answer, Answer):
                return answer
            return reply(answer)
        return Answer(**{**self.default.__dict__, "headers": dict(self.default.headers)})

    def _record(self, recorded: Recorded) -> None:
        with self._lock:
            self.requests.append(recorded)


def _handler_for(server: OpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # one small answer per request: no delayed-ACK stalls

        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

        def handle(self) -> None:
            # The client may drop the connection (a body it refused to read on): not an error.
            with contextlib.suppress(ConnectionResetError, BrokenPipeError):
                super().handle()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, b'{"error": {"message": "not found"}}')
                return
            try:
                body = json.loads(raw)
            except json.JSONDecodeError:
                self._send(400, b'{"error": {"message": "request body is not JSON"}}')
                return
            prompt = "\n".join(
                str(m.get("content", "")) for m in body.get("messages", []) if isinstance(m, dict)
            )
            server._record(Recorded(self.path, dict(self.headers.items()), body, prompt))
            answer = server._next_answer(body)
            if answer.delay_s and server._stopping.wait(answer.delay_s):
                return
            if answer.stream is not None:
                self._send_stream(answer)
                return
            if answer.raw_body is not None:
                self._send(answer.status, answer.raw_body, answer.headers)
                return
            payload = _completion(body, answer, server.answer_model)
            if body.get("stream") and answer.status == 200:
                self._send_events(_stream_events(payload, body))
                return
            self._send(answer.status, json.dumps(payload).encode(), answer.headers)

        def _send_events(self, events: list[dict[str, Any]]) -> None:
            """A streamed chat completion: server-sent events, then `[DONE]`."""
            data = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
            self._send_stream(
                Answer(
                    headers={"Content-Type": "text/event-stream"},
                    stream=lambda: iter([data, b"data: [DONE]\n\n"]),
                    stream_length=len(data) + len(b"data: [DONE]\n\n"),
                )
            )

        def _send(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test): nothing to answer

        def _send_stream(self, answer: Answer) -> None:
            assert answer.stream is not None
            try:
                self.send_response(answer.status)
                if "Content-Type" not in answer.headers:
                    self.send_header("Content-Type", "application/json")
                if answer.stream_length >= 0:
                    self.send_header("Content-Length", str(answer.stream_length))
                else:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                for chunk in answer.stream():
                    self.wfile.write(chunk)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client stopped reading: expected here

    return Handler


def _completion(body: dict[str, Any], answer: Answer, model: str | None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.content}
    if answer.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for i, (name, arguments) in enumerate(answer.tool_calls)
        ]
    choice: dict[str, Any] = {
        "index": 0,
        "message": message,
        "finish_reason": "tool_calls" if answer.tool_calls else "stop",
        "logprobs": None,
    }
    if body.get("logprobs"):
        top_n = int(body.get("top_logprobs") or 0)
        tokens = answer.logprobs
        if tokens is None:
            chunks = re.findall(r"\s*\S+|\s+", answer.content) or [""]
            tokens = [(chunk, 0.0, [(chunk, 0.0)]) for chunk in chunks]
        choice["logprobs"] = {
            "content": [
                {
                    "token": token,
                    "logprob": logprob,
                    "bytes": list(token.encode()),
                    "top_logprobs": [
                        {"token": t, "logprob": lp, "bytes": list(t.encode())}
                        for t, lp in top[:top_n]
                    ],
                }
                for token, logprob, top in tokens
            ]
        }
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 0,
        "model": model or body.get("model", ""),
        "choices": [choice],
        "usage": _usage(body, answer),
    }


def _stream_events(payload: dict[str, Any], body: dict[str, Any]) -> list[dict[str, Any]]:
    """A completion as `chat.completion.chunk` events: the content in word pieces, each tool
    call whole, the finish reason, then the usage when `stream_options.include_usage`."""
    head = {k: payload[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    choice = payload["choices"][0]
    message = choice["message"]
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    deltas += [{"content": piece} for piece in re.findall(r"\s*\S+|\s+", message["content"])]
    for index, call in enumerate(message.get("tool_calls") or []):
        deltas.append({"tool_calls": [{"index": index, **call}]})
    events = [
        {**head, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas
    ]
    events.append(
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]}
    )
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append({**head, "choices": [], "usage": payload["usage"]})
    return events


def _usage(body: dict[str, Any], answer: Answer) -> dict[str, int]:
    """Token counts as a provider reports them: about four characters a token."""
    sent = sum(len(str(m.get("content", ""))) for m in body.get("messages") or [])
    prompt, completion = max(1, sent // 4), max(1, len(answer.content) // 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A started loopback server, stopped after the test."""
    server = OpenAIServer().start()
    try:
        yield server
    finally:
        server.stop()


class HangingServer:
    """A loopback TCP server that accepts every connection and never answers a byte: the
    judge outage that costs the most (every attempt waits out its whole timeout)."""

    def __init__(self) -> None:
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(1024)
        self._listener.settimeout(0.05)
        self._held: list[socket.socket] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self.accepted = 0
        """Connections accepted so far."""

    @property
    def base_url(self) -> str:
        host, port = self._listener.getsockname()[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> HangingServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        # Joined before its sockets close, however long a loaded machine takes: an accept in
        # flight on a closed descriptor serves whatever socket takes that number next (the
        # next test's server), as test_export_bounded's hung backend did under stress.
        self._thread.join(timeout=300)
        for conn in self._held:
            conn.close()
        self._listener.close()

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._held.append(conn)
            self.accepted += 1


@pytest.fixture
def hanging_server() -> Iterator[HangingServer]:
    """A started server that accepts and never answers, stopped after the test."""
    server = HangingServer().start()
    try:
        yield server
    finally:
        server.stop()
