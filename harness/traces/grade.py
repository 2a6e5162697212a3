"""Grading traces made outside tracegrade into a normal run directory.

Each agent trace paired with a dataset question is graded as `tracegrade run` grades a question
it ran itself: the same graders attached the same way, the same context, the same scoring, the
same store rows and the same verdict (`decide_run`). Only the agent run is replaced by the
trace. The run directory's trace file holds each paired trace's record in tracegrade's own
dialect (under the source trace's id), so `grade`, `show`, `compare`, `label`, `promote` and the
HTML report work on it unchanged.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from ..capture.tracefile import graph_attributes, redacted_attributes
from ..errors import EvaluationError, NothingToRunError
from ..execution.executors.loops import run_without_loop
from ..execution.question.accounting import account
from ..execution.question.conversation import Ending, TurnResult
from ..execution.question.runner import agrade_recorded
from ..execution.run.lifecycle import decided
from ..execution.run.prepare import prepare_run
from ..execution.run.services import redaction_notes
from ..inputs.config import Config
from ..otel import semconv as sc
from ..records import RunRecord, ToolRecord
from ..redaction import RedactionPolicy
from ..rundir.evaluations import span_events
from ..rundir.manifest import RunSource
from ..rundir.outcome import RunOutcome, Selection
from ..rundir.store import ResultStore
from ..rundir.verdict import record_lost_spans, record_scope
from ..verdicts.result import QuestionResult
from .archive import Pairer
from .conversations import ConversationBook
from .dialects import AgentTrace
from .policy import TracePolicy
from .spill import SpilledPairs, TraceSpill
from .usage_spans import NO_TOKEN_COUNTS

__all__ = [
    "COMMIT_BATCH",
    "GradedTrace",
    "agrade_traces",
    "commit_graded",
    "grade_paired",
    "grade_traces",
    "record_line",
    "renumbered_line",
]


_json_str = json.encoder.encode_basestring  # ensure_ascii=False's string encoder (C when built)
_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}  # as json.dumps writes them


def _value_text(value: Any) -> str:
    if type(value) is str:  # most values: first, without the isinstance checks
        return '{"stringValue":' + _json_str(value) + "}"
    if isinstance(value, bool):
        return '{"boolValue":true}' if value else '{"boolValue":false}'
    if isinstance(value, int):
        return '{"intValue":"' + str(value) + '"}'
    if isinstance(value, float):
        text = float.__repr__(value)
        return '{"doubleValue":' + _NON_FINITE.get(text, text) + "}"
    if isinstance(value, (list, tuple)):
        items = ",".join('{"stringValue":' + _json_str(str(x)) + "}" for x in value)
        return '{"arrayValue":{"values":[' + items + "]}}"
    return '{"stringValue":' + _json_str(str(value)) + "}"


def _kv(attributes: dict[str, Any]) -> str:
    """OTLP JSON key-values as compact JSON text, None values left out: the record line is
    written as text directly (a quarter less than building dicts for json.dumps), the same
    document (tests/test_trace_record_line.py holds it to the dict-built one)."""
    return ",".join(
        '{"key":' + _json_str(key) + ',"value":' + _value_text(value) + "}"
        for key, value in attributes.items()
        if value is not None
    )


def record_line(
    trace: AgentTrace,
    record: ToolRecord,
    *,
    run_id: str,
    target: str,
    question_id: str,
    trial: int,
    policy: RedactionPolicy,
    events: Sequence[tuple[int, dict[str, Any]]] = (),
) -> str:
    """One OTLP JSON line holding a question span and the record's tool spans in tracegrade's
    own dialect (what `read_trial_records` reads back into the same record); `events` (time in
    ns, attributes) are the question's grades, as `gen_ai.evaluation.result` events."""
    root_id = trace.trace_id[-16:].rjust(16, "0")
    question = {
        sc.OI_SPAN_KIND: sc.OI_KIND_CHAIN,
        sc.GEN_AI_CONVERSATION_ID: sc.conversation_id(
            run_id=run_id, target=target, question_id=question_id, trial=trial
        ),
        sc.TG_QUESTION_ID: question_id,
        sc.AGENTEVALS_CASE_ID: question_id,
        sc.TG_RUN_ID: run_id,
        sc.TG_TRIAL: trial,
        sc.TG_TARGET: target,
        sc.TG_RECORD_COMPLETE: record.complete,
        sc.TG_RECORD_PROBLEMS: list(record.problems) or None,
        sc.OI_INPUT_VALUE: trace.user_message,
        sc.OI_OUTPUT_VALUE: trace.answer,
        sc.TG_SOURCE_DIALECT: trace.dialect,
        sc.TG_SOURCE_ROOT_SPAN_ID: trace.root_span_id,
        sc.TG_TURN_STARTS: list(record.turn_starts) or None,
        **graph_attributes(record.nodes, record.offered, record.answer_ns),
    }
    trace_id = _json_str(trace.trace_id)
    head = [
        '{"traceId":'
        + trace_id
        + ',"spanId":'
        + _json_str(root_id)
        + ',"name":'
        + _json_str(sc.SPAN_QUESTION)
        + ',"kind":1,"startTimeUnixNano":"'
        + str(trace.start_ns)
        + '","endTimeUnixNano":"'
        + str(trace.end_ns)
        + '","attributes":['
        + _kv(redacted_attributes(question, policy=policy))
        + '],"status":{"code":'
        + ("2" if trace.error else "0")
        + "}"
    ]
    if events:
        head.append(
            ',"events":['
            + ",".join(
                '{"timeUnixNano":"'
                + str(ns)
                + '","name":'
                + _json_str(sc.GEN_AI_EVALUATION_RESULT)
                + ',"attributes":['
                + _kv(redacted_attributes(attrs, policy=policy))
                + "]}"
                for ns, attrs in events
            )
            + "]"
        )
    spans = ["".join(head) + "}"]
    for n, call in enumerate(record):
        result = call.result
        encoding = sc.RESULT_TEXT if isinstance(result, str) or result is None else sc.RESULT_JSON
        attributes = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
            sc.GEN_AI_TOOL_NAME: call.name,
            sc.GEN_AI_TOOL_CALL_ID: call.call_id,
            sc.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps(dict(call.arguments), ensure_ascii=False),
            sc.GEN_AI_TOOL_CALL_RESULT: (
                result if encoding == sc.RESULT_TEXT else json.dumps(result, ensure_ascii=False)
            ),
            sc.TG_RESULT_ENCODING: encoding,
            sc.ERROR_TYPE: call.error_type,
            sc.TG_OUTCOME: call.outcome.value,
            sc.TG_SEQ: call.seq,
            sc.TG_QUALIFIED_ID: call.qualified_id,
            sc.TG_AGENT: call.agent,
            sc.TG_DEPTH: call.depth,
            sc.TG_MODEL_TURN: call.model_turn,
            sc.TG_INDEX_IN_TURN: call.index_in_turn,
        }
        status = '{"code":' + ("2" if call.outcome.value == "error" else "0")
        if call.error_message:
            status += ',"message":' + _json_str(policy.text(call.error_message))
        spans.append(
            '{"traceId":'
            + trace_id
            + ',"spanId":'
            + _json_str(call.span_id or f"{n + 1:016x}")
            + ',"parentSpanId":'
            + _json_str(root_id)
            + ',"name":'
            + _json_str(f"{sc.SPAN_EXECUTE_TOOL} {call.name}")
            + ',"kind":1,"startTimeUnixNano":"'
            + str(call.start_ns)
            + '","endTimeUnixNano":"'
            + str(call.end_ns)
            + '","attributes":['
            + _kv(redacted_attributes(attributes, policy=policy))
            + '],"status":'
            + status
            + "}}"
        )
    return (
        '{"resourceSpans":[{"resource":{"attributes":['
        + _kv({"service.name": "tracegrade"})
        + ']},"scopeSpans":[{"scope":{"name":"tracegrade.traces"},"spans":['
        + ",".join(spans)
        + "]}]}]}"
    )


