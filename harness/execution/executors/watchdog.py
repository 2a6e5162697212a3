"""The per-question timeout that holds for code that never yields, and that charges each question
only for its own time.

`asyncio.timeout` cancels a task at its next `await`; an agent node that spins on the CPU (or
calls a blocking function) inside the event loop never reaches one, so the run would never end,
and every other question waiting on the blocked loop would time out for time that was not its
own. Here:

- `LoopWatch` (one per event loop) beats on the loop every `BEAT_S`; a thread beside it notices
  when the beats stop (the loop is held) and which question's code holds it (from the context
  of the callback the loop runs: nothing is done per task made). A held stretch is
  credited to every other question running then: their deadlines move on by that much.
- A question holding the loop past its own timeout (plus `GRACE_S`) is interrupted: `Overran`
  is raised inside it at its next Python instruction (`tracegrade.usercode.abandon.interrupt_thread`),
  which ends a busy loop; the question errors with the reason. Raised where it cannot
  propagate (a weakref callback, while the question's code frees objects), it is dropped, not
  reported, and raised again; caught, it is raised again every `AGAIN_S`. Code that swallows
  it for good, or is stuck in native code, cannot be stopped in-process: after `STUCK_S` the
  watch calls `on_stuck` (the CLI ends the run there with exit 3, naming the question; with `--workers`
  the parent kills the worker process instead).
- `QuestionDeadline` is the timeout itself: an async context manager like `asyncio.timeout`,
  raising `TimeoutError` when the question's own time (wall time less the credit) runs out.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import sys
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar

from ...usercode.abandon import Abandoned, interrupt_thread

__all__ = ["LoopWatch", "Overran", "QuestionDeadline", "set_stuck_handler"]

log = logging.getLogger(__name__)

BEAT_S = 0.1
"""How often the loop beats."""
STALL_S = 0.3
"""A gap between beats longer than this (beyond `BEAT_S`) is the loop held by one task."""
GRACE_S = 1.0
"""How long past its timeout a question holding the loop runs before it is interrupted."""
STUCK_S = 5.0
"""How long after the interruption the loop may stay held before `on_stuck` is called."""
AGAIN_S = 1.0
"""How often the interruption is raised again while the loop stays held."""
LOST_POLL_S = 0.005
"""How often the watch looks, once it interrupted the holder (see `_watch`)."""


_Task = asyncio.Task  # one global lookup per task made (the factory runs for every task)
_RUN_ONCE = getattr(asyncio.BaseEventLoop, "_run_once", None)
"""asyncio's loop iteration, whose frame holds the handle it runs (see `LoopWatch.holder`)."""
_RUN_ONCE_CODE = getattr(_RUN_ONCE, "__code__", None)


class Overran(Abandoned):
    """Raised inside a question that held the event loop past its timeout."""


_QUESTION: contextvars.ContextVar[QuestionDeadline | None] = contextvars.ContextVar(
    "tracegrade_question", default=None
)

_stuck_handler: list[Callable[[str], None] | None] = [None]

_lost: set[int] = set()
"""Loop threads where an `Overran` was raised and dropped (see `_drop_lost_interruptions`)."""


def _drop_lost_interruptions() -> None:
    """Wrap `sys.unraisablehook` so that an `Overran` raised where Python cannot propagate it
    is dropped, not reported, and raised again by the watch. The interruption lands at the
    loop thread's next Python instruction; when the question's code is freeing objects (a
    list of tasks or items dropped at once), that is often a weakref callback (`WeakSet`'s
    `_remove`) or a `__del__`, where the exception is reported as unraisable (an error under
    `-W error`, pytest's default here) and lost, and the busy loop went on until the run was
    declared stuck. It is the watch's own exception, not an error of the code it landed in."""
    current = sys.unraisablehook
    if getattr(current, "tracegrade_drops_overran", False):
        return

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, Overran) or (
            unraisable.exc_type is not None and issubclass(unraisable.exc_type, Overran)
        ):
            _lost.add(threading.get_ident())
            return
        current(unraisable)

    hook.tracegrade_drops_overran = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook


