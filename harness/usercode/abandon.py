"""Running user code where it can be abandoned: a grader's sync function, a tool's blocking
call. Code that never returns (a sleep forever, a busy loop, native code stuck) cannot be
cancelled like a coroutine; run in a daemon thread, it can be left behind when its deadline
passes, and the process still ends (a daemon thread does not hold interpreter exit).

`in_daemon_thread(fn)` awaits `fn()` run in a fresh daemon thread; cancelling the await
abandons the thread and asks it to stop (`interrupt_thread`: an exception raised inside it at
its next Python instruction, which ends a busy loop; a blocking call in C finishes first).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import ctypes
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Abandoned", "in_daemon_thread", "interrupt_thread"]

T = TypeVar("T")


class Abandoned(BaseException):
    """Raised inside code that was abandoned (its deadline passed): a BaseException, so the
    user code's own `except Exception` does not swallow it."""


def interrupt_thread(thread_id: int | None, exc_type: type[BaseException] = Abandoned) -> bool:
    """Raise `exc_type` in the thread `thread_id` at its next Python instruction; True when the
    thread was found."""
    if thread_id is None:
        return False
    found = ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exc_type)
    )
    return int(found) == 1


async def in_daemon_thread(fn: Callable[[], T], *, name: str = "tracegrade-user-code") -> T:
    """`fn()` in a daemon thread, awaited; cancelled, the thread is abandoned (and interrupted)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def work() -> None:
        try:
            value, error = context.run(fn), None
        except Abandoned:
            return
        except BaseException as exc:  # handed to the awaiting coroutine, raised there
            # SystemExit and the like from user code are its error, never the process's end.
            value = None
            error = exc if isinstance(exc, Exception) else RuntimeError(f"{exc!r}")
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits for it any more
            loop.call_soon_threadsafe(settle, value, error)

    thread = threading.Thread(target=work, name=name, daemon=True)
    thread.start()
    try:
        return await future
    except asyncio.CancelledError:
        if thread.is_alive():
            interrupt_thread(thread.ident)
        raise
