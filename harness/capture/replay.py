"""Record and replay a question run's model calls at LangChain's chat-model layer.

A `ReplaySession` holds one question run's cassette (`tracegrade.capture.cassette`) and its
record mode. While it is active (`with session.active():`, a context variable, so concurrent
questions in one process each see their own), every chat model call the graph makes goes
through it: sync or async, streamed or not, whatever the provider (`ChatOpenAI` over HTTP
included). A call whose key the cassette holds is answered from it and the provider is never
called; a call it does not hold is recorded (modes `once` on a missing cassette, `new`, `all`)
or, in `none`, refused: `ReplayMiss` names the question, the call's position and the first
difference from the nearest recording, and the session keeps the miss so the question errors
even when the agent swallows the exception.

How: the first session installs thin shims on `BaseChatModel`'s entry points (`invoke` and
`ainvoke`'s `_(a)generate_with_cache`, `stream`, `astream`) that wrap, once per concrete model
class, the provider methods `_generate`, `_agenerate`, `_stream` and `_astream`. With no active
session a wrapped method calls straight through; nothing is installed until a run configures
cassettes. A model whose class implements LangChain's native protocol-event hooks
(`_stream_chat_model_events`) on an invoke with a v2 streaming handler is not intercepted.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import threading
import time
from collections import defaultdict, deque
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..canonical import content_hash
from ..errors import CaptureError
from ..redaction import DEFAULT_POLICY, RedactionPolicy
from .cassette import (
    MODES,
    REPLAYED,
    Recording,
    chat_result,
    model_request,
    read_cassette,
    recorded_answer,
    replay_chunks,
    write_cassette,
)
from .drift import describe_miss

__all__ = ["REPLAYED", "ReplayMiss", "ReplaySession", "active_session"]

_session: ContextVar[ReplaySession | None] = ContextVar("tracegrade_replay", default=None)
_inside: ContextVar[bool] = ContextVar("tracegrade_replay_inside", default=False)


class ReplayMiss(CaptureError):
    """A call the cassette holds no recording of, in a mode that may not record it."""


def active_session() -> ReplaySession | None:
    return _session.get()


@dataclass(slots=True)
class _Call:
    position: int
    key: str
    request: dict[str, Any]
    hit: Recording | None


@dataclass
class ReplaySession:
    """One question run's cassette and mode; see the module docstring."""

    path: Path
    mode: str
    question_id: str
    trial: int = 0
    target: str = ""
    policy: RedactionPolicy = DEFAULT_POLICY
    record_tools: frozenset[str] = frozenset()
    """Tools (by name) recorded and replayed like model calls (with
    `tracegrade.capture.replay_tools.install_tools()` called once)."""
    misses: list[str] = field(default_factory=list)
    """Every refused call, described (the question's error)."""
    replayed: int = 0
    recorded: int = 0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"record mode {self.mode!r} is not one of {', '.join(MODES)}")
        loaded = read_cassette(self.path) if self.mode != "all" else None
        self.existed = loaded is not None
        self._loaded: list[Recording] = loaded.recordings if loaded is not None else []
        self._unused: dict[str, deque[Recording]] = defaultdict(deque)
        for r in self._loaded:
            self._unused[r.key].append(r)
        self.may_replay = self.mode != "all"
        self.may_record = self.mode in ("new", "all") or (self.mode == "once" and not self.existed)
        self._used: list[Recording] = []
        self._positions = itertools.count()
        self._lock = threading.Lock()

    @property
    def label(self) -> str:
        trial = f" trial {self.trial}" if self.trial else ""
        return f"question {self.question_id!r}{trial}"

    @contextlib.contextmanager
    def active(self) -> Iterator[ReplaySession]:
        """Route every chat model call of this context through the session."""
        install()
        token = _session.set(self)
        try:
            yield self
        finally:
            _session.reset(token)

    # -- one call ------------------------------------------------------------------------
    def begin(self, key: str, request: dict[str, Any], *, tool: str | None = None) -> _Call:
        """Claim a position and the recording that answers it; raises `ReplayMiss` when none
        does and this mode may not record."""
        with self._lock:
            position = next(self._positions)
            queue = self._unused.get(key) if self.may_replay else None
            hit = queue.popleft() if queue else None
            if hit is not None:
                self.replayed += 1
                self._used.append(_moved(hit, position))
                return _Call(position, key, request, hit)
            if self.may_record:
                return _Call(position, key, request, None)
            message = describe_miss(
                label=self.label,
                position=position,
                path=self.path,
                existed=self.existed,
                request=self.policy.value(request, by_name=False),
                candidates=[r for q in self._unused.values() for r in q if r.tool == tool]
                or [r for r in self._loaded if r.tool == tool],
            )
            self.misses.append(message)
        raise ReplayMiss(message, question_id=self.question_id, file=str(self.path))

    def keep(self, call: _Call, response: dict[str, Any], latency_s: float, tool=None) -> None:
        """A live call's answer, recorded at its position."""
        request = self.policy.value(call.request, by_name=False)
        recording = Recording(call.position, call.key, request, response, latency_s, tool)
        with self._lock:
            self.recorded += 1
            self._used.append(recording)

    def finish(self) -> bool:
        """Write the cassette when this mode may record and the calls used differ from the
        file's (something recorded, or a recording went unused); True when written."""
        stale = len(self._used) < len(self._loaded)
        if not self.may_record or (self.mode != "all" and not self.recorded and not stale):
            return False
        header = {"target": self.target, "question": self.question_id, "trial": self.trial}
        write_cassette(self.path, header, self._used)
        return True

    # -- model calls ---------------------------------------------------------------------
    def model_call(self, model: Any, messages: list, stop: Any, kwargs: dict) -> _Call:
        request = model_request(model, messages, stop, kwargs, self.policy)
        return self.begin(content_hash(request), request)

    def keep_model(self, call: _Call, generations: list, llm_output: Any, latency_s: float):
        self.keep(call, recorded_answer(generations, llm_output, self.policy), latency_s)