def set_stuck_handler(handler: Callable[[str], None] | None) -> None:
    """What to do when a question holds the loop even after it was interrupted (`handler(why)`
    from the watch thread); None: log it (a library caller's process is not ours to end)."""
    _stuck_handler[0] = handler


@dataclass(eq=False)
class _Stall:
    start: float
    end: float | None
    blocker: QuestionDeadline | None
    """The question whose code held the loop (None: no question's)."""


class QuestionDeadline:
    """`async with QuestionDeadline(timeout_s, label=...)`: `TimeoutError` when the question's
    own time runs out; `expired()` and `overran` tell why it ended. A plain class with slots:
    one is made per question."""

    __slots__ = (
        "_cancelling",
        "_expired",
        "_handle",
        "_token",
        "_watch",
        "blocked_by",
        "interrupted_at",
        "label",
        "last_interrupt",
        "overran",
        "reported",
        "started",
        "task",
        "tasks",
        "timeout_s",
    )

    def __init__(self, timeout_s: float, label: str = "") -> None:
        self.timeout_s = timeout_s
        self.label = label
        self.started = 0.0
        self.task: asyncio.Task[object] | None = None
        self.overran: float | None = None
        """Seconds the question held the loop when it was interrupted (None: never)."""
        self.blocked_by: dict[str, float] = {}
        """Question label -> seconds this question waited on the loop that question held."""
        self.tasks: list[asyncio.Future[object]] | None = None
        """The tasks made inside the question while it runs (the loop watch's task factory adds
        them), so a stall is blamed on its question; None once it ended."""
        self.interrupted_at: float | None = None
        """When the watch first interrupted it (monotonic; None: never)."""
        self.last_interrupt = 0.0
        self.reported = False
        """`on_stuck` was called for it."""
        self._expired = False
        self._handle: asyncio.TimerHandle | None = None
        self._watch: LoopWatch | None = None
        self._cancelling = 0
        self._token: contextvars.Token[QuestionDeadline | None] | None = None

    def expired(self) -> bool:
        return self._expired

    def used(self, now: float) -> float:
        """Seconds of this question's own time so far."""
        assert self._watch is not None
        return now - self.started - self._watch.credit(self, now)

    async def __aenter__(self) -> QuestionDeadline:
        self.task = asyncio.current_task()
        assert self.task is not None
        self._cancelling = self.task.cancelling()
        self._watch = LoopWatch.of_running_loop()
        self.started = time.monotonic()
        self.tasks = None if self._watch.by_frame else []
        self._watch.enter(self)
        self._handle = asyncio.get_running_loop().call_later(self.timeout_s, self._fire)
        return self

    def _fire(self) -> None:
        left = self.timeout_s - self.used(time.monotonic())
        if left > 0:  # time went to other questions holding the loop: not ours
            self._handle = asyncio.get_running_loop().call_later(left, self._fire)
            return
        self._expired = True
        if self.task is not None:  # set on entry, before this timer
            self.task.cancel()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._handle is not None:
            self._handle.cancel()
        assert self._watch is not None
        self._watch.leave(self)
        if (
            self._expired
            and exc_type is asyncio.CancelledError
            and self.task is not None
            and self.task.uncancel() <= self._cancelling
        ):
            raise TimeoutError from exc