COMMIT_BATCH = 64
"""The most graded traces committed in one transaction (a kill loses at most these)."""


@dataclass(slots=True)
class GradedTrace:
    """A trace graded as a question's trial, not yet committed (`commit_graded`)."""

    line: str
    """Its record in the run's trace file (`record_line`)."""
    result: QuestionResult


async def grade_paired(
    plan: Any, question: Any, trace: AgentTrace, trial: int, *, policy: RedactionPolicy
) -> GradedTrace:
    """Grade one trace as question `question`'s trial `trial` with the plan's graders, as the
    runner grades a question it ran; nothing is written until `commit_graded`."""
    record = trace.record
    run = RunRecord(
        question_id=str(question.id),
        trial=trial,
        response=trace.answer,
        error=trace.error,
        error_type=trace.error_type,
        trace_id=trace.trace_id,
        latency_s=max(0, trace.end_ns - trace.start_ns) / 1e9,
        tool_calls=record,
    )
    # what the agent used, from the spans' token counts, priced by the run's table
    calls = trace.model_calls
    run.usage = account(plan.services.prices, calls or [], record, run.latency_s)
    if calls is None:
        run.usage["unavailable"] = NO_TOKEN_COUNTS
    if run.error is None and not record.complete:  # as the runner does
        problems = "; ".join(record.problems) or "record incomplete"
        run.error = f"capture failed: {problems}"[:2000]
        run.error_type = "CaptureError"
    ending = None
    if trace.turns:  # a conversation of several traces: graded whole and per turn, as a run's
        ending = Ending(
            state=None, turns=[TurnResult(i, u, a) for i, (u, a) in enumerate(trace.turns)]
        )
        run.messages = [
            m
            for user, answer in trace.turns
            for m in ({"role": "user", "content": user}, {"role": "assistant", "content": answer})
        ]
    result = await agrade_recorded(plan, question, run, record, ending=ending)
    line = record_line(
        trace,
        record,
        run_id=str(plan.run_id),
        target=plan.target.name,
        question_id=str(question.id),
        trial=trial,
        policy=policy,
        events=span_events(result),
    )
    return GradedTrace(line, result)


