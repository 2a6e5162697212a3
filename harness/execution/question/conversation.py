"""One question run as a conversation: the agent invoked, its interrupts answered from the
question's resume script, until it answers or stops waiting on a person.

LangGraph pauses a graph on `interrupt()` and hands back `__interrupt__` in the state it
returns; `Command(resume=...)` on the same thread continues it. A graph compiled without a
checkpointer cannot be resumed, so a question run that may resume or continue it gets an
in-memory saver (`with_checkpointer`); the thread id is fresh per question run and trial
(`configurable_for`).

A run that ends waiting on an interrupt nobody answered ends `interrupted`: a named outcome,
never "no AI message".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ...graders.context import build_context
from .agent import Copies
from .grading import agrade_question, criteria_with_rubric, grading_deadline, target_policy
from .simulated_user import ask_simulated_user
from .world import opening_inputs

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

    from ...capture.recorder import Recorder
    from ...environment import Environment
    from ...graders.base import GraderServices
    from ...inputs.config import TargetConfig
    from ...inputs.dataset import Question, Turn
    from ...judging.client import JudgeClient
    from ...records import RunRecord, ToolRecord
    from ...verdicts.scoring import GraderVerdict
    from .agent import Agent
    from .grading import AttachedGrader

__all__ = [
    "Ending",
    "ResumeScript",
    "TurnResult",
    "agrade_conversation",
    "arun_conversation",
    "arun_graph",
    "outcome_expected",
    "transcript",
    "with_checkpointer",
]


@dataclass(slots=True)
class TurnResult:
    """One user turn of a conversation and the agent's answer to it."""

    index: int
    content: str
    """What the user said."""
    answer: str = ""
    """The agent's last message after it."""
    simulated: bool = False
    """Written by a simulated user."""


@dataclass(slots=True)
class Ending:
    """How a conversation ended."""

    state: object
    """The graph's last state."""
    outcome: str | None = None
    """`interrupted` when it ended waiting on an interrupt, `user_budget` when a simulated
    user ran out of turns; None when it answered."""
    reason: str | None = None
    """What it was waiting on, in words."""
    resumes: int = 0
    """How many times it was resumed."""
    turns: list[TurnResult] = field(default_factory=list)
    """The user turns sent (a conversation of `turns` or a simulated user); [] otherwise."""


def with_checkpointer(graph: Agent, question: Question) -> Agent:
    """`graph` with a fresh in-memory checkpointer (a per-question copy; the shared graph is left
    as it is) when it was compiled without one and this question run needs one: an interrupt
    to resume (`resume:`), later turns on the same thread (`turns`, a simulated `user`), a
    run started after a node (`start_at:`), or pauses the graph only makes with a checkpointer (`interrupt_before`/`interrupt_after`).
    Otherwise the graph runs as compiled: an unanswered `interrupt()` still surfaces, and
    nothing is serialized. The saver keeps what msgpack cannot hold (ints past 64 bits, deep
    nesting) by pickle, in memory, so such state never fails only under tracegrade."""
    if getattr(graph, "checkpointer", "absent") is not None or not isinstance(graph, Copies):
        return graph  # has its own (or is not a compiled LangGraph graph)
    if not _needs_checkpointer(graph, question):
        return graph
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    saver = InMemorySaver(serde=JsonPlusSerializer(pickle_fallback=True))
    return graph.copy(update={"checkpointer": saver})


def _needs_checkpointer(graph: object, question: Question) -> bool:
    if getattr(graph, "interrupt_before_nodes", None) or getattr(
        graph, "interrupt_after_nodes", None
    ):
        return True
    if getattr(question, "resume", None) or getattr(question, "user", None) is not None:
        return True
    if getattr(question, "start_at", None):  # its opening state is written on the thread
        return True
    turns = question.user_turns() if hasattr(question, "user_turns") else ()
    return len(turns) > 0


def outcome_expected(row: Mapping[str, object], outcome: str) -> bool:
    """Whether the question says its conversation ends this way (then it is no failure)."""
    if outcome == "interrupted":
        expected = row.get("expected_interrupts")
        return isinstance(expected, Mapping) and expected.get("ends_interrupted") is True
    return False


