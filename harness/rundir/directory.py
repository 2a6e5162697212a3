"""One run directory: the one type that creates and opens it, holds its lock, reads and writes
its manifest, opens its store and names and folds its trace files. Every command that touches
a run (run, resume, grade, show, merge, label, export, runs, the pytest plugin, the worker and
Ray executors) goes through `RunDirectory`, so the layout below is written down once.

```
runs/<run id>/
  identity.json                 what produced the scores (the manifest, `identity`)
  results.sqlite                one committed row per finished question (`store`)
  traces/<target>.jsonl         the run's trace file per target (the records re-grading reads)
  traces/<target>.<part>.jsonl  a worker's own trace file (`w0`..., pytest-xdist's `gw0`...),
                                folded into the target's file when it ends or by the next run
  graders/<target>/...          copies of the user grading modules the run used
  page-rows.cache               the HTML report's rows, kept by the first page (`kept_rows`)
  work/<target>/<question>/trial-<n>/
                                a question run's own folder for the agent to write to (kept
                                only when it wrote something)
```
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..redaction import DEFAULT_POLICY, RedactionPolicy
from .identity import IDENTITY_FILE, read_manifest, write_identity
from .manifest import RunManifest
from .runlock import holder_text, run_lock
from .store import STORE_FILE, ResultStore

__all__ = ["RunDirectory"]

_PART = re.compile(r"g?w\d+")
_FOLD_BLOCK = 1 << 20
"""Bytes of a worker's trace file copied at once when it is folded."""
"""The part names of worker trace files: `w<k>` (worker processes), `gw<n>` (pytest-xdist)."""


