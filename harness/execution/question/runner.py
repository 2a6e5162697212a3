"""The runner: every selected question of a target through the agent and its graders.

asyncio with bounded concurrency (a semaphore per target) and a per-question timeout. An agent
exception, a timeout or a capture failure makes that question errored (score 0, counted, never
skipped; seed 003) and the run goes on. Each finished question is committed to the store at
once, so an interrupted run loses at most the questions in flight.

Per question: a fresh environment when the target declares one (the agent factory is called with
it); otherwise one graph built once and shared. The agent gets the question's messages (the
target's system prompt replacing a stored one); the response is the last AI message's text;
graders get the flattened transcript the agent received as `input` and the context of
`tracegrade.graders.context`.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...cost.usage import ModelCall, judge_meter
from ...errors import ConfigError
from ...graders.base import GraderServices
from ...inputs.config import TargetConfig
from ...inputs.dataset import Question
from ...records import RunRecord, ToolRecord
from ...rundir.evaluations import span_events
from ...verdicts.budgets import question_budget_failures
from ...verdicts.result import QuestionAnswer, QuestionResult
from ...verdicts.scoring import GraderVerdict, score_question
from ..executors.watchdog import Overran, QuestionDeadline
from . import workfolders
from .accounting import account, with_judges
from .cassettes import close_session, open_session
from .commits import BATCH_S, CommitBatch
from .conversation import (
    Ending,
    agrade_conversation,
    arun_conversation,
    outcome_expected,
    transcript,
    with_checkpointer,
)
from .errortext import bounded, describe_agent_error, traceback_text
from .grading import (
    AttachedGrader,
)
from .messages import (
    _role_of,
    _text_of,
    grader_input,
    last_ai_text,
    messages_for_agent,
    to_role_dicts,
)
from .world import WORLD_KEY, question_world

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from opentelemetry.trace import Tracer

    from ...capture.recorder import Recorder
    from ...environment import Environment
    from .agent import Agent, AgentFactory

__all__ = [
    "TargetPlan",
    "arun_target",
    "build_shared",
    "configurable_for",
    "last_ai_text",
    "messages_for_agent",
    "to_role_dicts",
]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class TargetPlan:
    """One target ready to run: its questions, graders and agent factory."""

    target: TargetConfig
    questions: list[Question]
    """`tracegrade.inputs.dataset.Question`s still to run, in selection order."""
    attached: list[AttachedGrader]
    services: GraderServices
    dataset_name: str = ""
    ordinals: dict[str, int] = field(default_factory=dict)
    """Question id -> position in the full selection (kept across resumes)."""
    factory: AgentFactory | Agent | None = None
    """The loaded agent factory (agent mode) or chat model / factory (chat mode)."""
    environment_factory: Callable[[], Environment] | None = None
    shared: Agent | None = None
    """The runnable every question shares, built before the run (`build_shared`); None:
    built by `arun_target`, or per question when the target has an environment."""
    trials: dict[str, list[int]] | None = None
    """Question id -> the trials still to run (a resume); None: every trial of every question
    (`target.repeats` of them)."""
    run_id: str = ""
    """The run's id (its directory's name): part of every question run's conversation id."""
    message_chars: int | None = None
    """`telemetry.capture_messages`: chat spans carry prompts and answers cut to this length."""

    def work(self) -> Iterator[tuple[Question, int]]:
        """(question, trial) pairs to run, trials of a question together."""
        for question in self.questions:
            trials = (
                range(max(1, self.target.repeats))
                if self.trials is None
                else self.trials.get(str(question.id), ())
            )
            for trial in trials:
                yield question, trial

    def work_count(self) -> int:
        if self.trials is None:
            return len(self.questions) * max(1, self.target.repeats)
        return sum(len(self.trials.get(str(q.id), ())) for q in self.questions)


def _chat_model(factory: AgentFactory | Agent | None) -> Agent:
    from langchain_core.language_models import BaseChatModel

    if isinstance(factory, BaseChatModel):
        return factory
    if callable(factory):
        return factory()
    raise ConfigError(f"chat_model {factory!r} is neither a chat model nor a factory of one")


