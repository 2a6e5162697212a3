"""The runs the app shows: every run directory under the runs directory, read once and kept
until its files change (a run directory is looked up by its id here, never by a path a
request names).

A run's summary is the stored grading as `tracegrade show` reads it (`load_outcome`): its
exit code is the gate's, each question's verdict the report's. Re-reading happens only when
the run's manifest or store changed (their size and modification time), so the runs page of a
thousand runs costs a directory listing and a few `stat`s once they are read.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import TracegradeError
from ..reports.html.data import question_verdict
from ..rundir.directory import RunDirectory
from ..rundir.history import load_outcome
from ..rundir.outcome import RunOutcome

__all__ = ["VERDICT_WORDS", "RunEntry", "RunIndex", "TargetSummary", "verdict_word"]

VERDICT_WORDS = {0: "passed", 2: "failed", 3: "incomplete"}
PAGES_KEPT = 8
"""Rendered run pages kept in memory (the newest looked at)."""


def verdict_word(code: int | None) -> str:
    """What the runs page calls an exit code: passed, failed, incomplete, ungraded, exit N."""
    if code is None:
        return "ungraded"
    return VERDICT_WORDS.get(code, f"exit {code}")


@dataclass(slots=True)
class TargetSummary:
    """One target of a run: its questions, how many passed, its mean composite and gate."""

    target: str
    questions: int
    passed: int
    mean_composite: float | None
    exit_code: int | None

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.questions if self.questions else None


@dataclass(slots=True)
class RunEntry:
    """One run as the app lists it."""

    run_id: str
    run_dir: Path
    created: str
    exit_code: int | None
    targets: list[TargetSummary]
    tags: list[str]
    questions: int
    selected: int
    """Question trials the run set out to ask (all targets): with `questions`, its progress."""
    git_commit: str | None
    datasets: list[str] = field(default_factory=list)
    """Each target's dataset sha256."""
    outcome: RunOutcome | None = field(default=None, repr=False)
    problem: str | None = None
    """Why the run could not be read (shown instead of its figures)."""
    running: bool = False
    stamp: tuple[int, ...] = ()
    """Sizes and modification times of its manifest and store when it was read."""

    @property
    def verdict(self) -> str:
        return verdict_word(self.exit_code)

    @property
    def target_names(self) -> list[str]:
        return [t.target for t in self.targets]


def _stamp(run_dir: Path) -> tuple[int, ...]:
    out: list[int] = []
    run = RunDirectory(run_dir)
    wal = run.store_file.with_name(run.store_file.name + "-wal")
    for path in (run.manifest_file, run.store_file, wal):
        try:
            st = os.stat(path)
        except OSError:
            out += [0, 0]
            continue
        # an empty WAL is no change: reading a run's store (the page's sources) creates one
        out += [st.st_mtime_ns, st.st_size] if st.st_size else [0, 0]
    return tuple(out)


def _locked_inodes() -> set[int]:
    """Inodes some process holds a `flock` on (Linux's /proc/locks): a run holds one on its
    manifest while it runs. Read, never taken: the app must not block a run from starting."""
    try:
        text = Path("/proc/locks").read_text()
    except OSError:
        return set()
    inodes = set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) > 5 and parts[1] == "FLOCK":
            try:
                inodes.add(int(parts[5].rsplit(":", 1)[-1]))
            except ValueError:
                continue
    return inodes


