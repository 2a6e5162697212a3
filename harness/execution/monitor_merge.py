"""`tracegrade merge` of monitor runs: several `tracegrade receive` processes behind a load
balancer that routes by trace id (the OpenTelemetry Collector's `loadbalancing` exporter), each
grading its share of the traces into its own monitor run, made one run.

Each trace was graded by one receiver, so the merged run holds every receiver's rows. A
question traced several times has trials numbered per receiver; in the merged run they are
numbered on, run after run (in the order given), in the store and in the trace file alike. What
the verdict is judged by adds up: the question runs each receiver graded, the spans each lost
(dropped at a bound, failed grading), and the rollups per hour. So the merged run's verdict is
the one a single receiver would have given the same traces.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..otel import semconv as sc
from ..rundir.directory import RunDirectory
from ..rundir.manifest import MergedShard, RunManifest
from ..rundir.monitoring import MONITOR_META
from ..rundir.store import ResultStore
from .run.shards import MergeResult, _differences, _Verbatim, copy_annotation, merge_runs, staged

__all__ = ["is_monitor_run", "merge_any", "merge_monitor_runs"]

_LISTED = 20


def is_monitor_run(manifest: RunManifest) -> bool:
    return manifest.source is not None and manifest.source.kind == "receive"


def merge_any(run_dirs: Sequence[Path | str], out: Path | str) -> MergeResult:
    """`tracegrade merge`: monitor runs merged as monitor runs, CI shards as shards."""
    dirs, out = [Path(d) for d in run_dirs], Path(out)
    taken = out.exists() and any(out.iterdir())  # merge_runs refuses it, nothing read
    if not taken and any(is_monitor_run(RunDirectory(d).manifest()) for d in dirs):
        return merge_monitor_runs(dirs, out)
    return merge_runs(dirs, out)


def merge_monitor_runs(run_dirs: Sequence[Path], out: Path) -> MergeResult:
    """Merge the monitor runs `run_dirs` (of one target, config, dataset, graders and
    tracegrade version) into the new run directory `out`."""
    identities = [RunDirectory(d).manifest() for d in run_dirs]
    ref = identities[0]
    problems = []
    for run_dir, identity in zip(run_dirs, identities, strict=True):
        if not is_monitor_run(identity):
            problems.append(f"{run_dir} is not a monitor run (tracegrade receive)")
            continue
        differs = _differences(ref, identity)
        if differs:
            problems.append(f"{run_dir} differs from {run_dirs[0]} in " + "; ".join(differs))
    seen: set[str] = set()
    for run_dir, identity in zip(run_dirs, identities, strict=True):
        if identity.run_id in seen:
            problems.append(f"monitor run {identity.run_id} given twice ({run_dir})")
        seen.add(identity.run_id)
    if problems:
        raise InputError(
            "cannot merge these monitor runs: " + " | ".join(problems),
            key="RUN_DIR",
            hint="merge the monitor runs of one target's receivers: the same config, dataset, "
            "graders and tracegrade version, each run once",
        )
    runs = list(zip(run_dirs, identities, strict=True))
    staged(out, lambda merged: _write(runs, merged, out))
    result = MergeResult(
        run_dir=out, shards=len(run_dirs), merged=list(range(1, len(run_dirs) + 1))
    )
    result.notes.append(
        f"merged {len(run_dirs)} monitor run(s): "
        + ", ".join(identity.run_id for identity in identities)
    )
    return result


def _write(runs: list[tuple[Path, RunManifest]], merged: RunDirectory, out: Path) -> None:
    from ..rundir.verdict import record_lost_spans, record_scope

    ref = runs[0][1]
    manifest = ref.model_copy(deep=True)
    manifest.run_id = out.name
    manifest.created = min(m.created or "" for _, m in runs)
    manifest.merged_from = [
        MergedShard(run_id=m.run_id, shard=f"{k}/{len(runs)}", run_dir=str(d))
        for k, (d, m) in enumerate(runs, 1)
    ]
    merged.copy_graders_from(RunDirectory(runs[0][0]))  # equal by sha256
    merged.traces_dir.mkdir(exist_ok=True)
    targets = list(ref.targets)
    following: Counter[tuple[str, str]] = Counter()  # the next trial of each question
    scope_runs: Counter[str] = Counter()
    lost = 0
    hours: dict[str, Counter[str]] = {}
    listed: dict[str, list[str]] = {}
    sample = 1.0
    with merged.store(redaction=_Verbatim()) as store:  # type: ignore[arg-type]
        grading_id = merged.own_grading(store, manifest=manifest)  # written last
        for run_dir, _identity in runs:
            source = RunDirectory(run_dir)
            trials = _copy_rows(source, store, grading_id, following)
            for name in targets:
                files = [source.trace_file(name), *source.trace_parts(name)]
                _copy_lines([f for f in files if f.is_file()], merged.trace_file(name), trials)
            scope, meta = _scope_and_meta(source)
            for name, values in (scope.get("targets") or {}).items():
                scope_runs[name] += int(values.get("runs") or 0)
            lost += int(scope.get("lost_spans") or 0)
            sample = (meta or {}).get("sample", sample)
            for hour, counts in ((meta or {}).get("hours") or {}).items():
                hours.setdefault(hour, Counter()).update(counts)
            for kind, ids in ((meta or {}).get("listed") or {}).items():
                listed.setdefault(kind, [])
                listed[kind] += [i for i in ids if i not in listed[kind]][
                    : _LISTED - len(listed[kind])
                ]
        record_scope(store, grading_id, {name: {"runs": scope_runs[name]} for name in targets})
        record_lost_spans(store, grading_id, lost)
        store.set_meta(
            MONITOR_META,
            {
                "hours": {h: dict(c) for h, c in sorted(hours.items())},
                "listed": listed,
                "sample": sample,
            },
        )
    merged.write_manifest(manifest)  # last: only a whole directory is a run


def _scope_and_meta(run: RunDirectory) -> tuple[dict[str, Any], Any]:
    with run.read_store() as store:
        own = store.own_grading_id()
        scope = store.meta(f"grading:{own}", {}) if own is not None else {}
        return dict(scope or {}), store.meta(MONITOR_META)


def _copy_rows(
    run: RunDirectory, store: ResultStore, grading_id: int, following: Counter[tuple[str, str]]
) -> dict[tuple[str, str, int], int]:
    """The run's rows (the grading its receiver ran), each question's trials numbered on from
    `following`; returns (target, question, old trial) -> new trial."""
    trials: dict[tuple[str, str, int], int] = {}
    with run.read_store() as source:
        own = source.own_grading_id()
        if own is None:
            return trials
        scores = {(s.target, s.id, s.trial): s for s in source.load_scores(grading_id=own)}
        items = []
        for row in sorted(source.load_runs(), key=lambda r: (r.target, r.id, r.trial)):
            score = scores.get((row.target, row.id, row.trial))
            if score is None:
                continue
            key = (row.target, row.id)
            trial = following[key]
            following[key] += 1
            trials[(row.target, row.id, row.trial)] = trial
            score.trial = trial
            score.answer = row.answer  # the receiver's grades with its stored answer
            items.append(score)
        for start in range(0, len(items), 500):
            store.commit_questions(items[start : start + 500], grading_id=grading_id)
        for label in source.load_annotations():
            new = trials.get((label.target, label.question_id, label.trial))
            if new is not None:
                copy_annotation(store, label, trial=new)
    return trials


def _copy_lines(sources: list[Path], dest: Path, trials: dict[tuple[str, str, int], int]) -> None:
    """The records of a run's trace files, each question span's trial made its merged one."""
    with dest.open("a", encoding="utf-8") as sink:
        for path in sources:
            with path.open(encoding="utf-8") as lines:
                for line in lines:
                    if line.strip():
                        sink.write(_renumbered(line.rstrip("\n"), trials) + "\n")


def _renumbered(line: str, trials: dict[tuple[str, str, int], int]) -> str:
    try:
        request = json.loads(line)
    except ValueError:
        return line  # a torn line stays what it was: the reader skips it alone
    changed = False
    for rs in request.get("resourceSpans") or ():
        for ss in rs.get("scopeSpans") or ():
            for span in ss.get("spans") or ():
                if span.get("name") == sc.SPAN_QUESTION:
                    changed |= _renumber_span(span, trials)
    return json.dumps(request, ensure_ascii=False) if changed else line


def _renumber_span(span: dict[str, Any], trials: dict[tuple[str, str, int], int]) -> bool:
    attributes = {a.get("key"): a.get("value") or {} for a in span.get("attributes") or ()}

    def text(key: str) -> str | None:
        value = attributes.get(key) or {}
        return value.get("stringValue")

    target, question = text(sc.TG_TARGET), text(sc.TG_QUESTION_ID)
    trial = int((attributes.get(sc.TG_TRIAL) or {}).get("intValue") or 0)
    new = trials.get((str(target), str(question), trial))
    if new is None or new == trial:
        return False
    for attribute in span["attributes"]:
        if attribute.get("key") == sc.TG_TRIAL:
            attribute["value"] = {"intValue": str(new)}
        elif attribute.get("key") == sc.GEN_AI_CONVERSATION_ID and text(sc.TG_RUN_ID):
            attribute["value"] = {
                "stringValue": sc.conversation_id(
                    run_id=str(text(sc.TG_RUN_ID)),
                    target=str(target),
                    question_id=str(question),
                    trial=new,
                )
            }
    return True
