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
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["frozen_heap"]


@contextmanager
def frozen_heap() -> Iterator[None]:
    """`gc.freeze()` for the block, undone after it. Left alone when the collector is off or
    something froze the heap already (a caller's own freeze is the caller's to undo)."""
    if not gc.isenabled() or gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
