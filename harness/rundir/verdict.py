"""The one verdict of a stored run: `decide_run` turns a run directory's grading into each
target's gate verdict and the run's exit code. `run`, `run --resume`, `grade`, `show`, `merge`,
the pytest plugin and the Python API all return what it decides, so one run has one verdict
and one exit code whichever command computes it.

What a gate is held against is read from the run, never from the caller:

- the gate settings, the must-pass graders and how many questions were selected come from the
  manifest (`identity.json`), as the run recorded them when it started;
- a grading that judged by other rules (`grade --current` with the config's gate now, `grade
  --id` over fewer questions, a pytest session whose `-k` deselected items) records its own
  (`record_scope`), and that record wins for that grading;
- spans the run could not write to its trace file (`record_lost_spans`) leave it incomplete.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..inputs.config import parse_gate
from ..verdicts.gate import evaluate_gate
from ..verdicts.plan import plan_notes
from ..verdicts.scoring import summarise_graders
from .directory import RunDirectory
from .manifest import RunManifest
from .outcome import RunOutcome, TargetResult
from .store import ResultStore

__all__ = ["decide_run", "record_lost_spans", "record_scope"]


def _scope_key(grading_id: int) -> str:
    return f"grading:{grading_id}"


def record_scope(
    store: ResultStore, grading_id: int, targets: Mapping[str, Mapping[str, Any]]
) -> None:
    """Record what grading `grading_id` is judged by, per target: `gate` (a `gate:` block),
    `selected` (how many questions it selected, each run `repeats` times) or `runs` (how many
    question runs it expected, exactly: graded traces cover questions unevenly); a key left
    out falls back to the manifest."""
    scope = dict(store.meta(_scope_key(grading_id), {}) or {})
    merged = dict(scope.get("targets") or {})
    for name, values in targets.items():
        merged[name] = {**(merged.get(name) or {}), **dict(values)}
    store.set_meta(_scope_key(grading_id), {**scope, "targets": merged})


def record_lost_spans(store: ResultStore, grading_id: int, lost: int) -> None:
    """Count spans that could not be written to the trace file under `grading_id`: their
    records are lost on disk, so the run is incomplete (exit 3) however its gates came out."""
    if lost:
        scope = dict(store.meta(_scope_key(grading_id), {}) or {})
        scope["lost_spans"] = int(scope.get("lost_spans") or 0) + int(lost)
        store.set_meta(_scope_key(grading_id), scope)


def _must_pass(store: ResultStore, grading_id: int, name: str, manifest_graders: list) -> list[str]:
    """The target's must-pass graders in that grading (the graders it stored), else in the
    manifest."""
    for grading in store.gradings():
        if grading["grading_id"] == grading_id and grading["graders"]:
            specs = [g for g in grading["graders"] if g.get("target") == name]
            return [str(g["id"]) for g in specs if g.get("must_pass")]
    return [str(g["id"]) for g in manifest_graders if g.get("must_pass")]


def decide_run(
    run: RunDirectory,
    store: ResultStore,
    grading_id: int | None,
    *,
    manifest: RunManifest | None = None,
) -> RunOutcome:
    """The verdict of grading `grading_id` of the run in `run` (whose store is open as
    `store`): every target's questions, gate verdict and grader summaries, and the lost spans,
    as a `RunOutcome` whose `exit_code` is the run's. `grading_id` None: nothing was graded yet
    (every target has no question; a target that selected some is incomplete)."""
    manifest = manifest if manifest is not None else run.manifest()
    scope: dict[str, Any] = (
        dict(store.meta(_scope_key(grading_id), {}) or {}) if grading_id is not None else {}
    )
    own = scope.get("targets") or {}
    results = []
    for name, target in manifest.targets.items():
        config = target.config
        recorded = own.get(name) or {}
        questions = (
            store.load_scores(grading_id=grading_id, target=name) if grading_id is not None else []
        )
        gate = parse_gate(recorded["gate"] if "gate" in recorded else config.get("gate"))
        selected = recorded.get("selected", target.selected)
        repeats = target.repeats
        if "runs" in recorded:  # the question runs this grading expected, counted exactly
            selected = int(recorded["runs"])
        elif selected is not None and repeats > 1:  # each question runs `repeats` trials
            selected = int(selected) * repeats
        must_pass = (
            _must_pass(store, grading_id, name, target.graders) if grading_id is not None else []
        )
        results.append(
            TargetResult(
                target=name,
                mode=target.mode,
                dataset=target.dataset.path,
                questions=questions,
                verdict=evaluate_gate(
                    questions,
                    gate,
                    must_pass=must_pass,
                    selected=selected,
                    run_id=manifest.run_id or run.name,
                ),
                graders=summarise_graders(questions),
                advisories=plan_notes(name, target.plan),
                plan=target.plan,
            )
        )
    return RunOutcome(
        run_id=manifest.run_id or run.name,
        run_dir=run.path,
        targets=results,
        manifest=manifest,
        grading_id=grading_id or 0,
        lost_spans=int(scope.get("lost_spans") or 0),
    )