def _moved(recording: Recording, position: int) -> Recording:
    """A replayed recording at the position it was used this time (what `new` writes)."""
    return Recording(
        position,
        recording.key,
        recording.request,
        recording.response,
        recording.latency_s,
        recording.tool,
    )


def _mark(result: Any) -> Any:
    for generation in result.generations:
        generation.message.response_metadata[REPLAYED] = True
    return result


# -- interception ----------------------------------------------------------------------------
_install_lock = threading.Lock()
_installed = False
_wrapped: set[type] = set()
_ENTRY_POINTS = ("_generate_with_cache", "_agenerate_with_cache", "stream", "astream")
_PROVIDER_METHODS = ("_generate", "_agenerate", "_stream", "_astream")


def install() -> None:
    """Shim `BaseChatModel`'s entry points (once per process): each wraps the calling model's
    class on first use."""
    global _installed
    if _installed:
        return
    from langchain_core.language_models.chat_models import BaseChatModel

    with _install_lock:
        if _installed:
            return
        for name in _ENTRY_POINTS:
            setattr(BaseChatModel, name, _entry_shim(getattr(BaseChatModel, name)))
        _installed = True


def _entry_shim(original: Any) -> Any:
    # The same kind of callable as the original (LangChain inspects some of them).
    if inspect.isasyncgenfunction(original):

        @functools.wraps(original)
        async def agen_shim(self, *args, **kwargs):
            _ensure_wrapped(self)
            async for item in original(self, *args, **kwargs):
                yield item

        return agen_shim
    if inspect.isgeneratorfunction(original):

        @functools.wraps(original)
        def gen_shim(self, *args, **kwargs):
            _ensure_wrapped(self)
            yield from original(self, *args, **kwargs)

        return gen_shim

    @functools.wraps(original)
    def shim(self, *args, **kwargs):
        _ensure_wrapped(self)
        return original(self, *args, **kwargs)

    return shim


def _ensure_wrapped(model: Any) -> None:
    if _session.get() is not None and type(model) not in _wrapped:
        _wrap_class(type(model))


def _wrap_class(cls: type) -> None:
    from langchain_core.language_models.chat_models import BaseChatModel

    with _install_lock:
        if cls in _wrapped:
            return
        for name in _PROVIDER_METHODS:
            original = getattr(cls, name)
            if getattr(original, "__tracegrade_replay__", False):
                continue  # inherited from a class already wrapped
            if name in ("_stream", "_astream") and original is getattr(BaseChatModel, name):
                continue  # LangChain detects streaming support by this identity
            setattr(cls, name, _WRAPPERS[name](original))
        _wrapped.add(cls)