def pending_interrupts(state: object) -> list[object]:
    """The interrupts a returned state is waiting on (LangGraph's `__interrupt__`)."""
    found = state.get("__interrupt__") if isinstance(state, Mapping) else None
    return list(found) if isinstance(found, list | tuple) else []


def payload_of(value: object) -> Mapping[str, object]:
    """An interrupt payload as a mapping for matchers (see `Interruption.payload`)."""
    return value if isinstance(value, Mapping) else {"value": value}


@dataclass(slots=True)
class _Entry:
    answer: object
    test: Callable[[Mapping[str, object]], bool] | None = None
    used: bool = False


@dataclass(slots=True)
class ResumeScript:
    """A question's `resume:` list: the answers a person would give. Each interrupt takes the
    first unused entry that fits it: a plain value fits any interrupt; a `{when: {...},
    value: ...}` entry fits one whose payload matches `when` (trajectory argument matchers).
    Every entry answers once."""

    entries: list[_Entry] = field(default_factory=list)
    fallback: ResumeScript | None = None
    """Asked when no entry of this one fits (a turn's own script falls back to the
    question's)."""

    @classmethod
    def from_row(
        cls, raw: Sequence[object] | None, *, fallback: ResumeScript | None = None
    ) -> ResumeScript:
        from ...graders.trajectory.matchers import compile_args

        entries = []
        for item in raw or ():
            if isinstance(item, Mapping) and "when" in item:
                matcher = compile_args(item["when"], "subset")
                entries.append(_Entry(item.get("value"), matcher.test if matcher else None))
            else:
                entries.append(_Entry(item))
        return cls(entries, fallback)

    def answer(self, value: object) -> tuple[bool, object]:
        """(found, answer) for an interrupt with payload `value`."""
        payload = payload_of(value)
        for entry in self.entries:
            if entry.used or (entry.test is not None and not entry.test(payload)):
                continue
            entry.used = True
            return True, entry.answer
        if self.fallback is not None:
            return self.fallback.answer(value)
        return False, None


def transcript(
    messages: Sequence[Mapping[str, object]],
) -> tuple[str, list[dict[str, object]]]:
    """(`input`, `messages`) for graders of a conversation: every user and system message and
    every assistant message with text (tool traffic left out), before the final answer."""
    kept = [
        dict(m)
        for m in messages
        if m.get("role") in ("user", "system")
        or (m.get("role") == "assistant" and str(m.get("content") or "").strip())
    ]
    if kept and kept[-1].get("role") == "assistant":
        kept = kept[:-1]
    return "\n".join(f"{m['role']}: {m['content']}" for m in kept), kept


def describe_pending(interrupts: Sequence[object]) -> str:
    """`waiting on interrupt {'question': 'approve refund?'}`: for reports."""
    shown = "; ".join(repr(getattr(i, "value", i))[:200] for i in interrupts)
    return f"waiting on interrupt {shown}: no resume answer fits it"


async def arun_graph(
    graph: Agent, inputs: object, config: RunnableConfig, script: ResumeScript
) -> Ending:
    """Invoke `graph`, resuming each interrupt from `script`, until it finishes or waits on
    one the script has no answer for."""
    from langgraph.types import Command

    state = await graph.ainvoke(inputs, config=config)
    resumes = 0
    while True:
        waiting = pending_interrupts(state)
        if not waiting:
            return Ending(state=state, resumes=resumes)
        answers: dict[str, object] = {}
        unanswered = []
        for item in waiting:
            found, answer = script.answer(getattr(item, "value", item))
            if found:
                answers[str(getattr(item, "id", len(answers)))] = answer
            else:
                unanswered.append(item)
        if unanswered:
            return Ending(
                state=state,
                outcome="interrupted",
                reason=describe_pending(unanswered),
                resumes=resumes,
            )
        resume = next(iter(answers.values())) if len(answers) == 1 else answers
        state = await graph.ainvoke(Command(resume=resume), config=config)
        resumes += 1