def _entry(run_dir: Path) -> RunEntry:
    try:
        outcome = load_outcome(run_dir)
    except TracegradeError as exc:
        return RunEntry(run_dir.name, run_dir, "", None, [], [], 0, 0, None, problem=str(exc))
    manifest = outcome.manifest
    assert manifest is not None  # read from the run directory
    targets, tags, selected = [], set(), 0
    for t in outcome.targets:
        stored = manifest.target(t.target)
        if stored is not None:
            selected += (stored.selected or 0) * stored.repeats
        passed = sum(question_verdict(q) == "passed" for q in t.questions)
        for q in t.questions:
            tags.update(q.tags)
        targets.append(
            TargetSummary(
                target=t.target,
                questions=len(t.questions),
                passed=passed,
                mean_composite=t.verdict.mean_composite,
                exit_code=t.verdict.exit_code if t.questions else None,
            )
        )
    questions = sum(t.questions for t in targets)
    return RunEntry(
        run_id=outcome.run_id,
        run_dir=run_dir,
        created=manifest.created,
        exit_code=outcome.exit_code if questions else None,
        targets=targets,
        tags=sorted(tags),
        questions=questions,
        selected=selected,
        git_commit=manifest.git_commit,
        datasets=[t.dataset.sha256 for t in manifest.targets.values()],
        outcome=outcome,
    )


class RunIndex:
    """The runs under `runs_dir`, newest first, refreshed on every look (cheap when nothing
    changed). Thread-safe: the app's handlers run in a thread pool."""

    def __init__(self, runs_dir: Path) -> None:
        self.runs_dir = Path(runs_dir)
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[tuple[int, ...], RunEntry]] = {}
        self._pages: OrderedDict[tuple[str, tuple[int, ...]], str] = OrderedDict()

    def entries(self) -> list[RunEntry]:
        """Every run, newest first (runs that could not be read last)."""
        with self._lock:
            return self._refresh()

    def _refresh(self) -> list[RunEntry]:
        if not self.runs_dir.is_dir():
            self._cache.clear()
            return []
        locked = _locked_inodes()
        seen: dict[str, tuple[tuple[int, ...], RunEntry]] = {}
        for run_dir in self.runs_dir.iterdir():
            manifest = RunDirectory(run_dir).manifest_file
            try:
                inode = manifest.stat().st_ino
            except OSError:
                continue
            stamp = _stamp(run_dir)
            cached = self._cache.get(run_dir.name)
            if cached is not None and cached[0] == stamp:
                entry = cached[1]
            elif not RunDirectory(run_dir).has_store():
                entry = RunEntry(
                    run_dir.name, run_dir, "", None, [], [], 0, 0, None,
                    problem="no results store (the run never started)",
                )  # fmt: skip
            else:
                entry = _entry(run_dir)
            entry.running = inode in locked
            entry.stamp = stamp
            seen[run_dir.name] = (stamp, entry)
        self._cache = seen
        entries = [e for _, e in seen.values()]
        entries.sort(key=lambda e: (e.problem is None, e.created, e.run_id), reverse=True)
        return entries

    def get(self, run_id: str) -> RunEntry | None:
        """The run whose id is `run_id`, or None: ids only, never a path."""
        for entry in self.entries():
            if entry.run_id == run_id or entry.run_dir.name == run_id:
                return entry
        return None

    def outcome(self, run_id: str) -> RunOutcome | None:
        entry = self.get(run_id)
        return entry.outcome if entry is not None else None

    def stream(self, entry: RunEntry, parts: Callable[[RunEntry], Iterable[str]]) -> Iterator[str]:
        """The run's page as `parts` makes it, passed on as each part is made, and kept
        whole once the last one was (a few kept): a run of thousands of questions takes
        seconds to gather, its first rows a fraction of that, a kept page nothing."""
        key = (entry.run_id, entry.stamp)
        with self._lock:
            found = self._pages.get(key)
            if found is not None:
                self._pages.move_to_end(key)
        if found is not None:
            yield found
            return
        made = []
        for part in parts(entry):
            made.append(part)
            yield part
        with self._lock:  # only a page sent whole is kept: a closed tab kept nothing
            self._pages[key] = "".join(made)
            while len(self._pages) > PAGES_KEPT:
                self._pages.popitem(last=False)

    def warm(self) -> threading.Thread:
        """Read every run in a background thread (the first look at the runs page then finds
        them read)."""
        thread = threading.Thread(target=self.entries, name="tracegrade-index", daemon=True)
        thread.start()
        return thread

    def drop(self, run_id: str) -> None:
        """Forget a run's cached reading (after the app wrote to it)."""
        with self._lock:
            self._cache.pop(run_id, None)