def _takes_run_manager(original: Any) -> bool:
    return "run_manager" in inspect.signature(original).parameters


def _through(original: Any, takes: bool, run_manager: Any) -> dict[str, Any]:
    return {"run_manager": run_manager} if takes else {}


def _wrap_generate(original: Any) -> Any:
    takes = _takes_run_manager(original)

    @functools.wraps(original)
    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        session = _session.get()
        extra = _through(original, takes, run_manager)
        if session is None or _inside.get():
            return original(self, messages, stop=stop, **extra, **kwargs)
        call = session.model_call(self, messages, stop, kwargs)
        if call.hit is not None:
            return _mark(chat_result(call.hit.response))
        token = _inside.set(True)
        try:
            started = time.perf_counter()
            result = original(self, messages, stop=stop, **extra, **kwargs)
        finally:
            _inside.reset(token)
        session.keep_model(call, result.generations, result.llm_output, _since(started))
        return result

    _generate.__tracegrade_replay__ = True  # type: ignore[attr-defined]
    return _generate


def _wrap_agenerate(original: Any) -> Any:
    takes = _takes_run_manager(original)

    @functools.wraps(original)
    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        session = _session.get()
        extra = _through(original, takes, run_manager)
        if session is None or _inside.get():
            return await original(self, messages, stop=stop, **extra, **kwargs)
        call = session.model_call(self, messages, stop, kwargs)
        if call.hit is not None:
            return _mark(chat_result(call.hit.response))
        token = _inside.set(True)
        try:
            started = time.perf_counter()
            result = await original(self, messages, stop=stop, **extra, **kwargs)
        finally:
            _inside.reset(token)
        session.keep_model(call, result.generations, result.llm_output, _since(started))
        return result

    _agenerate.__tracegrade_replay__ = True  # type: ignore[attr-defined]
    return _agenerate


def _merged(chunks: list) -> list:
    from langchain_core.outputs.chat_generation import merge_chat_generation_chunks

    merged = merge_chat_generation_chunks(chunks)
    return [merged] if merged is not None else []


def _replayed_chunks(call: _Call) -> list:
    chunks = replay_chunks(call.hit.response if call.hit is not None else {})
    for chunk in chunks:
        chunk.message.response_metadata[REPLAYED] = True
    return chunks


def _wrap_stream(original: Any) -> Any:
    takes = _takes_run_manager(original)

    @functools.wraps(original)
    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        session = _session.get()
        extra = _through(original, takes, run_manager)
        if session is None or _inside.get():
            yield from original(self, messages, stop=stop, **extra, **kwargs)
            return
        call = session.model_call(self, messages, stop, kwargs)
        if call.hit is not None:
            yield from _replayed_chunks(call)
            return
        # No `_inside` across a yield: the consumer's code runs between chunks.
        chunks = []
        started = time.perf_counter()
        for chunk in original(self, messages, stop=stop, **extra, **kwargs):
            chunks.append(chunk)
            yield chunk
        session.keep_model(call, _merged(chunks), None, _since(started))

    _stream.__tracegrade_replay__ = True  # type: ignore[attr-defined]
    return _stream


def _wrap_astream(original: Any) -> Any:
    takes = _takes_run_manager(original)

    @functools.wraps(original)
    async def _astream(self, messages, stop=None, run_manager=None, **kwargs):
        session = _session.get()
        extra = _through(original, takes, run_manager)
        if session is None or _inside.get():
            async for chunk in original(self, messages, stop=stop, **extra, **kwargs):
                yield chunk
            return
        call = session.model_call(self, messages, stop, kwargs)
        if call.hit is not None:
            for chunk in _replayed_chunks(call):
                yield chunk
            return
        chunks = []
        started = time.perf_counter()
        async for chunk in original(self, messages, stop=stop, **extra, **kwargs):
            chunks.append(chunk)
            yield chunk
        session.keep_model(call, _merged(chunks), None, _since(started))

    _astream.__tracegrade_replay__ = True  # type: ignore[attr-defined]
    return _astream


def _since(started: float) -> float:
    return time.perf_counter() - started


_WRAPPERS = {
    "_generate": _wrap_generate,
    "_agenerate": _wrap_agenerate,
    "_stream": _wrap_stream,
    "_astream": _wrap_astream,
}