def _messages_of(state: object) -> list[object]:
    found = (
        state.get("messages") if isinstance(state, Mapping) else getattr(state, "messages", None)
    )
    return list(found) if isinstance(found, list | tuple) else []


async def arun_conversation(
    graph: Agent,
    question: Question,
    messages: list[dict[str, str]],
    config: RunnableConfig,
    *,
    recorder: Recorder,
    answer_of: Callable[[list[object]], str],
    user_client: JudgeClient | None = None,
    sample_index: int = 0,
) -> Ending:
    """One question run: `messages` sent, interrupts answered from the question's `resume`;
    for a `turns` conversation each later turn sent after the agent answered the one before,
    on the same thread (its own `resume` first, then the question's); with a simulated user
    (`user:`), `messages` opens and the user model on `user_client` writes each later turn
    until its goal is met, or ends the conversation `user_budget` when `max_turns` user
    messages did not get there. Stops at the first turn that ends waiting on an interrupt."""
    shared = ResumeScript.from_row(getattr(question, "resume", None))
    user = getattr(question, "user", None)
    turns = question.user_turns() if hasattr(question, "user_turns") else []
    if not turns and user is None:
        return await arun_graph(
            graph, await opening_inputs(graph, question, messages, config), config, shared
        )
    results: list[TurnResult] = []
    ending: Ending | None = None
    resumes = 0
    budget = user.max_turns if user is not None else len(turns)
    content = turns[0].content if turns else str(messages[-1].get("content", ""))
    for index in range(budget):
        turn = turns[index] if index < len(turns) else None
        script = ResumeScript.from_row(turn.resume if turn else None, fallback=shared)
        recorder.mark_turn()
        simulated = user is not None and index > 0
        opening = (
            await opening_inputs(graph, question, messages, config)
            if index == 0
            else {"messages": [_user_message(content, simulated=simulated)]}
        )
        ending = await arun_graph(graph, opening, config, script)
        resumes += ending.resumes
        said = _messages_of(ending.state)
        results.append(TurnResult(index, content, answer_of(said), simulated=simulated))
        if ending.outcome is not None:
            break
        if user is None:
            if index + 1 < len(turns):
                content = turns[index + 1].content
            continue
        verdict = await ask_simulated_user(
            user_client, user, _spoken(said), sample_index=sample_index
        )
        if verdict.done:
            break
        if index + 1 == budget:
            ending.outcome = "user_budget"
            ending.reason = (
                f"the simulated user's goal was not met within max_turns {budget}: "
                f"{verdict.reason or 'no reason given'}"
            )
            break
        content = verdict.message
    assert ending is not None
    ending.turns, ending.resumes = results, resumes
    return ending


SIMULATED_USER = "simulated_user"
"""The `name` a simulated user's messages carry (LangChain's message name), so they are
recorded as such."""


def _user_message(content: str, *, simulated: bool) -> dict[str, str]:
    message = {"role": "user", "content": content}
    if simulated:
        message["name"] = SIMULATED_USER
    return message


def _spoken(messages: Sequence[object]) -> list[dict[str, str]]:
    """The conversation as the user saw it: user messages and the agent's texts."""
    out = []
    for m in messages:
        kind = getattr(m, "type", None)
        text = getattr(m, "text", "")
        text = text if isinstance(text, str) else text() if callable(text) else ""
        if kind == "human":
            out.append({"role": "user", "content": str(text)})
        elif kind == "ai" and str(text).strip():
            out.append({"role": "assistant", "content": str(text)})
    return out


# -- grading a conversation turn by turn ------------------------------------------------------
_TURN_KEYS = ("expected_tools", "trajectory", "criteria")
"""The keys a turn may carry of its own; every other check reads the whole conversation."""


def turn_rows(
    row: Mapping[str, object], turns: Sequence[Turn]
) -> list[tuple[int, dict[str, object]]]:
    """(turn index, the row its graders read) for each turn with checks of its own: the
    question's id and the turn's keys, nothing that belongs to the whole conversation."""
    out = []
    for index, turn in enumerate(turns):
        own = {k: getattr(turn, k) for k in _TURN_KEYS if getattr(turn, k, None) is not None}
        if own:
            out.append((index, {"id": row.get("id"), "input": turn.content, **own}))
    return out