def _trial_texts(
    *, run_id: str, target: str, question_id: str, trial: int, policy: RedactionPolicy
) -> list[str]:
    """The question span's attributes that name its trial, as `record_line` writes them."""
    attributes = {
        sc.GEN_AI_CONVERSATION_ID: sc.conversation_id(
            run_id=run_id, target=target, question_id=question_id, trial=trial
        ),
        sc.TG_TRIAL: trial,
    }
    return [_kv({k: v}) for k, v in redacted_attributes(attributes, policy=policy).items()]


def renumbered_line(line: str, *, run_id: str, run: QuestionResult, policy: RedactionPolicy) -> str:
    """A record line written as trial 0 (`record_line`) made trial `run.trial`'s: its first
    occurrence of each trial attribute is the question span's (the first span, whose earlier
    attributes are tracegrade's own)."""
    if run.trial == 0:
        return line
    ids = {"run_id": run_id, "target": run.target, "question_id": run.id}
    was = _trial_texts(**ids, trial=0, policy=policy)
    now = _trial_texts(**ids, trial=run.trial, policy=policy)
    for old, new in zip(was, now, strict=True):
        line = line.replace(old, new, 1)
    return line


def commit_graded(
    store: ResultStore,
    grading_id: int,
    lines: TextIO,
    graded: Sequence[GradedTrace],
    *,
    numbered: tuple[str, RedactionPolicy] | None = None,
) -> None:
    """Write graded traces: their records to the run's trace file (`lines`, flushed first, so
    a record is on disk before its row), then their rows to `store` under `grading_id` in one
    transaction (all of them or none). With `numbered` (the run id and redaction policy), the
    traces were graded as trial 0 and each gets the next free trial of its question, decided
    in the store's transaction: several processes commit into one monitor run."""
    if not graded:
        return

    def write() -> None:
        lines.write("".join(g.line + "\n" for g in graded))
        lines.flush()

    items = [g.result for g in graded]
    if numbered is None:
        write()
        store.commit_questions(items, grading_id=grading_id)
        return
    run_id, policy = numbered

    def number() -> None:
        for g in graded:
            g.line = renumbered_line(g.line, run_id=run_id, run=g.result, policy=policy)
        write()

    store.commit_questions(items, grading_id=grading_id, numbered=number)


