"""The question work folders a process hands out (`work/<target>/<question>/trial-<n>`), made
once and reused while they stay empty.

A folder made cost two `mkdir`s (the question's folder and its trial's), each an inode and a
block written through the file system's journal: 150-300 us of CPU apiece on an ext4 disk, where
a `rename` costs 20-25 us and a `listdir` 13 us (measured on this project's CI machine). So
inside a run (`release(..., reuse=True)`) a finished question's folder is not removed: it goes
on this process's free list as it is (no syscall), and the next question of the same target
takes it by renaming `work/<target>/<old question>` to its own name, once the trial folder is
seen empty and alone in it (checked then, at the last moment: what an agent wrote, even late,
is kept where it wrote it, and a late write by path after the rename finds no folder rather
than another question's). `close` removes the free folders left when the run ends, so a run
whose agent wrote nothing leaves no `work/` behind; `ending` starts that sooner, once no question
is left to take one (an `rmdir` costs 2-3 ms of wall time on this project's CI disk: a run at
concurrency 50 waited 0.3 s for its free folders after its last question). Outside a run (a worker process running
questions one by one: no end to wait for), a folder is removed when its question ends, on a
thread of its own (an `rmdir` waits on the journal; on a busy disk that held the event loop).

Reuse is within one process and one event loop thread (the free list is only touched there), so
two trials of one question never race over their question's folder; another process sharing the
run directory (pytest-xdist) runs other questions.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path

from ...rundir.directory import RunDirectory, _safe

__all__ = ["close", "ending", "release", "take"]


class _Folders:
    """This process's free folders, by `work/<target>` path: (question folder, trial name)."""

    __slots__ = ("ended", "free", "pending", "pid", "pool", "waiting")

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.free: dict[str, list[tuple[str, str]]] = {}
        self.pool: ThreadPoolExecutor | None = None
        self.pending: set[Future[None]] = set()
        """Removals handed to the thread, not done yet."""
        self.waiting: list[str] = []
        """Trial folders to remove, not handed over yet."""
        self.ended: set[str] = set()
        """`work/<target>` paths no question will take a folder from any more (`ending`)."""


_state: _Folders | None = None


def _folders() -> _Folders:
    """One per process: threads and free lists do not survive a fork."""
    global _state
    state = _state
    if state is None or state.pid != os.getpid():
        state = _state = _Folders()
    return state


def take(run_path: Path, target: str, question: str, trial: int) -> Path:
    """The question run's work folder, empty: a free one renamed to it, or made."""
    target_dir = os.path.join(run_path, "work", _safe(target))
    free = _folders().free.get(target_dir)
    if free:
        folder = os.path.join(target_dir, _safe(question))
        name = f"trial-{trial}"
        while free:
            old_folder, old_name = free.pop()
            path = _reused(old_folder, old_name, folder, name)
            if path is not None:
                return Path(path)
    return RunDirectory(run_path).question_workdir(target, question, trial)


def _reused(old_folder: str, old_name: str, folder: str, name: str) -> str | None:
    """`old_folder/old_name` moved to `folder/name` when it is still empty and alone in its
    question's folder; else None, and it is kept (the agent wrote there) or removed as a
    finished question's folder is."""
    old = os.path.join(old_folder, old_name)
    try:
        if os.listdir(old) or os.listdir(old_folder) != [old_name]:
            RunDirectory.remove_empty_workdir(Path(old))
            return None
    except OSError:  # the agent removed its own folder
        RunDirectory.remove_empty_workdir(Path(old))
        return None
    try:
        os.rename(old_folder, folder)  # fails when `folder` holds a sibling trial's folder
    except OSError:
        RunDirectory.remove_empty_workdir(Path(old))
        return None
    path = os.path.join(folder, name)
    if name != old_name:
        try:
            os.rename(os.path.join(folder, old_name), path)
        except OSError:
            RunDirectory.remove_empty_workdir(Path(os.path.join(folder, old_name)))
            return None
    return path


def release(workdir: Path, *, reuse: bool) -> None:
    """A question is done with `workdir`: free for the next question (`reuse`: inside a run,
    which `close`s), or removed now when empty, on the removal thread."""
    state = _folders()
    path = str(workdir)
    folder, name = os.path.split(path)
    if reuse:
        target_dir = os.path.dirname(folder)
        if target_dir not in state.ended:
            state.free.setdefault(target_dir, []).append((folder, name))
            return
    state.waiting.append(path)
    # A hand-over per question woke the thread (and made it take the GIL) once per question,
    # costing more than the rmdirs themselves: batched within a run's end, not outside one.
    _hand_over(state)


def ending(run_path: Path, target: str) -> None:
    """No question of `target` will take a folder any more (the last ones are in flight): its
    free folders go to the removal thread now, and each one released from now on as it is
    released, so that `close` waits only for the last few."""
    state = _folders()
    key = os.path.join(run_path, "work", _safe(target))
    state.ended.add(key)
    for folder, name in state.free.pop(key, ()):
        state.waiting.append(os.path.join(folder, name))
    _hand_over(state)


def _hand_over(state: _Folders) -> None:
    batch, state.waiting = state.waiting, []
    if batch:
        if state.pool is None:
            state.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tracegrade-workdir")
        future = state.pool.submit(_remove_empty, batch)
        state.pending.add(future)
        future.add_done_callback(state.pending.discard)


def _remove_empty(workdirs: list[str]) -> None:
    for workdir in workdirs:
        RunDirectory.remove_empty_workdir(Path(workdir))


def close(run_path: Path | None = None, target: str | None = None) -> None:
    """Remove the free folders of `work/<target>` (every target's when None) that stayed
    empty, and wait for the removals handed over; then `work/<target>` when empty."""
    state = _state
    if state is None or state.pid != os.getpid():
        return
    if run_path is not None and target is not None:
        keys = [os.path.join(run_path, "work", _safe(target))]
    else:
        keys = list(dict.fromkeys([*state.free, *state.ended]))
    for key in keys:
        state.ended.discard(key)
        for folder, name in state.free.pop(key, ()):
            state.waiting.append(os.path.join(folder, name))
    _hand_over(state)
    wait(list(state.pending))
    if run_path is not None and target is not None:
        RunDirectory(run_path).remove_empty_work(target)
