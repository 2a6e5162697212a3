"""Run history: listing past runs and reading a stored grading back, without re-grading and
without any provider call.

A run is named by its id (a directory under the config's `runs_dir`) or by its directory.
Stores are opened read-only (`RunDirectory.read_store`): a store written by an older release
is migrated in memory, so reading history never changes a run's files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import InputError
from .directory import RunDirectory
from .identity import parse_manifest, read_json_file, read_manifest
from .manifest import RunManifest
from .monitoring import MONITOR_META, monitor_notes
from .outcome import RunOutcome
from .record import QuestionResult, ToolCallResult
from .store import ResultStore
from .verdict import decide_run

__all__ = [
    "RunSummary",
    "StoredRun",
    "earlier_manifests",
    "list_runs",
    "load_comparable",
    "load_outcome",
    "load_results_file",
    "load_stored_run",
    "runs_dir_of",
    "tool_calls_of",
]


@dataclass(slots=True)
class RunSummary:
    """One line of `tracegrade runs`."""

    run_id: str
    """The run's id."""
    run_dir: Path
    """Where it lives."""
    created: str
    """When it started (ISO 8601, UTC)."""
    targets: list[str]
    """The targets it asked."""
    questions: int
    """Question results in its latest grading (trials counted)."""
    exit_code: int | None
    """The gate's exit code for the latest grading; None when nothing was graded yet."""
    mean_composite: float | None
    """Mean composite over non-degraded results, all targets together."""
    git_commit: str | None
    """The commit the config's repository was at."""
    dataset_sha256: list[str]
    """Each target's dataset sha256."""
    grading_id: int | None
    """The latest grading's id (the latest that finished: an interrupted one never is)."""
    interrupted: list[int] = field(default_factory=list)
    """Gradings started and never finished (a `grade` killed or cancelled): not shown."""


@dataclass(slots=True)
class StoredRun:
    """A run (or a JSON results file) read back for `compare`."""

    label: str
    """How the user named it (run id, directory or file)."""
    run_id: str
    """The run's id."""
    grading_id: int | None
    """Which grading the results come from."""
    questions: list[QuestionResult]
    """Every question result (each trial), in selection order."""
    manifest: RunManifest | None
    """The run manifest (None when the source did not carry one)."""


def runs_dir_of(config_path: Path | None, runs_dir: Path | None = None) -> Path:
    """The runs directory: the one given, else the config's `runs_dir` (exit 4 when no config
    is found)."""
    if runs_dir is not None:
        return runs_dir
    from ..inputs.config import load_config

    return load_config(config_path).runs_dir


def _grading_id(store: ResultStore, grading: int | None, run_dir: Path) -> int | None:
    ids = [g["grading_id"] for g in store.gradings()]
    if grading is None:
        return store.latest_grading_id()
    if grading not in ids:
        have = ", ".join(map(str, ids)) or "none"
        raise InputError(
            f"run {run_dir.name} has no grading {grading} (gradings: {have})", key="--grading"
        )
    return grading


def interrupted_notes(run: RunDirectory, shown: int | None) -> list[str]:
    """What a reader of the run must know was cut short: re-gradings started and never
    finished (not shown), and the grading shown, when it is one of them."""
    with run.read_store() as store:
        unfinished = store.unfinished_gradings()
    notes = []
    for grading_id in unfinished:
        if grading_id == shown:
            notes.append(f"grading {grading_id} was interrupted: it holds only some questions")
        else:
            notes.append(
                f"grading {grading_id} was interrupted before it finished (a partial re-grade): "
                f"not shown; `tracegrade grade {run.name}` grades the run again"
            )
    return notes


def load_outcome(run_dir: Path | RunDirectory, *, grading: int | None = None) -> RunOutcome:
    """A stored grading as the reports render it, with the run's one verdict (`decide_run`; no
    grader runs, no provider is built)."""
    run = run_dir if isinstance(run_dir, RunDirectory) else RunDirectory(run_dir)
    manifest = run.manifest()
    with run.read_store() as store:
        grading_id = _grading_id(store, grading, run.path)
        outcome = decide_run(run, store, grading_id, manifest=manifest)
        monitor = store.meta(MONITOR_META)
    if grading_id is None:
        outcome.notes.append("nothing was graded in this run yet")
    outcome.notes += interrupted_notes(run, grading_id)
    _monitor(outcome, monitor)
    return outcome


def _monitor(outcome: RunOutcome, data: Any) -> None:
    """A monitor run's rollups (`tracegrade receive`): on the outcome and in its notes."""
    if not data:
        return
    outcome.monitor = dict(data)
    outcome.notes += monitor_notes(data)


def _summary(run_dir: Path) -> RunSummary:
    outcome = load_outcome(run_dir)
    manifest = outcome.manifest
    assert manifest is not None  # read from the run directory
    questions = [q for t in outcome.targets for q in t.questions]
    clean = [q.composite for q in questions if not q.degraded and q.composite is not None]
    return RunSummary(
        run_id=outcome.run_id,
        run_dir=run_dir,
        created=manifest.created,
        targets=[t.target for t in outcome.targets],
        questions=len(questions),
        exit_code=outcome.exit_code if questions else None,
        mean_composite=sum(clean) / len(clean) if clean else None,
        git_commit=manifest.git_commit,
        dataset_sha256=[t.dataset.sha256 for t in manifest.targets.values()],
        grading_id=outcome.grading_id or None,
        interrupted=_unfinished(run_dir),
    )