async def agrade_traces(
    config: Config,
    traces: TraceSpill,
    *,
    target: str,
    sources: Sequence[str] = (),
    use_cache: bool = True,
    run_id: str | None = None,
    since_ns: int | None = None,
    until_ns: int | None = None,
    policy: TracePolicy | None = None,
    conversations: ConversationBook | None = None,
    digest: Callable[[], Any] | None = None,
    pool: Callable[..., Any] | None = None,
) -> RunOutcome:
    """Grade the agent traces of `traces` that started in [since, until) against `target`'s
    dataset and graders into a new run directory. The traces are read, paired and graded one at
    a time from the spill: memory does not grow with the archive while they are. With a trace
    `policy` (its graders attached to the config's target, `policy.with_policy`), traces that
    match no question are graded by it. With `conversations`, the traces of one conversation
    are graded together, as one question run of several turns. With `digest` (the reports'
    fold: `tracegrade.reports.console.ReportDigest`) the verdict is folded from the store a page
    at a time, never held, so memory stays flat whatever the archive's size; without it the
    outcome holds every question's score, as a run's does. With `pool` (what makes the grading
    workers given the run's `directory`: `archive_workers.ArchiveWorkers`, N bound by the
    CLI's --workers N), the paired traces are graded in N processes: the same rows, records
    and verdict; a worker that dies is an error (exit 3)."""
    prepared = prepare_run(
        config,
        Selection(targets=(target,)),
        use_cache=use_cache,
        run_id=run_id,
        load_agents=False,  # the agent ran elsewhere: nothing of it is imported here
        source="traces",
    )
    plan = prepared.plans[target]
    # started now: the workers build their plans while the archive is paired
    workers = pool(directory=prepared.directory) if pool is not None else None
    try:
        pairs = SpilledPairs(traces)
        pairs.pair(
            conversations.stream(traces.traces()) if conversations is not None else traces.traces(),
            Pairer(plan.questions),
            since_ns=since_ns,
            until_ns=until_ns,
            policy=policy,
        )
        if not len(pairs):  # nothing to grade: no run directory left behind
            shutil.rmtree(prepared.run_dir, ignore_errors=True)
            if traces.dropped_agent_spans:  # the agent traces were there, and were lost
                raise EvaluationError(
                    "no agent trace could be graded: " + "; ".join(traces.notes()),
                    hint="a lost trace is never a pass; split the archive or raise the span cap",
                )
            if traces.agent_traces <= pairs.outside_window:
                where = ", ".join(sources) or "the traces"
                read = "; ".join(traces.notes() + pairs.notes(0)[1:])
                raise NothingToRunError(
                    f"no agent trace in {where} ({read})",
                    hint="the spans need a tracegrade, OpenInference or OTel GenAI agent span",
                )
            raise NothingToRunError(
                f"no trace matched a question of target {target!r}",
                hint="; ".join(traces.notes() + pairs.notes(len(plan.questions))),
            )
        manifest = prepared.manifest
        entry = manifest.targets[target]
        # the selection is what the traces covered: a question nobody asked in production is not
        # a question the run failed to answer
        entry.selected = len(pairs.questions) + len(pairs.by_policy)
        entry.repeats = pairs.repeats()
        manifest.source = RunSource(
            kind="traces",
            paths=[str(s) for s in sources],
            pairing=dict(pairs.counts),
            unmatched=pairs.unmatched,
            ambiguous=pairs.ambiguous_count,
        )
        run_dir = prepared.directory
        if workers is not None:  # built their plans from the manifest: rewritten only once they did
            await workers.started()
        run_dir.write_manifest(manifest)
        notes = list(prepared.notes) + traces.notes() + pairs.notes(len(plan.questions))
        if conversations is not None:
            notes += conversations.notes()
        if policy:
            notes.append(policy.note())
        plan.run_id = prepared.run_id
        trace_file = run_dir.trace_file(target)
        run_dir.traces_dir.mkdir(parents=True, exist_ok=True)
        by_id = {str(q.id): q for q in plan.questions}

        def question_of(qid: str, trace: AgentTrace) -> Any:
            if qid in by_id:
                return by_id[qid]
            assert policy is not None  # only the policy pairs a trace with a question of its own
            plan.ordinals.setdefault(qid, len(plan.ordinals))
            return policy.question(trace)

        with run_dir.store(redaction=config.redaction) as store, run_dir.lock(store):
            grading_id = prepared.directory.own_grading(store, manifest=prepared.manifest)
            # what the traces covered, trial by trial: a question traced once is not a missing trial
            record_scope(store, grading_id, {target: {"runs": len(pairs)}})
            lost_spans: int = 0  # spans of the traces no worker graded
            died: list[str] = []  # the workers that died, and what they held
            if workers is not None:
                lost_spans, died = await workers.grade(pairs, plan)
                run_dir.fold_traces(target)  # each worker's records, in the target's trace file
            else:
                with trace_file.open("a", encoding="utf-8") as lines:
                    await _grade_here(pairs, question_of, plan, store, grading_id, lines, config)
            # agent traces dropped for their size were never graded, nor the traces a dead worker
            # held: the run is incomplete
            record_lost_spans(store, grading_id, traces.dropped_agent_spans + lost_spans)
            # folded from one pass over the store, never held: memory stays flat however many
            # traces the archive had (the reports that list every question read the store again)
            outcome = decided(
                run_dir,
                store,
                grading_id,
                prepared.targets,
                prepared.attached,
                digest=(lambda _target: digest()) if digest is not None else None,
            )
        outcome.notes[:0] = redaction_notes(config.redaction) + notes + uncounted_note(outcome)
        if died:  # never a pass, lost spans or not
            outcome.notes.extend(died)
            outcome.extra_exit_codes.append(3)
        return outcome
    finally:
        if workers is not None:
            workers.close()