class RunDirectory:
    """A run's directory on disk (see the module docstring for its layout)."""

    __slots__ = ("path",)

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunDirectory({str(self.path)!r})"

    def __fspath__(self) -> str:
        return str(self.path)

    # -- creating and opening ---------------------------------------------------------------
    @classmethod
    def create(cls, runs_dir: Path | str, run_id: str) -> RunDirectory:
        """A new, empty run directory `runs_dir/run_id` (an existing one is never reused)."""
        path = Path(runs_dir) / run_id
        path.mkdir(parents=True, exist_ok=False)
        return cls(path)

    @classmethod
    def create_at(cls, path: Path | str) -> RunDirectory:
        """A new run directory at `path` (`merge --out`): refused when it holds anything."""
        path = Path(path)
        if path.exists() and any(path.iterdir()):
            raise InputError(f"--out {path} exists and is not empty", key="--out")
        path.mkdir(parents=True, exist_ok=True)
        return cls(path)

    @classmethod
    def open(cls, run: str | Path, *, runs_dir: Path | None = None) -> RunDirectory:
        """The run named by its directory or by its id under `runs_dir`; exit 4 when neither
        holds a manifest."""
        as_path = Path(run)
        if (as_path / IDENTITY_FILE).is_file():
            return cls(as_path)
        if runs_dir is not None and (Path(runs_dir) / str(run) / IDENTITY_FILE).is_file():
            return cls(Path(runs_dir) / str(run))
        where = f" or under {runs_dir}" if runs_dir is not None else ""
        raise InputError(f"no run {str(run)!r}: no {IDENTITY_FILE} at {as_path}{where}", key="RUN")

    @classmethod
    def resolve(
        cls, run: str | Path, *, config_path: Path | None = None, runs_dir: Path | None = None
    ) -> RunDirectory:
        """As `open`, with the runs directory taken from the config (found as `run` finds it)
        only when `run` is not a directory itself."""
        if (Path(run) / IDENTITY_FILE).is_file():
            return cls(Path(run))
        if runs_dir is None:
            from ..inputs.config import load_config

            runs_dir = load_config(config_path).runs_dir
        return cls.open(run, runs_dir=runs_dir)

    @staticmethod
    def is_run(path: Path) -> bool:
        """`path` holds a run manifest."""
        return (Path(path) / IDENTITY_FILE).is_file()

    # -- the manifest -----------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.path.name

    @property
    def manifest_file(self) -> Path:
        return self.path / IDENTITY_FILE

    def manifest(self) -> RunManifest:
        """The typed manifest; a missing or malformed one is invalid input (exit 4)."""
        return read_manifest(self.path)

    def write_manifest(self, manifest: RunManifest) -> Path:
        """Write the manifest (`identity.json`)."""
        return write_identity(self.path, manifest)

    # -- the store and the lock -------------------------------------------------------------
    @property
    def store_file(self) -> Path:
        return self.path / STORE_FILE

    def has_store(self) -> bool:
        return self.store_file.is_file()

    def store(self, *, redaction: RedactionPolicy = DEFAULT_POLICY) -> ResultStore:
        """The results store, writable (created when new; an older one migrated in place)."""
        return ResultStore(self.store_file, redaction=redaction)

    def read_store(self) -> ResultStore:
        """The results store read-only: an older one migrated in memory, the file untouched."""
        return ResultStore.open_readonly(self.path)

    def own_grading(self, store: ResultStore, *, manifest: RunManifest | None = None) -> int:
        """The run's own grading in `store`: the one its questions are committed under, by
        `run`, `--resume`, the pytest session, `receive`'s monitor run, grade-traces and
        `merge`. Opened (with the graders of `manifest`, else of the manifest on disk) when the
        store has none yet: a new run, or a disk that filled before its first grading was
        written. Re-gradings are later gradings (`tracegrade grade`)."""
        own = store.own_grading_id()
        if own is not None:
            return own
        manifest = manifest if manifest is not None else self.manifest()
        store.set_meta("run_id", manifest.run_id)
        return store.new_grading(mode="run", graders=manifest.grader_specs())

    @contextlib.contextmanager
    def lock(self, store: ResultStore) -> Iterator[None]:
        """Hold the run for this process (exit 4 naming the holder when another has it); the
        holder is recorded in `store` for that message."""
        with run_lock(self.path, read_holder=lambda: store.meta("holder")):
            store.set_meta("holder", holder_text())
            yield

    # -- trace files ------------------------------------------------------------------------
    @property
    def traces_dir(self) -> Path:
        return self.path / "traces"

    def trace_file(self, target: str) -> Path:
        """The target's trace file (the records `grade` reads)."""
        return self.traces_dir / f"{target}.jsonl"

    def trace_part(self, target: str, part: str) -> Path:
        """A worker's own trace file (`part`: `w<k>` for a worker process, `gw<n>` for a
        pytest-xdist worker), folded into `trace_file(target)` later."""
        if not _PART.fullmatch(part):
            raise ValueError(f"not a trace part name: {part!r}")
        return self.traces_dir / f"{target}.{part}.jsonl"

    def trace_parts(self, target: str) -> list[Path]:
        """The worker trace files of `target` not folded yet."""
        if not self.traces_dir.is_dir():
            return []
        prefix, suffix = f"{target}.", ".jsonl"
        return sorted(
            p
            for p in self.traces_dir.iterdir()
            if p.name.startswith(prefix)
            and p.name.endswith(suffix)
            and _PART.fullmatch(p.name[len(prefix) : -len(suffix)])
        )

    def trace_files(self) -> dict[str, Path]:
        """Every target's trace file present, by target name."""
        if not self.traces_dir.is_dir():
            return {}
        out = {}
        for p in sorted(self.traces_dir.glob("*.jsonl")):
            stem = p.name[: -len(".jsonl")]
            head, _, part = stem.rpartition(".")
            if head and _PART.fullmatch(part):
                continue
            out[stem] = p
        return out

    def fold_traces(self, target: str) -> int:
        """Append the worker trace files of `target` to its trace file and remove them; returns
        how many were folded. A torn last line (a killed worker) stays one line, which the
        reader skips alone."""
        files = self.trace_parts(target)
        if not files:
            return 0
        dest = self.trace_file(target)
        with dest.open("ab") as sink:
            if sink.tell():
                with dest.open("rb") as check:
                    check.seek(-1, 2)
                    if check.read(1) != b"\n":
                        sink.write(b"\n")
            for path in files:
                last = b"\n"
                with path.open("rb") as source:  # a block at a time: a part may be ~100 MB
                    while block := source.read(_FOLD_BLOCK):
                        sink.write(block)
                        last = block[-1:]
                if last != b"\n":
                    sink.write(b"\n")
            sink.flush()
            os.fsync(sink.fileno())
        for path in files:
            path.unlink()
        return len(files)

    def append_traces(self, target: str, sources: list[Path]) -> None:
        """Append other runs' trace files of `target` to this run's (`merge`)."""
        self.traces_dir.mkdir(parents=True, exist_ok=True)
        with self.trace_file(target).open("ab") as sink:
            for path in sources:
                if not path.is_file():
                    continue
                with path.open("rb") as source:
                    shutil.copyfileobj(source, sink)
                    if source.tell():
                        source.seek(-1, 2)
                        if source.read(1) != b"\n":
                            sink.write(b"\n")  # a torn last line stays one (skipped) line

    def tool_calls(self, target: str) -> dict[tuple[str, int], Any]:
        """Each question trial's tool-call record from `target`'s trace file and any worker
        trace file not folded yet, by (question id, trial); `unreadable` lines are skipped."""
        return self.read_records(target, unreadable=[])

    def read_records(self, target: str, *, unreadable: list[str]) -> dict[tuple[str, int], Any]:
        """The records of `target`'s trace file and of its worker files not folded yet (a run
        killed while workers ran it), by (question id, trial); the first seen wins."""
        from ..capture.tracefile import read_trial_records

        records: dict[tuple[str, int], Any] = {}
        for path in [self.trace_file(target), *self.trace_parts(target)]:
            if not path.is_file():
                continue
            for key, record in read_trial_records(path, unreadable=unreadable).items():
                records.setdefault(key, record)
        return records

    # -- grading modules --------------------------------------------------------------------
    def copy_grading_module(self, path: Path, target: str) -> str:
        """Copy a user grading module into `graders/<target>/`; the path relative to the run
        directory is returned (what the manifest records and `grade` loads)."""
        dest_dir = self.path / "graders" / target
        dest_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest_dir / path.name)
        return str((dest_dir / path.name).relative_to(self.path))

    def copy_graders_from(self, other: RunDirectory) -> None:
        """Copy another run's grading modules (`merge`: the shards' copies are equal)."""
        if (other.path / "graders").is_dir():
            shutil.copytree(other.path / "graders", self.path / "graders")

    # -- question work folders --------------------------------------------------------------
    def question_workdir(self, target: str, question: str, trial: int) -> Path:
        """The question run's own directory (`work/<target>/<question>/trial-<n>`), made for
        the agent to write to: its path is `config["configurable"]["workdir"]` for the agent's
        tools and `workdir` for grader functions (`remove_empty_workdir` after grading).
        Two folders made per question run (`work/<target>` stays until `remove_empty_work`):
        each level made and removed was a syscall on the per-question path, and the paths are
        joined as text (pathlib's parsing cost as much again as the syscalls)."""
        target_dir = os.path.join(self.path, "work", _safe(target))
        folder = os.path.join(target_dir, _safe(question))
        path = os.path.join(folder, f"trial-{trial}")
        # A sibling trial may be removing the empty question folder meanwhile, and under
        # pytest-xdist another worker process `work/` itself (`remove_empty_work`), even between
        # `makedirs` making `work/` and `work/<target>`: each of those is tried again.
        for _ in range(5):
            try:
                _mkdir(folder)
                _mkdir(path)
                return Path(path)
            except FileNotFoundError:  # no work/<target> yet (or it was just removed)
                with contextlib.suppress(FileNotFoundError):
                    os.makedirs(target_dir, exist_ok=True)
        os.makedirs(path, exist_ok=True)  # still racing after five tries: one last, whole
        return Path(path)

    @staticmethod
    def remove_empty_workdir(workdir: Path) -> None:
        """Remove a question's work folder and its question's folder when empty: kept only when
        the agent wrote something (`remove_empty_work` removes `work/<target>` at the end)."""
        with contextlib.suppress(OSError):
            os.rmdir(workdir)
            os.rmdir(os.path.dirname(workdir))  # fails while a sibling trial's folder is in it

    def remove_empty_work(self, target: str) -> None:
        """Remove `work/<target>` and `work/` when no question run left anything in them."""
        with contextlib.suppress(OSError):
            os.rmdir(self.path / "work" / _safe(target))
            os.rmdir(self.path / "work")


def _mkdir(path: str | Path) -> None:
    with contextlib.suppress(FileExistsError):
        os.mkdir(path)


@functools.lru_cache(maxsize=4096)
def _safe(name: str) -> str:
    """A path segment for an id: readable, and distinct for distinct ids."""
    slug = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:60].strip(".") or "_"
    if slug == name:
        return slug
    return f"{slug}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
