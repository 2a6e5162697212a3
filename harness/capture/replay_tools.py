"""`record_tools`: tools that reach the outside world (an HTTP API, a search engine), recorded
and replayed by name in the question's cassette like the model calls
(`tracegrade.capture.replay`). Every other tool runs for real, so the tools acting on the
question's environment still change it and state graders still see real state.

Intercepted below LangChain's tool callbacks (the tool class's `_run`/`_arun`), so the
recorder sees a replayed tool call as it sees a live one. A recorded tool's output must be
text or JSON (a `content_and_artifact` pair included); the agent gets the output as the
cassette holds it (redacted by value), while recording as while replaying, so both runs see
the same text.
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
from typing import Any

from ..errors import CaptureError
from .cassette import tool_request
from .replay import active_session

__all__ = ["install_tools"]

_lock = threading.Lock()
_installed = False
_wrapped: set[type] = set()
_PLUMBING = ("run_manager", "config", "callbacks")


def install_tools() -> None:
    """Shim `BaseTool.run`/`arun` (once per process): a recorded tool's class gets wrapped
    on its first call under a session."""
    global _installed
    if _installed:
        return
    from langchain_core.tools import BaseTool

    with _lock:
        if _installed:
            return
        for name in ("run", "arun"):
            setattr(BaseTool, name, _entry(getattr(BaseTool, name)))
        _installed = True


def _entry(original: Any) -> Any:
    if inspect.iscoroutinefunction(original):

        @functools.wraps(original)
        async def arun(self, *args, **kwargs):
            _ensure(self)
            return await original(self, *args, **kwargs)

        return arun

    @functools.wraps(original)
    def run(self, *args, **kwargs):
        _ensure(self)
        return original(self, *args, **kwargs)

    return run


def _ensure(tool: Any) -> None:
    session = active_session()
    if session is None or tool.name not in session.record_tools or type(tool) in _wrapped:
        return
    from langchain_core.tools import BaseTool

    cls = type(tool)
    with _lock:
        if cls in _wrapped:
            return
        for name, wrap in (("_run", _wrap_run), ("_arun", _wrap_arun)):
            original = getattr(cls, name)
            if getattr(original, "__tracegrade_replay__", False):
                continue
            if name == "_arun" and original is BaseTool._arun:
                continue  # LangChain picks `_run` by this identity; it runs the wrapped `_run`
            setattr(cls, name, wrap(original))
        _wrapped.add(cls)


def _input(args: tuple, kwargs: dict) -> dict[str, Any]:
    return {"args": list(args), **{k: v for k, v in kwargs.items() if k not in _PLUMBING}}


def _stored(tool: Any, output: Any) -> Any:
    if isinstance(output, tuple) and getattr(tool, "response_format", "") == "content_and_artifact":
        return {"content_and_artifact": list(output)}
    if not _jsonable(output):
        raise CaptureError(
            f"tool {tool.name!r} returned a {type(output).__name__}: record_tools records text "
            "and JSON outputs only; leave it out of record_tools"
        )
    return output


def _returned(tool: Any, stored: Any) -> Any:
    if isinstance(stored, dict) and set(stored) == {"content_and_artifact"}:
        return tuple(stored["content_and_artifact"])
    return stored


def _jsonable(value: Any) -> bool:
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list):
        return all(_jsonable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _jsonable(v) for k, v in value.items())
    return False


def _begin(tool: Any, args: tuple, kwargs: dict) -> tuple[Any, Any]:
    """(session, call) when this call is recorded or replayed; (None, None) to run it live."""
    session = active_session()
    if session is None or tool.name not in session.record_tools:
        return None, None
    from ..canonical import content_hash

    request = tool_request(tool.name, _input(args, kwargs))
    return session, session.begin(content_hash(request), request, tool=tool.name)


def _keep(session: Any, call: Any, tool: Any, output: Any, started: float) -> Any:
    answer = {"output": session.policy.value(_stored(tool, output), by_name=False)}
    session.keep(call, answer, time.perf_counter() - started, tool=tool.name)
    return _returned(tool, answer["output"])


def _wrap_run(original: Any) -> Any:
    @functools.wraps(original)
    def _run(self, *args, **kwargs):
        session, call = _begin(self, args, kwargs)
        if call is None:
            return original(self, *args, **kwargs)
        if call.hit is not None:
            return _returned(self, call.hit.response["output"])
        started = time.perf_counter()
        return _keep(session, call, self, original(self, *args, **kwargs), started)

    _run.__tracegrade_replay__ = True  # type: ignore[attr-defined]
    return _run


def _wrap_arun(original: Any) -> Any:
    @functools.wraps(original)
    async def _arun(self, *args, **kwargs):
        session, call = _begin(self, args, kwargs)
        if call is None:
            return await original(self, *args, **kwargs)
        if call.hit is not None:
            return _returned(self, call.hit.response["output"])
        started = time.perf_counter()
        return _keep(session, call, self, await original(self, *args, **kwargs), started)

    _arun.__tracegrade_replay__ = True  # type: ignore[attr-defined]
    return _arun