class LoopWatch:
    """Beats on one event loop and watches the beats from a thread; see the module doc."""

    _watches: ClassVar[weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopWatch]] = (
        weakref.WeakKeyDictionary()
    )

    _last: ClassVar[tuple[weakref.ref[asyncio.AbstractEventLoop], LoopWatch] | None] = None
    """The last loop asked for and its watch: `WeakKeyDictionary.get` makes a weakref per
    lookup, once per question."""

    @classmethod
    def of_running_loop(cls) -> LoopWatch:
        loop = asyncio.get_running_loop()
        last = cls._last
        if last is not None and last[0]() is loop:
            return last[1]
        watch = cls._watches.get(loop)
        if watch is None:
            watch = cls._watches[loop] = cls(loop)
        cls._last = (weakref.ref(loop), watch)
        return watch

    @classmethod
    def watching(cls, loop: asyncio.AbstractEventLoop) -> LoopWatch | None:
        """`loop`'s watch, None when no question has run on it yet."""
        return cls._watches.get(loop)

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        # LangGraph runs each node in a task of its own: a task made inside a question belongs
        # to it. On asyncio's own loops the holder is found when a stall is seen, from the
        # context of the callback the loop is running (`holder`): nothing per task. Elsewhere
        # (uvloop: no Python frame to read) a task factory adds each task made inside a question
        # to its `tasks`, from the creating context; it ran for every task (37 a question on the
        # support desk) and kept them alive until the question ended.
        self.by_frame = (
            _RUN_ONCE_CODE is not None and getattr(type(loop), "_run_once", None) is _RUN_ONCE
        )
        self._inner_factory = loop.get_task_factory()
        if not self.by_frame:
            loop.set_task_factory(self._task_factory)
        self.loop_thread = threading.get_ident()
        self.active: dict[object, QuestionDeadline] = {}
        self.stalls: list[_Stall] = []
        self.last_beat = time.monotonic()
        self._lock = threading.Lock()
        self._current: _Stall | None = None
        _drop_lost_interruptions()
        loop.call_later(BEAT_S, self._beat)
        threading.Thread(target=self._watch, name="tracegrade-loop-watch", daemon=True).start()

    # -- on the loop ------------------------------------------------------------------------
    # typeshed's task factory is generic in the coroutine's result: not worth spelling here
    def _task_factory(self, loop: Any, coro: Any, context: Any = None) -> Any:
        if self._inner_factory is not None:
            kwargs = {} if context is None else {"context": context}
            task = self._inner_factory(loop, coro, **kwargs)
        else:
            task = _Task(coro, loop=loop, context=context)
        owner = context.get(_QUESTION) if context is not None else _QUESTION.get()
        if owner is not None:
            tasks = owner.tasks
            if tasks is not None:
                tasks.append(task)
        return task

    def owner(self, task: object) -> QuestionDeadline | None:
        """The question `task` works for (its own task, or one made inside it while it ran)."""
        found = self.active.get(task)
        if found is None:
            found = next((d for d in self.active.values() if task in (d.tasks or ())), None)
        return found

    def holder(self) -> QuestionDeadline | None:
        """The running question whose code holds the loop now; from the watch thread, under
        the lock. The loop's `_run_once` frame holds the handle it runs, whose context is the
        task's (a question's, or one made inside it) or the callback's."""
        if self.by_frame:
            frame = sys._current_frames().get(self.loop_thread)
            while frame is not None and frame.f_code is not _RUN_ONCE_CODE:
                frame = frame.f_back
            if frame is not None:
                context = getattr(frame.f_locals.get("handle"), "_context", None)
                found = context.get(_QUESTION) if context is not None else None
                if found is not None and self.active.get(found.task) is found:
                    return found
        task = asyncio.current_task(self.loop)
        return self.owner(task) if task is not None else None

    def enter(self, deadline: QuestionDeadline) -> None:
        with self._lock:
            self.active[deadline.task] = deadline
        deadline._token = _QUESTION.set(deadline)

    def leave(self, deadline: QuestionDeadline) -> None:
        deadline.tasks = None
        if deadline._token is not None:
            with contextlib.suppress(ValueError):  # left in another context: nothing to undo
                _QUESTION.reset(deadline._token)
            deadline._token = None
        with self._lock:
            self.active.pop(deadline.task, None)
            if not self.stalls:  # the common case: nothing to forget (no O(active) scan)
                return
            if not self.active:
                self.stalls.clear()
            else:
                oldest = min(d.started for d in self.active.values())
                self.stalls = [s for s in self.stalls if s.end is None or s.end > oldest]

    def _beat(self) -> None:
        now = time.monotonic()
        with self._lock:
            stall = self._current
            if stall is not None:
                stall.end = now
                self._current = None
                waiters = self._credit_waiters(stall)
                if waiters and stall.blocker is not None:
                    log.warning(
                        "question %s held the event loop for %.1fs; %d other question(s) "
                        "waited meanwhile (not counted against their timeouts)",
                        stall.blocker.label,
                        now - stall.start,
                        waiters,
                    )
            self.last_beat = now
        if not self.loop.is_closed():
            self.loop.call_later(BEAT_S, self._beat)

    def _credit_waiters(self, stall: _Stall) -> int:
        """Note on each question that waited whose question held the loop; how many waited."""
        holder = stall.blocker
        label = holder.label if holder is not None else "code outside any question"
        assert stall.end is not None
        waiters = 0
        for deadline in self.active.values():
            if deadline is not stall.blocker:
                waited = stall.end - max(stall.start, deadline.started)
                if waited > 0:
                    waiters += 1
                    deadline.blocked_by[label] = deadline.blocked_by.get(label, 0.0) + waited
        return waiters

    def credit(self, deadline: QuestionDeadline, now: float) -> float:
        """Seconds `deadline`'s question spent waiting on the loop another task held."""
        with self._lock:
            total = 0.0
            for stall in self.stalls:
                if stall.blocker is deadline:
                    continue
                end = stall.end if stall.end is not None else now
                total += max(0.0, end - max(stall.start, deadline.started))
            # A stall the beat has not closed yet (this callback runs first after it).
            if self._current is None and now - self.last_beat > BEAT_S + STALL_S:
                total += max(0.0, now - max(self.last_beat + BEAT_S, deadline.started))
            return total

    # -- on the watch thread ----------------------------------------------------------------
    def _watch(self) -> None:
        while not self.loop.is_closed():
            stall = self._current
            interrupted = stall is not None and stall.blocker is not None
            # Once the holder is interrupted, look often: an interruption dropped where it
            # landed (`_drop_lost_interruptions`) is raised again while the code that dropped
            # it (a burst of weakref callbacks) may still be running, until it lands.
            time.sleep(
                LOST_POLL_S
                if interrupted and stall.blocker.interrupted_at is not None  # type: ignore[union-attr]
                else BEAT_S
            )
            now = time.monotonic()
            with self._lock:
                held = now - self.last_beat - BEAT_S
                if held <= STALL_S:
                    continue
                if self._current is None:
                    self._current = _Stall(self.last_beat + BEAT_S, None, self.holder())
                    self.stalls.append(self._current)
                deadline = self._current.blocker
            if deadline is not None:
                self._check(deadline, now, held)

    def _check(self, deadline: QuestionDeadline, now: float, held: float) -> None:
        if deadline.used(now) < deadline.timeout_s + GRACE_S:
            return
        if deadline.interrupted_at is None:
            deadline.interrupted_at = deadline.last_interrupt = now
            deadline.overran = held
            log.warning(
                "question %s held the event loop for %.1fs, past its %gs timeout: interrupting it",
                deadline.label,
                held,
                deadline.timeout_s,
            )
            self._interrupt(deadline)
            return
        if now - deadline.interrupted_at > STUCK_S and not deadline.reported:
            deadline.reported = True
            why = (
                f"question {deadline.label} has held the event loop for {held:.0f}s without "
                f"yielding (its timeout is {deadline.timeout_s:g}s) and did not stop when "
                "interrupted (native code, or code that catches BaseException): the run "
                "cannot go on"
            )
            handler = _stuck_handler[0]
            if handler is None:
                log.error("%s", why)
            else:
                handler(why)
        if self.loop_thread in _lost or now - deadline.last_interrupt >= AGAIN_S:
            # Still held: the interruption was dropped where it landed, or caught; again.
            deadline.last_interrupt = now
            self._interrupt(deadline)

    def _interrupt(self, deadline: QuestionDeadline) -> None:
        """`Overran` in the loop thread, while the question still holds it (the loop may have
        moved on since the stall was seen: then it would land in someone else's code)."""
        with self._lock:
            if self.holder() is not deadline:
                return
            _lost.discard(self.loop_thread)
            interrupt_thread(self.loop_thread, Overran)
