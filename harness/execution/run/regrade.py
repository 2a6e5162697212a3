"""Re-grading a stored run (seed 003 "Where the graders come from"): the stored answers and the
tool-call records read back from the run's trace file, scored again without running the agent.

What cannot be re-checked is said, never guessed: a question whose record is missing from the
trace file is degraded (its action graders would otherwise read the response text), and graders
that check the live environment (`state_grader`) carry their verdict over from the run's own
grading, because the environment closed when the question finished.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ...cost.usage import ModelCall, judge_meter
from ...errors import InputError
from ...inputs.config import Config, TargetConfig
from ...records import RunRecord, ToolRecord
from ...rundir.directory import RunDirectory
from ...rundir.outcome import RunOutcome
from ...rundir.store import ResultStore
from ...rundir.verdict import record_scope
from ...verdicts.result import QuestionResult
from ...verdicts.scoring import GraderVerdict, score_question
from ..executors.loops import run_without_loop
from ..question.accounting import with_judges
from ..question.conversation import agrade_conversation
from ..question.grading import AttachedGrader
from ..question.messages import messages_for_agent
from .lifecycle import decided
from .reopen import prepare_regrade

if TYPE_CHECKING:
    from ...graders.base import Grader, GraderServices
    from ...inputs.blocks.conversation import Turn

__all__ = ["aregrade", "aregrade_run", "reads_environment", "regrade_run"]

log = logging.getLogger(__name__)


def reads_environment(grader: Grader | type[Grader]) -> bool:
    """Graders whose verdict needs the question's live environment (gone after the run): they
    declare it in their `evidence` (`tracegrade.graders.declarations`)."""
    from ...graders.declarations import evidence_of

    return "environment" in evidence_of(grader)


def _input_messages(
    row: Mapping[str, object], stored: QuestionResult, system_prompt: str | None
) -> list[dict[str, object]]:
    """The messages graders get, as at run time: a conversation with the target's system
    prompt in place of a stored one; a conversation of turns or with a simulated user, the
    transcript the run stored."""
    if "turns" in row or "user" in row:
        return list(stored.answer.messages)
    value = row.get("input")
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if isinstance(value, list):
        return [dict(m) for m in messages_for_agent([dict(m) for m in value], system_prompt)]
    return list(stored.answer.messages)


def _current_rows(target: TargetConfig) -> dict[str, dict[str, object]]:
    from ...inputs.dataset import load_dataset

    dataset = load_dataset(target.dataset)
    return {str(q.id): q.row() for q in dataset.questions}


def _turns_sent(row: Mapping[str, object], stored: QuestionResult) -> list[Turn]:
    """The turns of a `turns` conversation the run sent (its user messages), as Turn models."""
    from ...inputs.blocks.conversation import Turn

    raw = row.get("turns")
    if not isinstance(raw, list):
        return []
    sent = sum(1 for m in stored.answer.messages if m.get("role") == "user")
    return [Turn(content=t) if isinstance(t, str) else Turn.model_validate(t) for t in raw][:sent]


async def _regrade_question(
    stored: QuestionResult,
    *,
    row: Mapping[str, object],
    record: ToolRecord | None,
    attached: Sequence[AttachedGrader],
    target: TargetConfig,
    services: GraderServices,
    previous: Mapping[str, GraderVerdict],
) -> QuestionResult:
    error, error_type = stored.error, stored.error_type
    if error is None and stored.answer.has_record and record is None:
        error = "no tool-call record for this question in the run's trace file (re-grade needs it)"
        error_type = "CaptureError"
    elif error is None and record is not None and not record.complete:
        error = f"capture failed: {'; '.join(record.problems) or 'record incomplete'}"
        error_type = "CaptureError"
    graders: list[GraderVerdict] = []
    judge_calls: list[ModelCall] = []
    if error is None:
        fresh = [a for a in attached if not reads_environment(a.grader)]
        messages = _input_messages(row, stored, target.system_prompt)
        run = RunRecord(
            question_id=stored.id,
            response=stored.answer.response,
            messages=list(messages),
            tool_calls=record,
            usage=dict(stored.answer.usage),
            latency_s=stored.answer.latency_s,
            trace_id=stored.trace_id,
            trial=stored.trial,
        )
        with judge_meter() as judge_calls:
            scored = await agrade_conversation(
                fresh,
                services=services,
                target=target,
                row=row,
                input=stored.answer.input,
                messages=list(messages),
                response=stored.answer.response,
                record=record if stored.answer.has_record else None,
                environment=None,
                run=run,
                turns=_turns_sent(row, stored),
            )
        by_id = {s.grader_id: s for s in scored}
        for a in attached:
            if a.grader.id in by_id:
                graders.append(by_id[a.grader.id])
                continue
            carried = previous.get(a.grader.id)
            spec = a.attachment.spec
            if carried is not None:
                reason = f"{carried.reason} (carried over from the run)"
                graders.append(carried.model_copy(update={"reason": reason, "spec": spec}))
            else:
                graders.append(
                    GraderVerdict(
                        grader_id=a.grader.id,
                        score=None,
                        min_score=float(a.grader.min_score),
                        max_score=float(a.grader.max_score),
                        reason="needs the question's live environment, which closed after the run",
                        error=True,
                        spec=spec,
                    )
                )
    # the stored result with this grading's verdicts: one record, nothing copied field by field
    return score_question(
        stored.model_copy(
            update={
                "graders": graders,
                "error": error,
                "error_type": error_type,
                "usage": with_judges(stored.answer.usage, judge_calls, services.prices),
            }
        )
    )


async def aregrade(
    *,
    store: ResultStore,
    run: RunDirectory,
    targets: Sequence[TargetConfig],
    attached: Mapping[str, Sequence[AttachedGrader]],
    services: GraderServices,
    grading_id: int,
    current_rows: bool = False,
    on_done: Callable[[QuestionResult], None] | None = None,
    ids: Sequence[str] = (),
) -> list[str]:
    """Re-score every stored question of `targets` (those matching `ids`, ids or globs, when
    given) under `grading_id`; returns notes."""
    from ...inputs.dataset import id_selected

    notes: list[str] = []
    first = run.own_grading(store)
    for target in targets:
        unreadable: list[str] = []
        # a run killed while worker processes ran it keeps their records in their own files
        # until `--resume` folds them in: read them where they are
        records = run.read_records(target.name, unreadable=unreadable)
        notes += [f"{target.name}: {u}" for u in unreadable]
        previous = {
            (q.id, q.trial): {g.grader_id: g for g in q.graders}
            for q in store.load_scores(grading_id=first, target=target.name)
        }
        rows = _current_rows(target) if current_rows else {}
        runs = [r for r in store.load_runs(target.name) if id_selected(r.id, ids)]
        missing = [r.id for r in runs if rows and r.id not in rows]
        if missing:
            notes.append(
                f"{target.name}: {len(missing)} question(s) of the run are not in the dataset any "
                "more; graded with the stored question"
            )
        for stored in runs:
            score = await _regrade_question(
                stored,
                row=rows.get(stored.id, stored.answer.row),
                record=records.get((stored.id, stored.trial)),
                attached=attached.get(target.name, ()),
                target=target,
                services=services,
                previous=previous.get((stored.id, stored.trial), {}),
            )
            store.commit_score(target.name, score, grading_id=grading_id)
            if on_done is not None:
                on_done(score)
    return notes


async def aregrade_run(
    config: Config,
    run: str | Path,
    *,
    current: bool = False,
    use_cache: bool = True,
    on_done: Callable[[QuestionResult], None] | None = None,
    ids: Sequence[str] = (),
    goal: str | None = None,
) -> RunOutcome:
    """Re-score a run's stored answers and records without re-running the agent: with the
    graders stored in the run (default), or with `current` the graders the config names now,
    matched by question id, or with `goal` the goal judge alone against that text (a question
    that recorded its own goal keeps it). `ids` (ids or globs) re-scores only those questions.
    Writes a new grading; judge answers come from the cache."""
    if goal is not None and current:
        raise InputError(
            "--goal cannot be combined with --current: the config's graders bring their own "
            "criteria, and --goal judges every question against one text with the goal judge",
            key="--goal",
            hint="drop --current, or give goal_judge a `goal:` option in the config instead",
        )
    if goal is not None and not goal.strip():
        raise InputError("--goal must not be blank", key="--goal")
    prepared = prepare_regrade(config, run, current=current, goal=goal, use_cache=use_cache)
    directory, manifest = prepared.directory, prepared.manifest
    targets, attached = prepared.targets, prepared.attached
    scope: dict[str, dict[str, object]] = {}
    if current:  # the config's graders now, held against the config's gate now
        scope = {t.name: {"gate": (t.raw or {}).get("gate")} for t in targets}
    with directory.store(redaction=prepared.settings.redaction) as store:
        if ids:
            from ...errors import NothingToRunError
            from ...inputs.dataset import check_id_patterns, id_selected

            stored = {t.name: {r.id for r in store.load_runs(t.name)} for t in targets}
            check_id_patterns(ids, (i for found in stored.values() for i in found))
            if not any(id_selected(i, ids) for found in stored.values() for i in found):
                raise NothingToRunError(
                    "--id matched no question of the run", hint=" ".join(f"--id {i}" for i in ids)
                )
            # the gate judges completeness against what this grading selected, not the run
            for name in manifest.targets:
                selected = sum(1 for i in stored.get(name, ()) if id_selected(i, ids))
                scope[name] = {**scope.get(name, {}), "selected": selected}
        specs = [{"target": n, **a.spec.to_json()} for n, at in attached.items() for a in at]
        mode = "goal" if goal is not None else "current" if current else "stored"
        # the latest only once every question is graded (`end_grading`)
        grading_id = store.new_grading(mode=mode, graders=specs, unfinished=True)
        record_scope(store, grading_id, scope)
        notes = await aregrade(
            store=store,
            run=directory,
            targets=targets,
            attached=attached,
            services=prepared.services,
            grading_id=grading_id,
            current_rows=current,
            on_done=on_done,
            ids=ids,
        )
        store.end_grading(grading_id)
        outcome = decided(directory, store, grading_id, targets, attached)
    outcome.notes[:0] = list(prepared.notes) + notes
    return outcome


def regrade_run(
    config: Config,
    run: str | Path,
    *,
    current: bool = False,
    use_cache: bool = True,
    on_done: Callable[[QuestionResult], None] | None = None,
    ids: Sequence[str] = (),
    goal: str | None = None,
) -> RunOutcome:
    """`aregrade_run` for callers without an event loop (the CLI)."""
    return run_without_loop(
        "regrade_run",
        lambda: aregrade_run(
            config, run, current=current, use_cache=use_cache, on_done=on_done, ids=ids, goal=goal
        ),
    )
