"""Promotion (seed 004): a question of a run copied into the writable dataset store, with the
agent's actual tool calls offered as draft `expected_tools`, marked for review.

The question is copied as the run stored it (its row as authored). When it has no
`expected_tools`, the calls the agent made (from the run's trace file, redacted as exported)
become the draft: each tool once, in the order first called, `should_run: true`, with the
scalar arguments of its first call as `args` (arguments redacted on export are left out, and
so are non-scalar ones, which an `args` assertion cannot hold). The draft is marked in
`metadata.needs_review` and in the store, so a person checks it before it counts: an agent's
behaviour is not yet the expected behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..inputs.datastore import DatasetStore
from ..redaction import REDACTED
from ..rundir.manifest import RunManifest

__all__ = [
    "Promoted",
    "clear_needs_review",
    "default_dataset_name",
    "draft_expected_tools",
    "promote_question",
    "promoted_row",
]


def draft_expected_tools(calls: list[Any]) -> list[dict[str, Any]]:
    """Each tool the agent called, once, in first-call order, with its first call's scalar
    arguments (redacted or structured values left out)."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for call in calls:
        if call.name in seen:
            continue
        seen.add(call.name)
        entry: dict[str, Any] = {"tool": call.name, "should_run": True}
        args = {
            k: v
            for k, v in dict(call.args).items()
            if (v is None or isinstance(v, str | int | float | bool))
            and v != REDACTED
            and not (isinstance(v, str) and REDACTED in v)
        }
        if args:
            entry["args"] = args
        out.append(entry)
    return out


def promote_question(
    run_dir: Path,
    store_path: Path,
    *,
    question_id: str,
    to: str | None = None,
    as_id: str | None = None,
    target: str | None = None,
    trial: int = 0,
) -> tuple[str, dict[str, Any], list[str]]:
    """Copy `question_id` of the run in `run_dir` into dataset `to` of the store at
    `store_path` (default name: the run's dataset name, else `promoted`). Returns (dataset
    name, the row written, the keys marked for review)."""
    promoted = promoted_row(
        run_dir, question_id=question_id, as_id=as_id, target=target, trial=trial
    )
    dataset_name = to or default_dataset_name(promoted.manifest, promoted.target)
    with DatasetStore(store_path) as store:
        store.add(
            dataset_name,
            promoted.row,
            needs_review=promoted.needs_review,
            origin=promoted.origin,
        )
    return dataset_name, promoted.row, promoted.needs_review


@dataclass(frozen=True, slots=True)
class Promoted:
    """A run's question as promotion writes it, wherever it goes."""

    row: dict[str, Any]
    needs_review: list[str]
    origin: str
    target: str
    manifest: RunManifest
    """The run's manifest."""


def promoted_row(
    run_dir: Path, *, question_id: str, as_id: str | None, target: str | None, trial: int
) -> Promoted:
    """The row of `question_id` as the run stored it, its draft `expected_tools` (when it has
    none and the run recorded calls) and where it came from in `metadata`."""
    from ..rundir.directory import RunDirectory
    from ..rundir.history import tool_calls_of

    run = RunDirectory(run_dir)
    manifest = run.manifest()
    with run.read_store() as results:
        runs = [r for r in results.load_runs(target) if r.id == question_id and r.trial == trial]
    if not runs:
        raise InputError(f"run {run_dir.name} has no question {question_id!r}", key="--id")
    if len({r.target for r in runs}) > 1:
        names = ", ".join(sorted({r.target for r in runs}))
        raise InputError(
            f"question {question_id!r} ran against several targets ({names})", key="--target"
        )
    stored = runs[0]
    # A key left empty is no expectation (a trace policy's question without a goal): a
    # dataset never writes `goal: null`.
    row = {k: v for k, v in stored.answer.row.items() if v is not None}
    row.pop("disabled", None)
    if as_id is not None:
        row["id"] = as_id
    needs_review: list[str] = []
    if not row.get("expected_tools") and stored.answer.has_record:
        calls = tool_calls_of(run_dir, stored.target).get((stored.id, stored.trial))
        if calls:
            row["expected_tools"] = draft_expected_tools(calls)
            needs_review.append("expected_tools")
    origin = f"run {manifest.run_id or run_dir.name} target {stored.target} question {question_id}"
    metadata = dict(row.get("metadata") or {})
    metadata["promoted_from"] = origin
    if needs_review:
        metadata["needs_review"] = needs_review
    row["metadata"] = metadata
    return Promoted(row, needs_review, origin, stored.target, manifest)


def default_dataset_name(manifest: RunManifest | None, target: str) -> str:
    """The name of the dataset `target` read in the run, as a store dataset name; `promoted`
    when it has none."""
    import re

    stored = manifest.target(target) if manifest is not None else None
    name = stored.dataset.name if stored is not None else None
    slug = re.sub(r"[^A-Za-z0-9_.\-]+", "_", str(name or "")).strip("_.-")
    return slug or "promoted"


def clear_needs_review(store_path: Path, name: str, question_id: str) -> None:
    """A person checked question `question_id` of dataset `name`: its review marks go (the
    store's and `metadata.needs_review`); a generated draft is accepted as `dataset review
    --accept` does (enabled, its draft mark removed)."""
    from .generate import DRAFT, review_drafts

    with DatasetStore(store_path) as store:
        found = {q.id: q for q in store.questions(name)}.get(question_id)
        if found is None:
            raise InputError(f"dataset {name!r} has no question {question_id!r}", key="id")
        draft = DRAFT in found.needs_review
    if draft:
        review_drafts(store_path, name, accept=[question_id])
    with DatasetStore(store_path) as store:
        q = {q.id: q for q in store.questions(name)}[question_id]
        row = dict(q.row)
        metadata = {k: v for k, v in (row.get("metadata") or {}).items() if k != "needs_review"}
        if metadata:
            row["metadata"] = metadata
        else:
            row.pop("metadata", None)
        store.update(name, row, needs_review=[])
