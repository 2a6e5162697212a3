"""The heap as it stands when questions start, kept out of the cyclic garbage collector's full
collections while they run.

Profile of `tracegrade run` at concurrency 50 (support desk agent, 300 questions): about five
full (generation 2) collections per run, each walking every object the process holds (the
agent's libraries, LangChain's and pydantic's classes and schemas: ~170 ms apiece on this
machine), 12-14% of the process's CPU, the agent's share included. Those objects were made
while the run was set up and live through it, so `gc.freeze()` moves them to the permanent
generation before the first question and `gc.unfreeze()` hands them back after the last: a
full collection then walks only what the questions made. Objects freed by reference counting
are freed as before; only a cycle among objects made before the run waits until its end.

The youngest generation is collected every `YOUNG_THRESHOLD` new objects rather than every 700
meanwhile: a question's short-lived objects (LangChain's run managers, messages, spans) then
die before a collection sees them, instead of surviving one and being promoted towards the
full collections. Measured on the same run (4 runs each, alternating, heap frozen): the
collector 0.73 s against 1.32 s, no full collection against five, main-thread CPU 7.2 s
against 8.1 s; a few thousand more objects wait for a collection at most.

The HTML report builds a page's rows the same way (`reports.html.rows`): in `tracegrade serve`
the heap holds every run's outcome, and full collections walking it while a page's records
were promoted were a fifth of the page's first build.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["YOUNG_THRESHOLD", "frozen_heap"]

YOUNG_THRESHOLD = 5000
"""New objects between two collections of the youngest generation while questions run."""


@contextmanager
def frozen_heap() -> Iterator[None]:
    """`gc.freeze()` and the youngest generation's threshold raised to `YOUNG_THRESHOLD` for
    the block, both undone after it. Left alone when the collector is off or something froze
    the heap already (the caller tunes the collector: its settings are its own); a higher
    threshold of the caller's is kept."""
    threshold = gc.get_threshold()
    if not gc.isenabled() or gc.get_freeze_count() or threshold[0] == 0:
        yield
        return
    gc.freeze()
    gc.set_threshold(max(threshold[0], YOUNG_THRESHOLD), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