def _unfinished(run_dir: Path) -> list[int]:
    with RunDirectory(run_dir).read_store() as store:
        return store.unfinished_gradings()


def list_runs(runs_dir: Path, *, limit: int | None = None) -> tuple[list[RunSummary], list[str]]:
    """Past runs under `runs_dir`, newest first, and a note for each directory that could not
    be read (a run from a newer release, a broken manifest)."""
    if not runs_dir.is_dir():
        return [], []
    dirs = [RunDirectory(d) for d in runs_dir.iterdir() if RunDirectory.is_run(d)]
    runs, problems = [], []
    for run_dir in dirs:
        if not run_dir.has_store():
            problems.append(f"{run_dir.name}: no results store (the run never started)")
            continue
        try:
            runs.append(_summary(run_dir.path))
        except InputError as exc:
            problems.append(f"{run_dir.name}: {exc}")
    # `created` has whole seconds: runs started within one second fall back to when their
    # manifest was written.
    runs.sort(
        key=lambda r: (r.created, RunDirectory(r.run_dir).manifest_file.stat().st_mtime_ns),
        reverse=True,
    )
    return (runs[:limit] if limit else runs), problems


def earlier_manifests(runs_dir: Path, *, but: str, limit: int = 200) -> list[RunManifest]:
    """The manifests of the runs in `runs_dir` other than run `but`, newest first (at most
    `limit`; an unreadable one is skipped: this is history, not a verdict)."""
    found = []
    try:
        dirs = sorted((p for p in Path(runs_dir).iterdir() if p.name != but), reverse=True)
    except OSError:
        return []
    for run_dir in dirs[:limit]:
        try:
            found.append(read_manifest(run_dir))
        except InputError:
            continue
    return found


def tool_calls_of(run_dir: Path, target: str) -> dict[tuple[str, int], list[ToolCallResult]]:
    """Each question trial's tool calls from the run's trace file, by (question id, trial)
    (arguments as exported, redacted); empty when the run kept no trace file."""
    return {
        key: [
            ToolCallResult(
                name=c.name, args=shallow(dict(c.arguments)), outcome=str(c.outcome.value)
            )
            for c in record
        ]
        for key, record in RunDirectory(run_dir).tool_calls(target).items()
    }


REPORT_DEPTH = 64
"""How deep a tool argument is shown in reports and comparisons: an agent's argument nested
260 levels deep must not break a serializer (pydantic stops at 255); the trace file keeps it
whole."""


def shallow(value: Any, depth: int = REPORT_DEPTH) -> Any:
    """`value` with whatever nests below `depth` levels replaced by a note saying so."""
    if isinstance(value, dict | list):
        if depth <= 0:
            return f"[nested deeper than {REPORT_DEPTH} levels: cut here; whole in the trace file]"
        if isinstance(value, dict):
            return {k: shallow(v, depth - 1) for k, v in value.items()}
        return [shallow(v, depth - 1) for v in value]
    return value


def _with_calls(run_dir: Path, results: Sequence[QuestionResult]) -> list[QuestionResult]:
    """The results with each one's calls from the run's trace file."""
    calls: dict[str, dict[tuple[str, int], list[ToolCallResult]]] = {}
    for q in results:
        if q.target not in calls:
            calls[q.target] = tool_calls_of(run_dir, q.target)
        q.tool_calls = calls[q.target].get((q.id, q.trial))
    return list(results)


def load_stored_run(run_dir: Path, *, grading: int | None = None, label: str = "") -> StoredRun:
    """A run directory's results (its latest grading by default) with each question's calls."""
    run = RunDirectory(run_dir)
    manifest = run.manifest()
    with run.read_store() as store:
        grading_id = _grading_id(store, grading, run_dir)
        scores = store.load_scores(grading_id=grading_id) if grading_id is not None else []
    return StoredRun(
        label=label or str(run_dir),
        run_id=manifest.run_id,
        grading_id=grading_id,
        questions=_with_calls(run_dir, scores),
        manifest=manifest,
    )


def load_results_file(path: Path) -> StoredRun:
    """A JSON results report (`--json`) read back: a CI job can compare against the artifact
    of another run without keeping its run directory. A file that is not one is exit 4."""
    data = read_json_file(path, "JSON results report")
    if not isinstance(data, dict) or data.get("format") != "tracegrade.results":
        raise InputError(
            f"{path} is not a tracegrade JSON results report", file=str(path), key="/format"
        )
    questions = []
    for index, raw in enumerate(data.get("questions") or []):
        try:
            question = QuestionResult.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            key = f"/questions/{index}/" + "/".join(str(p) for p in first["loc"])
            raise InputError(f"{path}: {first['msg']}", file=str(path), key=key) from exc
        questions.append(question)
    return StoredRun(
        label=str(path),
        run_id=str(data.get("run_id", path.stem)),
        grading_id=data.get("grading_id"),
        questions=questions,
        manifest=parse_manifest(data["identity"], path=path, at="/identity")
        if data.get("identity")
        else None,
    )


def load_comparable(
    name: str | Path,
    *,
    config_path: Path | None = None,
    runs_dir: Path | None = None,
    grading: int | None = None,
) -> StoredRun:
    """What `compare` and `run --baseline` accept: a JSON results file (`--json`), a run
    directory, or a run id under the runs directory."""
    path = Path(name)
    if path.is_file():
        return load_results_file(path)
    run_dir = RunDirectory.resolve(name, config_path=config_path, runs_dir=runs_dir).path
    return load_stored_run(run_dir, grading=grading, label=str(name))
