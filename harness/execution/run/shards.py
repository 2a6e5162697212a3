"""CI shards: a deterministic share of a run's questions (`run --shard I/N`), and the merge of
the shards' run directories into one run (`tracegrade merge`).

A question belongs to shard `1 + int(sha256(target NUL question id)[:8]) mod N`: the same
share on every machine, for any Python, whatever the dataset order, and each question in
exactly one shard. The share is taken after the other filters (`--split`, `--tag`, `--limit`),
so shards of the same command line partition the same selection.

A merged run is an ordinary run directory: one store holding every shard's rows (the grading
each shard ran with), one trace file per target (the shards' lines, concatenated), one
manifest; `show`, `grade`, `compare` and every report read it as they read any run.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ...errors import InputError
from ...rundir.directory import RunDirectory
from ...rundir.manifest import MergedShard, RunManifest, TargetManifest

if TYPE_CHECKING:
    from ...inputs.dataset import Question
    from ...rundir.annotations import Annotation
    from ...rundir.outcome import RunOutcome
    from ...rundir.store import ResultStore

T = TypeVar("T")

__all__ = [
    "MergeResult",
    "in_shard",
    "merge_runs",
    "merged_outcome",
    "parse_shard",
    "shard_of",
    "shard_questions",
]


def shard_of(target: str, question_id: str, count: int) -> int:
    """The shard (1-based) a question of `target` belongs to among `count` shards."""
    digest = hashlib.sha256(f"{target}\x00{question_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def in_shard(target: str, question_id: str, shard: tuple[int, int] | None) -> bool:
    return shard is None or shard_of(target, question_id, shard[1]) == shard[0]


def shard_questions(
    target: str, questions: Sequence[Question], shard: tuple[int, int] | None
) -> list[Question]:
    """The questions of `questions` in `shard` (I, N), in their order."""
    return [q for q in questions if in_shard(target, str(q.id), shard)]


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N` with 1 <= I <= N, as a pair; anything else is invalid input (exit 4)."""
    index, sep, count = str(text).partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i = n = 0
    if not sep or n < 1 or not 1 <= i <= n:
        raise InputError(f"--shard {text!r} is not I/N with 1 <= I <= N (e.g. 2/3)", key="--shard")
    return i, n


# -- merge ----------------------------------------------------------------------------------
@dataclass(slots=True)
class MergeResult:
    """What `merge_runs` made."""

    run_dir: Path
    """The merged run directory."""
    shards: int
    """How many shards the runs were cut into (N)."""
    merged: list[int] = field(default_factory=list)
    """The shard indexes merged."""
    missing: list[int] = field(default_factory=list)
    """The shard indexes no run was given for (their questions have no result)."""
    notes: list[str] = field(default_factory=list)


# What must be equal in every shard of one run; the label names it in the refusal.
_TARGET_KEYS: tuple[tuple[Callable[[TargetManifest], object], str], ...] = (
    (lambda t: t.mode, "mode"),
    (lambda t: t.repeats, "repeats"),
    (lambda t: t.config, "config"),
    (lambda t: t.dataset.sha256, "dataset (sha256)"),
    (lambda t: t.dataset.path, "dataset path"),
    (lambda t: t.grading_module.sha256 if t.grading_module else None, "grading module (sha256)"),
    (lambda t: t.graders, "graders (ids, options, versions, code hashes)"),
    (lambda t: t.selected_total, "selection size"),
)


def _differences(ref: RunManifest, other: RunManifest) -> list[str]:
    out = []
    unsharded = {"shard": None}
    if ref.selection.model_copy(update=unsharded) != other.selection.model_copy(update=unsharded):
        out.append("the selection (filters)")
    if (ref.judge or {}) != (other.judge or {}):
        out.append("the judge")
    if sorted(ref.targets) != sorted(other.targets):
        out.append(f"targets ({sorted(ref.targets)} vs {sorted(other.targets)})")
        return out
    for name, target in ref.targets.items():
        for value, label in _TARGET_KEYS:
            if value(target) != value(other.targets[name]):
                out.append(f"target {name}: {label}")
    ref_tg, other_tg = ref.packages.get("tracegrade"), other.packages.get("tracegrade")
    if ref_tg != other_tg:
        out.append(f"tracegrade version ({ref_tg} vs {other_tg})")
    return out


class _Verbatim:
    """The merged store writes the shards' rows as they are: they were redacted under the run's
    policy already, and redacting again under another policy would change them."""

    @staticmethod
    def text(text: str) -> str:
        return text

    answer = text

    @staticmethod
    def value(value: T, **_: object) -> T:
        return value

    view = value


_Shard = tuple[Path, RunManifest, int, int]
"""(run directory, its manifest, shard index, shard count)."""


def _shard_manifests(run_dirs: Sequence[Path]) -> list[_Shard]:
    out = []
    for run_dir in run_dirs:
        manifest = RunDirectory(run_dir).manifest()
        if manifest.shard is None:
            raise InputError(
                f"{run_dir} is not a shard run (it was not run with --shard I/N)", key="RUN_DIR"
            )
        out.append((Path(run_dir), manifest, *manifest.shard))
    return out