def _call_factory(plan: TargetPlan, environment: Environment | None) -> Agent:
    factory = plan.factory
    if not callable(factory):  # the error calling it would raise (a chat model is not called)
        raise TypeError(f"{type(factory).__name__!r} object is not callable")
    if environment is not None:
        return factory(environment=environment)
    return factory()


def build_shared(plan: TargetPlan) -> Agent | None:
    """The runnable every question shares (chat model, or a graph without an environment),
    built before the run starts: a factory that raises is invalid input (exit 4); None when
    the graph is built per question."""
    if plan.target.mode == "chat":
        return _chat_model(plan.factory)
    if plan.environment_factory is not None:
        return None
    return _build_graph(plan, None)


def _build_graph(plan: TargetPlan, environment: Environment | None) -> Agent:
    try:
        return _call_factory(plan, environment)
    except (Exception, SystemExit, GeneratorExit) as exc:
        raise ConfigError(
            f"agent factory {plan.target.factory!r} raised {type(exc).__name__}: {exc}",
            file=plan.target.config_file,
            line=plan.target.line,
            key=f"/targets/{plan.target.name}/agent",
        ) from exc


class NoAIMessage(Exception):
    """The agent returned something that is not a state holding an AI message."""


def _describe(value: object) -> str:
    if isinstance(value, dict):
        return f"a mapping with keys {sorted(map(str, value))[:5]}"
    return f"{type(value).__name__} {_short(value)}" if value is not None else "None"


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def configurable_for(target: TargetConfig, question: Question) -> dict[str, object]:
    """LangGraph's `config["configurable"]` for one question run: the question's keys over the
    target's, and a fresh `thread_id` unless one is given, so a checkpointer never carries one
    question's state into another (or into a re-run of the same question)."""
    merged = {**target.configurable, **(getattr(question, "configurable", None) or {})}
    merged.setdefault("thread_id", f"tracegrade-{target.name}-{question.id}-{uuid.uuid4().hex}")
    return merged


async def _invoke(
    plan: TargetPlan,
    runnable: Agent,
    messages: list[dict[str, str]],
    recorder: Recorder,
    configurable: dict[str, object],
    question: Question,
) -> tuple[str, list[object], object, Ending | None]:
    """(response text, final messages, final state, how it ended) of one agent or chat-model
    run; interrupts are answered from the question's resume script.

    An agent that returns no AI message (`{"messages": []}`, None, a string, only the input)
    raises `NoAIMessage`: scoring that as an empty answer would grade a broken agent. One that
    stopped waiting on an interrupt is no such agent: it ended `interrupted`."""
    config: RunnableConfig = {"callbacks": [recorder], "configurable": configurable}
    async with recorder.question_span():
        if plan.target.mode == "chat":
            reply = await runnable.ainvoke(messages, config=config)
            if _role_of(reply) != "assistant":
                raise NoAIMessage(f"agent returned no AI message (got {_describe(reply)})")
            text = _text_of(reply)
            recorder.set_answer(text)
            return text, [*messages, reply], None, None
        ending = await arun_conversation(
            with_checkpointer(runnable, question),
            question,
            messages,
            config,
            recorder=recorder,
            answer_of=last_ai_text,
            user_client=plan.services.client() if getattr(question, "user", None) else None,
            sample_index=recorder.trial,
        )
        state = ending.state
        final = (
            state.get("messages") if isinstance(state, dict) else getattr(state, "messages", None)
        )
        if ending.outcome is None and (
            not isinstance(final, list | tuple)
            or not any(_role_of(m) == "assistant" for m in final)
        ):
            got = (
                f"messages {_short(final)}" if isinstance(final, list | tuple) else _describe(state)
            )
            raise NoAIMessage(f"agent returned no AI message (got {got})")
        final = list(final) if isinstance(final, list | tuple) else []
        text = last_ai_text(final)
        recorder.set_answer(text)
    return text, final, state, ending


_batched: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "tracegrade_batched_removals", default=False
)
"""Set inside `arun_target`: its questions' work folders are reused, and removed at its end
(`_removals_done`); a question run alone (a worker's) has its folder removed when it ends."""


def _removals_done(run_path: Path | None = None, target: str | None = None) -> None:
    workfolders.close(run_path, target)


