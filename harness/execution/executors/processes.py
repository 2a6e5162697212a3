"""The process machinery every pool of worker processes shares: the run's question workers
(`workers`, `--workers N`) and `receive --workers N`'s grading workers
(`tracegrade.traces.grading_workers`). A child is started from a clean fork server over a
pipe, serves on a fresh event loop, says why when it fails, and ends at once when its parent's
end of the pipe closes; the parent reads how a child ended and reaps what is left."""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.context import ForkServerContext, SpawnContext
    from multiprocessing.process import BaseProcess

    Pipe = Connection[Any, Any]  # what crosses it is each pool's own protocol

__all__ = [
    "ParentGone",
    "child_main",
    "how_it_ended",
    "process_context",
    "reap",
    "start_child",
    "watch_parent",
]

log = logging.getLogger(__name__)

# What every worker imports before its first question: loaded once in the fork server, so a
# worker forked from it starts in milliseconds instead of re-importing them (~1 s of CPU each).
_PRELOAD = [
    "tracegrade.execution.executors.workers",
    "tracegrade.execution.run.services",
    "tracegrade.capture.recorder",
]


class ParentGone(Exception):
    """The parent's end of the pipe closed: nobody will take what this child makes."""


# -- the child ------------------------------------------------------------------------------
def child_main(
    conn: Pipe,
    setup: Callable[[], Callable[[], Coroutine[object, object, None]]],
    *,
    name: str,
    label: str,
    ignore: Iterable[signal.Signals] = (signal.SIGINT,),
) -> NoReturn:
    """The body of a child process: `setup()` builds what it serves (importing, building the
    agent or the monitor: the pipe is watched meanwhile) and returns the coroutine factory run
    on a fresh loop. Signals in `ignore` are the parent's to act on (Ctrl-C reaches the whole
    process group: the parent decides, and ends its children by closing their pipes). A child
    that fails sends ("failed", why) first; it never runs interpreter shutdown (a sync tool
    stuck in a thread would hold it for ever)."""
    starting = watch_parent(conn)
    for signum in ignore:
        signal.signal(signum, signal.SIG_IGN)
    code = 0
    try:
        from .loops import run_without_loop

        serve = setup()
        starting.set()  # serving reads the pipe: a closed one ends it from here on
        run_without_loop(name, serve)
    except ParentGone:
        code = 3
    except BaseException as exc:  # isolation point: say why, the parent counts what we held
        log.debug("%s failed", label, exc_info=True)
        with contextlib.suppress(Exception):
            conn.send(("failed", f"{type(exc).__name__}: {exc}"))
        code = 1
    finally:
        with contextlib.suppress(Exception):
            conn.close()
    os._exit(code)


def watch_parent(conn: Pipe) -> threading.Event:
    """While the child starts up (importing and building the agent can take seconds), a
    closed pipe goes unseen: nothing reads it yet, so a kill -9 of the run left its workers
    running that long. A thread watches the pipe for hang-up (poll, reading nothing) until
    the returned event is set, and ends the child at once when the parent's end closes."""
    started = threading.Event()
    if not hasattr(select, "poll"):
        return started
    poller = select.poll()
    hangup = select.POLLHUP | select.POLLERR | getattr(select, "POLLRDHUP", 0)
    poller.register(conn.fileno(), hangup)

    def watch() -> None:
        while not started.is_set():
            for _fd, event in poller.poll(200):
                if event & hangup and not started.is_set():
                    os._exit(3)

    threading.Thread(target=watch, name="tracegrade-parent-watch", daemon=True).start()
    return started


# -- the parent -----------------------------------------------------------------------------
def process_context(preload: list[str] | None = None) -> ForkServerContext | SpawnContext:
    """`forkserver` where the platform has it: a clean server process (no threads, no open
    run files: never a fork of the run's own process) that loads `preload` (the run's workers'
    modules, `_PRELOAD`, unless a pool says what its children import) once and forks each
    child from it; `spawn` elsewhere."""
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(_PRELOAD if preload is None else preload)
    return ctx


_Spec = TypeVar("_Spec")


def start_child(
    ctx: ForkServerContext | SpawnContext,
    main: Callable[[_Spec, Pipe], None],
    spec: _Spec,
    name: str,
) -> tuple[BaseProcess, Pipe]:
    """(process, the parent's end of its pipe): `main(spec, conn)` started in a child."""
    parent_end, child_end = ctx.Pipe()
    process = ctx.Process(target=main, args=(spec, child_end), name=name, daemon=True)
    process.start()
    child_end.close()
    return process, parent_end


def how_it_ended(process: BaseProcess) -> str:
    code = process.exitcode
    if code is None:
        return "did not end"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def reap(processes: Iterable[BaseProcess], wait_s: float) -> None:
    """Wait up to `wait_s` in all for `processes` to end (their pipes closed), then kill what
    is left."""
    deadline = time.monotonic() + wait_s
    for process in processes:
        process.join(timeout=max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join(timeout=5)