def combine_turns(
    whole: GraderVerdict, per_turn: Sequence[tuple[int, GraderVerdict]]
) -> GraderVerdict:
    """One grader's verdict over a conversation: the whole conversation's and each turn's that
    applied (skips left out); the lowest score stands (a grader passes only when it passes
    on every turn), any error errs, and the reason names each part."""
    parts = [("conversation", whole)] + [(f"turn {i + 1}", g) for i, g in per_turn]
    applied = [(name, g) for name, g in parts if not g.skipped]
    if not per_turn or not applied:
        return whole
    if len(applied) == 1 and applied[0][1] is whole:
        return whole
    errored = [g for _, g in applied if g.error]
    scored = [g for _, g in applied if g.score is not None]
    lowest = min(scored, key=lambda g: g.score or 0.0) if scored else None
    reason = "; ".join(f"{name}: {g.reason}" for name, g in applied)
    return whole.model_copy(
        update={
            "score": None if errored or lowest is None else lowest.score,
            "error": bool(errored),
            "reason": reason,
            "checks": [c for _, g in applied for c in g.checks],
            "details": {
                **whole.details,
                "turns": {name: {"score": g.score, "reason": g.reason} for name, g in applied},
            },
        }
    )


def _turn_views(
    messages: Sequence[Mapping[str, object]], response: str, turns: int
) -> list[tuple[str, list[dict[str, object]], str]]:
    """(input, messages, answer) each turn's graders read, from the conversation transcript
    (`transcript`: the final answer left out) and the final answer: the conversation before
    the turn's answer, and that answer."""
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    out = []
    for index in range(turns):
        nxt = users[index + 1] if index + 1 < len(users) else len(messages)
        upto = [dict(m) for m in messages[:nxt]]
        if index + 1 < len(users) and upto and upto[-1].get("role") == "assistant":
            answer = str(upto[-1].get("content") or "")
            upto = upto[:-1]
        else:
            answer = response
        out.append(("\n".join(f"{m['role']}: {m['content']}" for m in upto), upto, answer))
    return out


async def agrade_conversation(
    attached: Sequence[AttachedGrader],
    *,
    services: GraderServices,
    target: TargetConfig,
    row: Mapping[str, object],
    input: str,
    messages: Sequence[Mapping[str, object]],
    response: str,
    record: ToolRecord | None,
    environment: Environment | None,
    run: RunRecord,
    turns: Sequence[Turn] = (),
    workdir: Path | None = None,
) -> list[GraderVerdict]:
    """Every attached grader on the answer; for a conversation whose turns carry checks of
    their own (`turns`: the Turn models sent), also on each such turn (the conversation up to
    its answer, that answer, that turn's calls), folded per grader by `combine_turns`. The run
    and a re-grade both grade through here, so they reach one verdict."""
    deadline = grading_deadline(target, services)

    async def grade(
        row: Mapping[str, object],
        text: str,
        said: Sequence[Mapping[str, object]],
        answer: str,
        calls: ToolRecord | None,
    ) -> list[GraderVerdict]:
        context = build_context(
            dict(row),
            messages=said,
            response_char_limit=target.response_char_limit,
            criteria=criteria_with_rubric(dict(row), services.rubrics),
            tool_calls=calls,
            environment=environment,
            run_record=run,
            policy=target_policy(target),
            workdir=workdir,
        )
        return await agrade_question(
            attached, input=text, response=answer, context=context, deadline_s=deadline
        )

    whole = await grade(row, input, messages, response, record)
    own = turn_rows(row, turns)
    if not own:
        return whole
    views = _turn_views(messages, response, len(turns))
    per_turn: list[list[tuple[int, GraderVerdict]]] = [[] for _ in whole]
    for index, turn_row in own:
        text, said, answer = views[index]
        calls = record.turn(index) if record is not None else None
        for slot, score in zip(
            per_turn, await grade(turn_row, text, said, answer, calls), strict=True
        ):
            slot.append((index, score))
    return [combine_turns(w, t) for w, t in zip(whole, per_turn, strict=True)]