def _label(question: Question, trial: int) -> str:
    return f"{question.id}#{trial}" if trial else str(question.id)


def _waited(deadline: QuestionDeadline) -> str:
    """What the question waited on that was not its own time, for its timeout's reason."""
    if not deadline.blocked_by:
        return ""
    parts = ", ".join(f"{s:.1f}s on question {q}" for q, s in deadline.blocked_by.items())
    return f" of its own time (not counting {parts} holding the event loop)"


def _user_failure(exc: BaseException) -> bool:
    """A BaseException from user code that is that question's error. Ctrl-C and the run's own
    cancellation are not: they interrupt the run."""
    return not isinstance(exc, KeyboardInterrupt | asyncio.CancelledError)


async def _run_one(
    plan: TargetPlan,
    question: Question,
    *,
    tracer: Tracer,
    shared: Agent | None,
    record_class: type[Recorder],
    trial: int = 0,
) -> QuestionResult:
    target = plan.target
    row = question.row()
    input_messages = question.input_messages()
    messages = messages_for_agent(input_messages, target.system_prompt)
    started = time.perf_counter()
    run = RunRecord(question_id=str(question.id), trial=trial)
    record: ToolRecord | None = None
    environment: Environment | None = None
    workdir: Path | None = None  # made once the agent is built; the cleanup below reads it
    recorder: Recorder | None = None
    graded: QuestionResult | None = None
    try:
        try:
            # Per question, so a factory failing now and then is that question's error; one
            # that cannot be loaded at all was refused (exit 4) before the run.
            where = "environment"
            if plan.environment_factory is not None:
                environment = plan.environment_factory()
            where = "agent"
            runnable = shared if shared is not None else _call_factory(plan, environment)
        except BaseException as exc:  # isolation point: user factory code
            if not _user_failure(exc):
                raise
            log.debug(
                "%s factory raised on question %s:\n%s", where, question.id, traceback_text(exc)
            )
            run.error = f"{where} factory raised {describe_agent_error(exc)}"
            run.error_type = type(exc).__name__
            run.latency_s = time.perf_counter() - started
            run.usage = account(plan.services.prices, (), None, run.latency_s)
            return _finish(plan, question, row, run, record, [])
        agent_name = getattr(runnable, "name", None) or target.name
        recorder = record_class(
            tracer=tracer,
            question_id=str(question.id),
            dataset=plan.dataset_name,
            target=target.name,
            agent_name=str(agent_name),
            question_input=question.flattened_input(),
            trial=trial,
            run_id=plan.run_id,
            message_chars=plan.message_chars,
        )
        if hasattr(recorder, "hold_question"):  # its grades go on the question span
            recorder.hold_question()
        state: object = None
        ending: Ending | None = None
        # A deadline on this task rather than wait_for's extra task per question; it tells the
        # run's own timeout apart from a TimeoutError the agent raised itself, holds for code
        # that never yields, and does not count time another question held the loop.
        deadline = QuestionDeadline(target.timeout_s, label=repr(_label(question, trial)))
        workdir = (
            workfolders.take(plan.services.workdir, target.name, str(question.id), trial)
            if plan.services.workdir is not None
            else None
        )
        configurable = configurable_for(target, question)
        world = question_world(runnable, target, question)
        if world is not None:
            configurable[WORLD_KEY] = world
        if workdir is not None:
            configurable.setdefault("workdir", str(workdir))
        cassette = (
            open_session(target, plan.services.redaction, question, trial)
            if target.cassettes is not None
            else None
        )
        try:
            async with deadline:
                with cassette.active() if cassette is not None else nullcontext():
                    run.response, final, state, ending = await _invoke(
                        plan, runnable, messages, recorder, configurable, question
                    )
            run.messages = to_role_dicts(final)
        except TimeoutError as exc:
            if deadline.expired():
                run.error = f"timed out after {target.timeout_s:g}s{_waited(deadline)}"
            else:
                run.error = describe_agent_error(exc)
            run.error_type = "TimeoutError"
        except Overran:
            run.error_type = "TimeoutError"
        except NoAIMessage as exc:
            run.error, run.error_type = bounded(str(exc)), "NoAIMessage"
        except BaseException as exc:  # isolation point: the agent crashed; the question errors
            if not _user_failure(exc):
                raise
            log.debug("agent raised on question %s:\n%s", question.id, traceback_text(exc))
            run.error, run.error_type = describe_agent_error(exc), type(exc).__name__
        if deadline.overran is not None:  # however the interruption surfaced
            run.error = (
                f"timed out after {target.timeout_s:g}s: it held the event loop for "
                f"{deadline.overran:.1f}s without yielding (CPU-bound or blocking code in an "
                "async node or tool; run it in a thread, or make it await), so it was "
                "interrupted"
            )
            run.error_type = "TimeoutError"
        if cassette is not None:
            close_session(cassette, run)
        sealed = recorder.seal(final_state=state)
        run.trace_id = recorder.trace_id
        if run.error is None and ending is not None and ending.outcome is not None:
            run.outcome, run.outcome_reason = ending.outcome, ending.reason
            run.outcome_expected = outcome_expected(row, ending.outcome)
        if target.mode == "agent":
            record = sealed
            if run.error is None and not sealed.complete:
                problems = "; ".join(sealed.problems) or "record incomplete"
                run.error = bounded(f"capture failed: {problems}")
                run.error_type = "CaptureError"
        run.tool_calls = record
        run.latency_s = time.perf_counter() - started
        calls = getattr(recorder, "model_calls", ())
        run.usage = account(plan.services.prices, calls, sealed, run.latency_s)
        # graded while the environment is still open (state graders read it)
        graded = await agrade_recorded(
            plan,
            question,
            run,
            record,
            environment=environment,
            ending=ending,
            workdir=workdir,
            row=row,
        )
        return graded
    finally:
        if recorder is not None and hasattr(recorder, "release_question"):
            _release_question(recorder, graded)
        if workdir is not None:  # kept only when the agent wrote something
            workfolders.release(workdir, reuse=_batched.get())
        if environment is not None:
            try:
                environment.close()
            except Exception:  # isolation point: a failing close must not lose the verdict
                log.warning(
                    "closing the environment of question %s failed", question.id, exc_info=True
                )


