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

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..inputs.config import GateConfig, parse_gate
from ..verdicts.budgets import question_budget_failures
from ..verdicts.gate import GateFold, evaluate_gate
from ..verdicts.plan import plan_notes
from ..verdicts.result import QuestionResult
from ..verdicts.scoring import GraderFold, summarise_graders
from .directory import RunDirectory
from .manifest import GraderRecord, RunManifest
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


def _must_pass(
    store: ResultStore, grading_id: int, name: str, manifest_graders: list[GraderRecord]
) -> list[str]:
    """The target's must-pass graders in that grading (the graders it stored), else in the
    manifest."""
    for grading in store.gradings():
        if grading["grading_id"] == grading_id and grading["graders"]:
            specs = [g for g in grading["graders"] if g.get("target") == name]
            return [str(g["id"]) for g in specs if g.get("must_pass")]
    return [g.id for g in manifest_graders if g.must_pass]


def decide_run(
    run: RunDirectory,
    store: ResultStore,
    grading_id: int | None,
    *,
    manifest: RunManifest | None = None,
    digest: Callable[[str], Any] | None = None,
) -> RunOutcome:
    """The verdict of grading `grading_id` of the run in `run` (whose store is open as
    `store`): every target's questions, gate verdict and grader summaries, and the lost spans,
    as a `RunOutcome` whose `exit_code` is the run's. `grading_id` None: nothing was graded yet
    (every target has no question; a target that selected some is incomplete).

    With `digest` (a streamed run: `grade-traces` over an archive of any size) the scores are
    read a page at a time and folded, never held: the verdict, the grader summaries and
    `digest(target)` (an object whose `add(score)` takes each score, the reports' own fold) see
    each once; the target's `questions` is then `StoredScores`, read from the store again by
    whoever walks it."""
    manifest = manifest if manifest is not None else run.manifest()
    scope: dict[str, Any] = (
        dict(store.meta(_scope_key(grading_id), {}) or {}) if grading_id is not None else {}
    )
    own = scope.get("targets") or {}
    results = []
    for name, target in manifest.targets.items():
        config = target.config
        recorded = own.get(name) or {}
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
        run_id = manifest.run_id or run.name
        if digest is not None and grading_id is not None:
            fold, graders, own_digest = (
                GateFold(gate, must_pass=must_pass),
                GraderFold(),
                digest(name),
            )
            for q in store.iter_scores(grading_id=grading_id, target=name):
                fold.add(q)
                graders.add(q)
                own_digest.add(q)
            verdict = fold.verdict(selected=selected, run_id=run_id)
            results.append(
                TargetResult(
                    target=name,
                    mode=target.mode,
                    dataset=target.dataset.path,
                    questions=StoredScores(store.path, grading_id, name, gate, verdict.questions),  # type: ignore[arg-type]
                    verdict=verdict,
                    graders=graders.summaries(),
                    advisories=plan_notes(name, target.plan),
                    plan=target.plan,
                    digest=own_digest,
                )
            )
            continue
        questions = (
            store.load_scores(grading_id=grading_id, target=name) if grading_id is not None else []
        )
        results.append(
            TargetResult(
                target=name,
                mode=target.mode,
                dataset=target.dataset.path,
                questions=questions,
                verdict=evaluate_gate(
                    questions, gate, must_pass=must_pass, selected=selected, run_id=run_id
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


class StoredScores:
    """A streamed target's question scores, read from its store a page at a time each time
    they are walked (the JSON and Markdown reports list every question), with the gate's
    budgets applied as the verdict applied them. Nothing is kept between walks."""

    def __init__(self, path: Any, grading_id: int, target: str, gate: GateConfig, count: int):
        self.path, self.grading_id, self.target, self.gate = path, grading_id, target, gate
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __bool__(self) -> bool:
        return self.count > 0

    def __iter__(self) -> Iterator[QuestionResult]:
        with ResultStore(self.path) as store:
            for q in store.iter_scores(grading_id=self.grading_id, target=self.target):
                q.over_budget = question_budget_failures(q.usage, self.gate)
                yield q

    def __getitem__(self, index: Any) -> Any:
        return list(self)[index]
