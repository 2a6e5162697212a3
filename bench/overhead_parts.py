"""tracegrade's own CPU per question split by part, for `bench/run.py --parts overhead`.

One serial pass of the runner's per-question path with each part's entry points wrapped in a
timer on the main thread's CPU clock (`time.thread_time`); a call inside another timed call is
not counted twice. The parts:

- capture: the recorder (every LangChain callback it receives, the question span, `seal`);
- checkpointer: LangGraph's in-memory saver (`with_checkpointer` and every saver call);
- accounting: pricing the question's model calls and tool seconds (`account`, `with_judges`);
- grading: the graders on the answer (`agrade_conversation`) and scoring;
- commit: the question's SQLite commit (`ResultStore.commit_question`, redaction included);
- workdir: the question's work folder taken (a finished one renamed, or made) and released
  (the removals at the run's end on the work folder thread: not part of the main thread's
  total, added to it apart);
- deadline: the per-question timeout (`QuestionDeadline`) and the loop watch's task factory
  (its own work: the asyncio.Task it makes is taken back, as asyncio makes it without it).

The wrappers cost CPU of their own, so this pass is not the one the total is measured on; what
the parts leave of that total is LangChain's callback dispatch to the recorder and the runner's
own glue (messages, rows).
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

PARTS = ("capture", "checkpointer", "accounting", "grading", "commit", "workdir", "deadline")

_inside = threading.local()


class Timers:
    """CPU seconds per part, added up by the wrappers `wrap` and `awrap` make."""

    def __init__(self) -> None:
        self.spent = dict.fromkeys(PARTS, 0.0)
        self.calls = dict.fromkeys(PARTS, 0)
        self.taken_back = dict.fromkeys(PARTS, 0)

    def _add(self, part: str, started: float) -> None:
        self.spent[part] += time.thread_time() - started
        self.calls[part] += 1

    def corrected(self) -> dict[str, float]:
        """CPU seconds per part less what the timer itself adds inside each timed call
        (calibrated on a timed call that does nothing)."""
        probe = Timers()
        noop = probe.wrap("capture", lambda: None)
        for _ in range(20_000):
            noop()
        per_call = probe.spent["capture"] / probe.calls["capture"]
        return {
            part: max(0.0, spent - per_call * (self.calls[part] + self.taken_back[part]))
            for part, spent in self.spent.items()
        }

    def exclude(self, part: str, fn: Callable) -> Callable:
        """`fn`'s CPU taken back from `part` when it runs inside a timed call of `part`: work
        the agent does with or without tracegrade (the asyncio.Task the loop watch's task
        factory makes for LangGraph is made by asyncio's own path without it)."""

        @functools.wraps(fn)
        def untimed(*args: Any, **kwargs: Any) -> Any:
            if getattr(_inside, "part", None) != part:
                return fn(*args, **kwargs)
            started = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.spent[part] -= time.thread_time() - started
                self.taken_back[part] += 1

        return untimed

    def wrap(self, part: str, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if getattr(_inside, "on", False):
                return fn(*args, **kwargs)
            _inside.on, _inside.part = True, part
            started = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self._add(part, started)
                _inside.on, _inside.part = False, None

        return timed

    def awrap(self, part: str, fn: Callable) -> Callable:
        """A coroutine function timed from its start to its end (serial: nothing else runs on
        the loop meanwhile but its own work)."""

        @functools.wraps(fn)
        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            _inside.on, _inside.part = True, part
            try:
                return await fn(*args, **kwargs)
            finally:
                _inside.on, _inside.part = False, None
                self._add(part, started)

        return timed


def _patch(stack: ExitStack, owner: Any, name: str, value: Any) -> None:
    old = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
    setattr(owner, name, value)
    stack.callback(setattr, owner, name, old)


def instrumented(stack: ExitStack, timers: Timers) -> type:
    """Wrap each part's entry points until `stack` closes; returns the recorder class to run
    with (a subclass whose callbacks are timed)."""
    from langgraph.checkpoint.memory import InMemorySaver

    from tracegrade.capture.recorder import Recorder
    from tracegrade.execution.executors import watchdog
    from tracegrade.execution.executors.watchdog import LoopWatch, QuestionDeadline
    from tracegrade.execution.question import runner, workfolders
    from tracegrade.rundir.directory import RunDirectory
    from tracegrade.rundir.store import ResultStore

    timed_recorder = type("TimedRecorder", (Recorder,), {})
    for name in dir(Recorder):
        if name.startswith("on_") or name in ("seal", "set_answer", "mark_turn"):
            setattr(timed_recorder, name, timers.wrap("capture", getattr(Recorder, name)))
    for name in ("_open_question", "_close_question"):
        setattr(timed_recorder, name, timers.wrap("capture", getattr(Recorder, name)))
    for name in ("put", "put_writes", "get_tuple", "aput", "aput_writes", "aget_tuple"):
        method = getattr(InMemorySaver, name)
        wrapped = (
            timers.awrap("checkpointer", method)
            if asyncio.iscoroutinefunction(method)
            else timers.wrap("checkpointer", method)
        )
        _patch(stack, InMemorySaver, name, wrapped)
    _patch(
        stack, runner, "with_checkpointer", timers.wrap("checkpointer", runner.with_checkpointer)
    )
    _patch(stack, runner, "account", timers.wrap("accounting", runner.account))
    _patch(stack, runner, "with_judges", timers.wrap("accounting", runner.with_judges))
    _patch(
        stack,
        runner,
        "agrade_conversation",
        timers.awrap("grading", runner.agrade_conversation),
    )
    _patch(stack, runner, "score_question", timers.wrap("grading", runner.score_question))
    _patch(
        stack, ResultStore, "commit_question", timers.wrap("commit", ResultStore.commit_question)
    )
    _patch(stack, workfolders, "take", timers.wrap("workdir", workfolders.take))
    _patch(stack, workfolders, "release", timers.wrap("workdir", workfolders.release))
    _patch(
        stack,
        RunDirectory,
        "remove_empty_workdir",
        staticmethod(timers.wrap("workdir", RunDirectory.remove_empty_workdir)),
    )
    _patch(
        stack, QuestionDeadline, "__aenter__", timers.awrap("deadline", QuestionDeadline.__aenter__)
    )
    _patch(
        stack, QuestionDeadline, "__aexit__", timers.awrap("deadline", QuestionDeadline.__aexit__)
    )
    _patch(stack, LoopWatch, "_task_factory", timers.wrap("deadline", LoopWatch._task_factory))
    _patch(stack, watchdog, "_Task", timers.exclude("deadline", watchdog._Task))
    return timed_recorder
