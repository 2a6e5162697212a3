"""Running a run's coroutine for callers without an event loop (the CLI, `start_run`), on a
fresh loop that neither ends nor hangs because of what user code left behind."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from types import FrameType
from typing import Any, TypeVar

from ...usercode.abandon import Abandoned
from .watchdog import LoopWatch

__all__ = ["run_without_loop"]

log = logging.getLogger(__name__)

T = TypeVar("T")


def run_without_loop(name: str, make: Callable[[], Coroutine[object, object, T]]) -> T:
    """Run `make()` on a fresh event loop (see `_run_loop`); refused inside a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_loop(make())
    raise RuntimeError(f"{name}() called inside a running event loop: await a{name}() instead")


def _quiet_delivered_interrupts(
    loop: asyncio.AbstractEventLoop, context: dict[str, object]
) -> None:
    """A Ctrl-C or SIGTERM that lands inside one of the run's tasks (a grader's, say) leaves
    `run_until_complete` as well, and the caller reports it once; the task keeps a copy that
    asyncio would log when it is collected, a traceback after the CLI's clean "interrupted"."""
    if isinstance(context.get("exception"), KeyboardInterrupt):
        return
    loop.default_exception_handler(context)


def _run_loop(coro: Coroutine[object, object, T]) -> T:
    """`asyncio.run`, minus two ways user code could end or hang the run:

    - a `SystemExit` raised by an agent inside a task of its own (LangChain runs each runnable
      in a task) escapes the event loop as well as reaching the awaiting question, which makes
      it that question's error; the loop goes on while the run's own task is not done;
    - a sync tool stuck past its question's timeout holds a default-executor thread, and
      `asyncio.run` joins that executor for ever: here it is shut down without waiting (the
      CLI then exits without joining stray threads).
    """
    loop = asyncio.new_event_loop()
    loop.set_exception_handler(_quiet_delivered_interrupts)
    try:
        main = loop.create_task(coro)
        with _stop_signals_cancel(loop, main) as caught:
            while True:
                try:
                    result = loop.run_until_complete(main)
                except SystemExit:
                    if main.done():
                        raise
                    log.debug("a task of user code raised SystemExit; its question errors")
                    continue
                except Abandoned:  # an interruption meant for a question, between steps
                    if main.done():
                        raise
                    log.debug("an interruption of a question that held the loop reached the loop")
                    continue
                except asyncio.CancelledError:
                    _raise_caught(caught)
                    raise
                _raise_caught(caught)  # the run ended as the signal came: still interrupted
                return result
    finally:
        try:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            executor = getattr(loop, "_default_executor", None)
            if executor is not None:
                executor.shutdown(wait=False, cancel_futures=True)
            loop.close()


HELD_S = 1.0
"""A stop signal that comes while the loop has not beaten for this long is raised where it
lands: the code holding the loop (a question's busy loop) is what it must stop."""

_Handler = Callable[[int, FrameType | None], Any]


def interrupts(handler: object) -> bool:
    """Whether a signal handler ends the process's work by raising (Ctrl-C's, the CLI's
    SIGTERM/SIGHUP handler, marked `tracegrade_interrupts`): only those are deferred."""
    return handler is signal.default_int_handler or bool(
        getattr(handler, "tracegrade_interrupts", False)
    )


@contextlib.contextmanager
def _stop_signals_cancel(
    loop: asyncio.AbstractEventLoop, main: asyncio.Task[Any]
) -> Iterator[list[tuple[int, _Handler]]]:
    """While the loop runs, a stop signal (SIGINT, SIGTERM, SIGHUP whose handler raises)
    cancels the run's task instead of raising wherever it lands, as `asyncio.run` does for
    Ctrl-C; `_run_loop` raises it once the run has unwound (`_raise_caught`). Raised inside the
    loop's own code (a `call_soon` making the handle that wakes a task whose future is done),
    it lost that wakeup: the task never ran again, cancelled or not, and the cleanup's wait for
    it hung the process for ever after a CI runner's cancel. A second signal, or one while the
    loop is held (`HELD_S`), is raised where it lands, as before."""
    caught: list[tuple[int, _Handler]] = []
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return
    previous: dict[int, _Handler] = {}

    def handler(signum: int, frame: FrameType | None) -> None:
        raise_now = previous[signum]
        if caught or main.done() or _held(loop):
            raise_now(signum, frame)
            return
        caught.append((signum, raise_now))
        loop.call_soon_threadsafe(main.cancel)

    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is not None and interrupts(current := signal.getsignal(signum)):
            previous[signum] = current  # type: ignore[assignment]
            signal.signal(signum, handler)
    try:
        yield caught
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def _held(loop: asyncio.AbstractEventLoop) -> bool:
    watch = LoopWatch.watching(loop)
    return watch is not None and time.monotonic() - watch.last_beat > HELD_S


def _raise_caught(caught: list[tuple[int, _Handler]]) -> None:
    """The stop signal the run was cancelled for, raised now, by its own handler."""
    if caught:
        signum, raise_now = caught[0]
        raise_now(signum, None)
