"""The per-question timeout for code that holds the event loop (`QuestionDeadline`, `LoopWatch`):
a question spinning in the loop, in a task of its own as LangGraph runs nodes, is interrupted;
the others are not charged for the time it held the loop; the interruption is never reported
as an error of the code it happened to land in, nor lost there."""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
import weakref

import pytest

from tracegrade.execution.executors.watchdog import Overran, QuestionDeadline

BOUND_S = 20.0
"""How long the held loops below run at most: a question not interrupted ends by itself (the
test fails instead of hanging)."""


async def _spin() -> str:
    end = time.monotonic() + BOUND_S
    while time.monotonic() < end:
        pass
    return "never interrupted"


class _Item:
    pass


def _gone(ref: object) -> None:
    """A weakref callback with some work in it (as `WeakSet`'s removal does)."""
    sum(range(5000))


CHURN_S = 3.0
"""How long `_churn` frees objects in bulk: past the first interruption (timeout + `GRACE_S`)
and short of `STUCK_S` after it."""


async def _churn() -> str:
    """Holds the loop making objects and freeing them in bulk, so that nearly all its Python
    code runs in weakref callbacks, where an exception raised cannot propagate (the objects
    and their weakrefs are made in C: no Python instruction of its own in between); then
    spins in plain Python. The first interruption lands in a callback and is dropped there;
    only one raised again reaches the spin (each retry may be dropped too while the churn
    lasts, so the churn is bounded: otherwise whether a retry lands is chance)."""
    start = time.monotonic()
    while time.monotonic() < start + CHURN_S:
        items = list(map(_Item.__new__, itertools.repeat(_Item, 20_000)))
        refs = list(map(weakref.ref, items, itertools.repeat(_gone)))
        del items  # 20,000 callbacks
        del refs
    while time.monotonic() < start + BOUND_S:
        pass
    return "never interrupted"


async def _question(work, timeout_s: float, label: str) -> tuple[QuestionDeadline, str]:
    deadline = QuestionDeadline(timeout_s, label=label)
    try:
        async with deadline:
            # a task of its own, made inside the question, as LangGraph runs a node
            result = await asyncio.get_running_loop().create_task(work())
    except Overran:
        result = "interrupted"
    except TimeoutError:
        result = "timed out"
    return deadline, result


def test_a_question_spinning_in_a_task_of_its_own_is_interrupted_and_the_other_is_not_charged():
    async def main():
        return await asyncio.gather(
            _question(_spin, 0.3, "'spin'"),
            _question(lambda: asyncio.sleep(0.5, "fine"), 0.8, "'fine'"),
        )

    (spun, spin_result), (fine, fine_result) = asyncio.run(main())
    assert spin_result == "interrupted" and spun.overran is not None
    # it waited ~1.3 s on the spinning question: not its own time, so it did not time out
    assert fine_result == "fine" and not fine.expired()
    assert fine.blocked_by.get("'spin'", 0) > 0.8


def test_an_interruption_that_lands_in_a_weakref_callback_is_raised_again_not_reported(
    monkeypatch,
):
    """Raised inside a weakref callback (`WeakSet`'s, as the tasks a question made are freed),
    `Overran` was reported as an unraisable exception
    (an error under `-W error`) and lost: the question held the loop until its end, and a run
    was declared stuck."""
    reported: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append(repr(u.exc_type)))

    async def main():
        return await _question(_churn, 0.2, "'churn'")

    deadline, result = asyncio.run(main())
    assert result == "interrupted" and deadline.overran is not None
    assert reported == []


def test_every_question_holding_the_loop_is_interrupted_not_only_the_first():
    """The watch noted interrupted questions by `id()`, which a later question's deadline can
    reuse once the first is freed: that question would not have been interrupted."""

    async def main():
        return [(await _question(_spin, 0.2, f"'q{i}'"))[1] for i in range(3)]

    assert asyncio.run(main()) == ["interrupted"] * 3


@pytest.mark.parametrize("factory", [False, True], ids=["asyncio loop", "with a task factory"])
def test_the_holder_is_found_with_or_without_a_task_factory_of_the_users(factory):
    """A loop with a task factory of its own keeps it (and the question is still found)."""
    made: list[object] = []

    async def main():
        loop = asyncio.get_running_loop()
        if factory:

            def user_factory(loop, coro, context=None):
                task = asyncio.Task(coro, loop=loop, context=context)
                made.append(task)
                return task

            loop.set_task_factory(user_factory)
        return await _question(_spin, 0.2, "'spin'")

    deadline, result = asyncio.run(main())
    assert result == "interrupted" and deadline.overran is not None
    assert bool(made) == factory


def test_on_a_loop_without_asyncios_python_iteration_a_task_factory_finds_the_holder():
    """uvloop runs its iteration in C (no frame to read the running callback from): there the
    watch notes the tasks made inside each question with a task factory instead."""

    class OwnIterationLoop(asyncio.SelectorEventLoop):
        def _run_once(self) -> None:
            super()._run_once()  # type: ignore[misc]

    async def main():
        factory = asyncio.get_running_loop().get_task_factory
        result = await _question(_spin, 0.2, "'spin'")
        return result, factory()

    with asyncio.Runner(loop_factory=OwnIterationLoop) as runner:
        (deadline, result), factory = runner.run(main())
    assert result == "interrupted" and deadline.overran is not None
    assert factory is not None  # the watch's
