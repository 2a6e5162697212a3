"""A run keeps the heap it was set up with out of the garbage collector's full collections while
its questions run, and collects its youngest generation less often, and leaves the collector as
it found it: unfrozen and its thresholds back after the run, a caller's own freeze or higher
threshold left in place, a disabled collector left alone."""

from __future__ import annotations

import asyncio
import gc

import pytest

from tests.runs_support import write_project
from tracegrade import Selection, load_config
from tracegrade.execution.executors.dispatch import executor_for
from tracegrade.execution.executors.heap import YOUNG_THRESHOLD, frozen_heap
from tracegrade.execution.executors.protocol import ExecutionPlan
from tracegrade.execution.run.prepare import prepare_run
from tracegrade.execution.run.prepared import ExecutorSettings


@pytest.fixture(autouse=True)
def _collector_restored():
    enabled, threshold = gc.isenabled(), gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)
    if enabled:
        gc.enable()


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_frozen_heap_freezes_for_the_block_and_undoes_it():
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    before = object()  # alive when the block starts: frozen with the rest
    with frozen_heap():
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
        assert not any(o is before for o in gc.get_objects())  # out of every generation
        made = _Cycle()  # made inside: the collector still sees it
        assert any(o is made for o in gc.get_objects())
        del made
        assert gc.collect() > 0  # a cycle the questions make is still collected
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == (700, 10, 10)


def test_frozen_heap_keeps_a_callers_higher_threshold():
    gc.unfreeze()
    gc.set_threshold(YOUNG_THRESHOLD * 4, 20, 30)
    with frozen_heap():
        assert gc.get_threshold() == (YOUNG_THRESHOLD * 4, 20, 30)
    assert gc.get_threshold() == (YOUNG_THRESHOLD * 4, 20, 30)


def test_frozen_heap_leaves_a_callers_freeze_and_a_disabled_collector_alone():
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    gc.freeze()
    with frozen_heap():
        assert gc.get_threshold() == (700, 10, 10)
    # not undone by us (an unfreeze leaves none; the count itself drops as frozen objects are
    # freed meanwhile, e.g. by an earlier test's threads, so it is not compared)
    assert gc.get_freeze_count() > 0
    gc.unfreeze()
    gc.disable()
    with frozen_heap():
        assert gc.get_freeze_count() == 0
        assert gc.get_threshold() == (700, 10, 10)
    assert not gc.isenabled()


def test_a_local_run_freezes_the_heap_while_questions_run_and_unfreezes_after(tmp_path):
    gc.unfreeze()
    config = load_config(write_project(tmp_path, questions=["paris", "crash"]))
    prepared = prepare_run(config, Selection())
    plan = prepared.plans["t"]
    settings = ExecutorSettings(workers=1)
    execution = ExecutionPlan(
        plan=plan,
        run=prepared.directory,
        trace_file=prepared.directory.trace_file("t"),
        run_settings=prepared.settings,
        settings=settings,
    )
    gc.set_threshold(700, 10, 10)
    seen: list[tuple[int, int]] = []

    asyncio.run(
        executor_for(plan, settings).arun(
            execution, lambda r: seen.append((gc.get_freeze_count(), gc.get_threshold()[0]))
        )
    )

    assert len(seen) == 2 and all(count > 0 and young == YOUNG_THRESHOLD for count, young in seen)
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == (700, 10, 10)


def test_a_runs_verdict_is_decided_with_the_heap_frozen_and_the_collector_restored(
    tmp_path, monkeypatch
):
    # Reading every score back after the last question made the first full collections
    # walk the whole heap the run built (~0.5 s of a 16 s run at 810 questions).
    from tracegrade import start_run
    from tracegrade.execution.run import lifecycle

    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    seen: list[tuple[int, int]] = []
    decide = lifecycle.decide_run

    def spy(*args, **kwargs):
        seen.append((gc.get_freeze_count(), gc.get_threshold()[0]))
        return decide(*args, **kwargs)

    monkeypatch.setattr(lifecycle, "decide_run", spy)
    outcome = start_run(
        load_config(write_project(tmp_path, questions=["paris", "crash"])), Selection()
    )

    assert [q.id for q in outcome.targets[0].questions] == ["paris", "crash"]
    assert len(seen) == 1 and seen[0][0] > 0 and seen[0][1] == YOUNG_THRESHOLD
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == (700, 10, 10)
