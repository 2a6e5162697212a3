"""Running a run's coroutine for callers without an event loop (the CLI, `start_run`), on a
fresh loop that neither ends nor hangs because of what user code left behind."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import TypeVar

from ...usercode.abandon import Abandoned

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
        while True:
            try:
                return loop.run_until_complete(main)
            except SystemExit:
                if main.done():
                    raise
                log.debug("a task of user code raised SystemExit; its question errors")
            except Abandoned:  # an interruption meant for a question, delivered between steps
                if main.done():
                    raise
                log.debug("an interruption of a question that held the loop reached the loop")
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