def _release_question(recorder: Recorder, graded: QuestionResult | None) -> None:
    """The question span to the exporters, its grades on it as `gen_ai.evaluation.result`
    events (none when grading never finished: the span still goes)."""
    events: list[tuple[int, dict[str, object]]] = []
    if graded is not None:
        try:
            events = span_events(graded)
        except Exception:  # isolation point: the span goes without its events, never lost
            log.warning(
                "the grades of question %s could not become span events",
                graded.id,
                exc_info=True,
            )
    recorder.release_question(events)


async def agrade_recorded(
    plan: TargetPlan,
    question: Question,
    run: RunRecord,
    record: ToolRecord | None,
    *,
    environment: Environment | None = None,
    ending: Ending | None = None,
    workdir: Path | None = None,
    row: dict[str, object] | None = None,
) -> QuestionResult:
    """Grade one question run already made (by the runner, or read from a trace made outside
    tracegrade) with the plan's graders; its result (the answer included). A run that errored is not
    graded (it scores 0 and fails its must-pass graders). A conversation (`ending.turns`) is
    graded on its whole transcript, and each turn with checks of its own on that turn. `row`:
    `question.row()` where the caller made it already (a pydantic dump: 20-50 us a question)."""
    target = plan.target
    if row is None:
        row = question.row()
    graders: list[GraderVerdict] = []
    judge_calls: list[ModelCall] = []
    # role/content (and name) JSON, as the answer keeps it
    graded_messages: Sequence[Mapping[str, object]]
    graded: tuple[str, Sequence[Mapping[str, object]]]
    graded = graded_input, graded_messages = grader_input(question, target.system_prompt)
    turns = ending.turns if ending is not None else []
    if turns:
        # Graders see the whole conversation the agent had, not only its opening.
        graded = graded_input, graded_messages = transcript(run.messages)
    if run.error is None:
        with judge_meter() as judge_calls:
            graders = await agrade_conversation(
                plan.attached,
                services=plan.services,
                target=target,
                row=row,
                input=graded_input,
                messages=graded_messages,
                response=run.response,
                record=record,
                environment=environment,
                run=run,
                turns=question.user_turns()[: len(turns)] if turns else [],
                workdir=workdir,
            )
    return _finish(plan, question, row, run, record, graders, graded, judge_calls)