def merge_runs(run_dirs: Sequence[Path | str], out: Path | str) -> MergeResult:
    """Merge the run directories of one run's shards into the new run directory `out`.

    Refused (exit 4, naming what differs and where) when the shards come from different
    configs, datasets, graders or tracegrade versions, were cut into different numbers of
    shards, or repeat a shard. Missing shards are allowed and reported: their questions have no
    result, so the merged run's gate says it is incomplete (exit 3)."""
    out = Path(out)
    if not run_dirs:
        raise InputError("merge needs at least one shard run directory", key="RUN_DIR")
    if out.exists() and any(out.iterdir()):  # checked first: nothing is read for nothing
        raise InputError(f"--out {out} exists and is not empty", key="--out")
    shards = _shard_manifests([Path(d) for d in run_dirs])
    ref_dir, ref, _, count = shards[0]
    seen: dict[int, Path] = {}
    problems = []
    for run_dir, manifest, index, n in shards:
        if n != count:
            problems.append(f"{run_dir} is shard {index}/{n}, {ref_dir} is one of {count}")
            continue
        if index in seen:
            problems.append(f"shard {index}/{count} given twice: {seen[index]} and {run_dir}")
        seen[index] = run_dir
        differs = _differences(ref, manifest)
        if differs:
            problems.append(f"{run_dir} differs from {ref_dir} in " + "; ".join(differs))
    if problems:
        raise InputError(
            "cannot merge these shards: " + " | ".join(problems),
            key="RUN_DIR",
            hint="merge the shards of one run: the same config, datasets, graders and "
            "tracegrade version, each shard once",
        )
    result = MergeResult(run_dir=out, shards=count, merged=sorted(seen))
    result.missing = [i for i in range(1, count + 1) if i not in seen]
    if result.missing:
        names = ", ".join(f"{i}/{count}" for i in result.missing)
        result.notes.append(
            f"missing shard(s) {names}: their questions have no result (evaluation incomplete)"
        )
    _write_merged(shards, out, ref, result)
    return result


def _write_merged(shards: list[_Shard], out: Path, ref: RunManifest, result: MergeResult) -> None:
    staged(out, lambda merged: _write_into(shards, merged, out.name, ref))


def staged(out: Path, write: Callable[[RunDirectory], None]) -> None:
    """A merged run written (`write`) beside `out` and renamed into place once whole: a merge
    killed half-way leaves no directory that reads as a run (its identity is written last,
    inside the staging one)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.merging-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        write(RunDirectory.create_at(staging))
        if out.exists():
            out.rmdir()  # checked empty before
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _write_into(
    shards: list[_Shard], merged_run: RunDirectory, run_id: str, ref: RunManifest
) -> None:
    manifest = ref.model_copy(deep=True)
    manifest.run_id = run_id
    manifest.created = min(s[1].created or "" for s in shards) or datetime.now(UTC).isoformat(
        timespec="seconds"
    )
    manifest.selection = ref.selection.model_copy(update={"shard": None})
    manifest.merged_from = [
        MergedShard(run_id=m.run_id, shard=f"{i}/{n}", run_dir=str(d))
        for d, m, i, n in sorted(shards, key=lambda s: s[2])
    ]
    for name, target in manifest.targets.items():
        # the whole selection: questions of a missing shard count as without a result
        total = target.selected_total
        target.selected = (
            int(total)
            if total is not None
            else sum(int(s[1].targets[name].selected or 0) for s in shards)
        )
    merged_run.copy_graders_from(RunDirectory(shards[0][0]))  # equal by sha256
    merged_run.traces_dir.mkdir(exist_ok=True)
    with merged_run.store(redaction=_Verbatim()) as store:  # type: ignore[arg-type]
        grading_id = merged_run.own_grading(store, manifest=manifest)  # written last
        for run_dir, _manifest, _index, _n in sorted(shards, key=lambda s: s[2]):
            _copy_rows(RunDirectory(run_dir), store, grading_id)
    for name in ref.targets:
        merged_run.append_traces(name, [RunDirectory(s[0]).trace_file(name) for s in shards])
    merged_run.write_manifest(manifest)  # last: only a whole directory is a run


def _copy_rows(shard_run: RunDirectory, store: ResultStore, grading_id: int) -> None:
    with shard_run.read_store() as shard:
        own = shard.own_grading_id()  # the grading the shard ran with
        if own is None:
            return
        scores = {s.key: s for s in shard.load_scores(grading_id=own)}
        for run in shard.load_runs():
            score = scores.get(run.key)
            if score is not None:  # the shard's grades with its stored answer
                score.answer = run.answer
                store.commit_question(score, grading_id=grading_id)
        for label in shard.load_annotations():  # what people answered about the shard's rows
            copy_annotation(store, label, trial=label.trial)


def copy_annotation(store: ResultStore, label: Annotation, *, trial: int) -> None:
    """A label a person gave in another run, on trial `trial` of its question here."""
    store.add_annotation(
        target=label.target,
        question_id=label.question_id,
        trial=trial,
        label=label.label,
        answer=label.answer,
        author=label.author,
        note=label.note,
        answer_sha256=label.answer_sha256,
        created=label.created,
    )


def merged_outcome(run_dir: Path, notes: Sequence[str] = ()) -> RunOutcome:
    """The merged run's `RunOutcome`: the run's one verdict (`decide_run`), one gate per
    target over every shard's questions, with the whole selection's size (a missing shard
    leaves the run incomplete, exit 3) and the must-pass graders the run stored."""
    from ...rundir.history import load_outcome

    outcome = load_outcome(run_dir)
    outcome.notes.extend(notes)
    return outcome