async def _grade_here(
    pairs: SpilledPairs,
    question_of: Callable[[str, AgentTrace], Any],
    plan: Any,
    store: ResultStore,
    grading_id: int,
    lines: TextIO,
    config: Config,
) -> None:
    """Grade every pair in this process, committed `COMMIT_BATCH` at a time."""
    batch: list[GradedTrace] = []
    try:
        for question, trace, _how, trial in pairs.trials(question_of):
            batch.append(await grade_paired(plan, question, trace, trial, policy=config.redaction))
            if len(batch) >= COMMIT_BATCH:
                done, batch = batch, []
                commit_graded(store, grading_id, lines, done)
    finally:  # what was graded is kept however the loop ends (an interrupt too)
        commit_graded(store, grading_id, lines, batch)


def uncounted_note(outcome: RunOutcome) -> list[str]:
    """One line when some graded traces carried no token counts (their budgets do not apply)."""
    n = sum(
        t.digest.unavailable
        if t.digest is not None
        else sum(1 for q in t.questions if q.usage and q.usage.unavailable)
        for t in outcome.targets
    )
    return [f"{n} trace(s): {NO_TOKEN_COUNTS}"] if n else []


def grade_traces(config: Config, traces: TraceSpill, **options: Any) -> RunOutcome:
    """`agrade_traces` for callers without an event loop (the CLI)."""
    return run_without_loop("grade_traces", lambda: agrade_traces(config, traces, **options))