def _finish(
    plan: TargetPlan,
    question: Question,
    row: dict[str, object],
    run: RunRecord,
    record: ToolRecord | None,
    graders: list[GraderVerdict],
    graded: tuple[str, Sequence[Mapping[str, object]]] | None = None,
    judge_calls: Sequence[ModelCall] = (),
) -> QuestionResult:
    """The question's result, its answer included (`graded`: the input and messages the
    graders read; by default what the question's input gave the agent)."""
    target = plan.target
    trial = run.trial
    graded_input, graded_messages = graded or grader_input(question, target.system_prompt)
    result = QuestionResult(
        target=target.name,
        id=str(question.id),
        trial=trial,
        split=_attr(question, row, "split"),
        bundle=_attr(question, row, "bundle"),
        tags=list(_attr(question, row, "tags") or []),
        graders=graders,
        error=run.error,
        error_type=run.error_type,
        trace_id=run.trace_id,
        outcome=run.outcome,
        outcome_reason=run.outcome_reason,
        outcome_expected=run.outcome_expected,
        usage=with_judges(run.usage, judge_calls, plan.services.prices),
        answer=QuestionAnswer(
            ordinal=plan.ordinals.get(str(question.id), 0),
            row=row,
            input=graded_input,
            messages=graded_messages,
            response=run.response,
            latency_s=run.latency_s,
            usage=dict(run.usage),
            has_record=record is not None,
            tool_call_count=len(record) if record is not None else None,
        ),
    )
    score_question(result)
    result.over_budget = question_budget_failures(result.usage, target.gate)
    return result


def _attr(question: Question, row: dict[str, Any], name: str) -> Any:
    value = getattr(question, name, None)
    return value if value is not None else row.get(name)


async def arun_target(
    plan: TargetPlan,
    *,
    commit: Callable[[QuestionResult], None],
    tracer: Tracer,
    record_class: type[Recorder] | None = None,
    before_commit: Callable[[], None] | None = None,
) -> int:
    """Run every question of `plan` with `concurrency` workers, handing each to `commit` (which
    stores it) as it finishes; returns how many were committed. Cancelling the task loses only
    the questions in flight. Questions finishing together are committed together
    (`commits.CommitBatch`); `before_commit()` runs before each commit (the trace file's flush:
    a row is never on disk before its record). Scores are not kept in memory (the store has
    them), so memory stays flat in the number of questions."""
    if record_class is None:
        from ...capture.recorder import Recorder

        record_class = Recorder
    recorder_class = record_class  # narrowed, for the worker below
    shared = plan.shared if plan.shared is not None else build_shared(plan)
    pending = plan.work()
    total = plan.work_count()
    # Serial questions are committed one by one: only questions running side by side finish
    # close enough together to share a commit.
    batch = CommitBatch(
        commit,
        before_commit=before_commit,
        max_wait_s=BATCH_S if plan.target.concurrency > 1 else 0.0,
    )

    async def worker() -> None:
        # A fixed pool of `concurrency` workers sharing one iterator: no coroutine per pending
        # question, so memory stays flat in the number of questions.
        for question, trial in pending:
            result = await _run_one(
                plan,
                question,
                tracer=tracer,
                shared=shared,
                record_class=recorder_class,
                trial=trial,
            )
            batch.add(result)
        if plan.services.workdir is not None:  # no question left to take a free folder
            workfolders.ending(plan.services.workdir, plan.target.name)

    size = max(1, min(plan.target.concurrency, total))
    batched = _batched.set(True)  # the workers' copies of this context hold it
    workers = [asyncio.ensure_future(worker()) for _ in range(size)]
    _batched.reset(batched)
    try:
        try:
            await asyncio.gather(*workers)
        except BaseException:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            raise
        finally:
            batch.close()  # what finished is committed, even when the run was cancelled
    finally:
        if plan.services.workdir is not None:
            _removals_done(plan.services.workdir, plan.target.name)
    return batch.committed
