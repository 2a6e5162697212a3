"""The recorder: a LangChain callback handler that turns one question's LangGraph run into
OpenTelemetry spans and, sealed, into the tool-call record graders read (DESIGN.md, "The
tool-call record").

One recorder per question run, passed in the invoke config (`callbacks=[recorder]`); no global
patching. `run_inline=True` makes langchain-core call it directly from async code instead of
through an executor, and a lock covers sync tools firing from LangGraph's thread pool. Parents
come from LangChain's `run_id`/`parent_run_id`; only agents, chat models and tools get spans, so
the per-callback cost for every other runnable is a dict insert and a pop.

Agents: the top-level run is the target agent. LangGraph tags each task of a graph's loop
`graph:step:N`, so a child run with that tag marks its parent run as a graph: an
`invoke_agent {name}` span, one level deeper than the agent above it.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import ToolMessage
from langgraph.errors import GraphInterrupt
from langgraph.types import Command
from opentelemetry.sdk.trace import Event
from opentelemetry.trace import Status, StatusCode

from ..otel import semconv as sc
from ..records import Outcome, ToolRecord, finalize_calls, finalize_interruptions
from .model_calls import ModelCallRecorder
from .reconcile import (
    genai_messages,
    messages_in,
    outcome_of_error,
    outcome_of_output,
    plain,
    requested_calls,
)
from .spans import LiteSpan
from .state import (
    AgentState,
    InterruptState,
    NodeState,
    RunState,
    ToolState,
    finish_tool,
    freeze,
    tool_attributes,
)

__all__ = ["Recorder"]

log = logging.getLogger(__name__)

_GRAPH_STEP = "graph:step:"


class _QuestionScope:
    """`with recorder.question_span():` or `async with ...`: opens the question span and, on
    exit, closes whatever the run left open (as cancelled) and ends it."""

    __slots__ = ("_recorder",)

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder

    def __enter__(self) -> Recorder:
        self._recorder._open_question()
        return self._recorder

    def __exit__(self, exc_type, exc, tb) -> None:
        self._recorder._close_question(exc)

    async def __aenter__(self) -> Recorder:
        return self.__enter__()

    async def __aexit__(self, exc_type, exc, tb) -> None:
        self.__exit__(exc_type, exc, tb)


class Recorder(ModelCallRecorder):
    """Records one question run. Pass it as `config={"callbacks": [recorder]}`, then `seal()`.
    Its capture state, span helpers and chat-model callbacks are `ModelCallRecorder`'s."""

    # -- public --------------------------------------------------------------------------
    def question_span(self) -> _QuestionScope:
        """The question span, as a sync or async context manager."""
        return _QuestionScope(self)

    def set_answer(self, text: str) -> None:
        """The agent's answer, as the question span's `output.value`: call it inside
        `question_span()`, before the span ends."""
        with self._lock:
            if self._question is not None:
                self._question.set_attribute(sc.OI_OUTPUT_VALUE, text)
                self._question.set_attribute(sc.OI_OUTPUT_MIME_TYPE, sc.MIME_TEXT)

    def hold_question(self) -> None:
        """Keep the question span, once ended, until `release_question`: the grades made
        after the agent ran go on it as events, in the trace file and every exporter."""
        self._hold_question = True

    def release_question(self, events: Sequence[tuple[int, dict[str, Any]]] = ()) -> None:
        """Hand the held question span to the exporters with `events` (time in ns, attributes)
        as `gen_ai.evaluation.result` events; idempotent, and a no-op when nothing is held."""
        with self._lock:
            span = self._question
            if span is None or not span.held:
                return
            if events:
                span.events = [
                    Event(sc.GEN_AI_EVALUATION_RESULT, attributes, timestamp)
                    for timestamp, attributes in events
                ]
            span.emit()

    def mark_turn(self) -> None:
        """A user turn of a conversation is about to be sent: calls from now on belong to it."""
        with self._lock:
            self._turn_starts.append(time.time_ns())

    @property
    def trace_id(self) -> str | None:
        """Hex trace id of the question (None before anything was recorded)."""
        return self._trace_id

    def seal(self, final_state: Any = None) -> ToolRecord:
        """Close the record: reconcile calls no callback saw (unknown tools) from the final
        messages, close spans left open as cancelled, build the record. Idempotent."""
        with self._lock:
            if self._record is not None:
                return self._record
            try:
                if final_state is not None:
                    self._reconcile(messages_in(final_state), None)
                self._close_open("seal")
            except Exception as exc:  # isolation point: a record is always returned
                self._collect_locked("seal", exc)
            calls = finalize_calls(freeze(t) for t in self._tools)
            interruptions = finalize_interruptions(
                (i.freeze() for i in self._interrupts.values()), calls
            )
            self._record = ToolRecord(
                calls,
                complete=not self.problems,
                problems=tuple(self.problems),
                interruptions=interruptions,
                turn_starts=self._turn_starts,
                nodes=self._node_runs(),
                offered=self._offered_specs(),
                answer_ns=self._answer_ns,
            )
            return self._record

    # -- question span -------------------------------------------------------------------
    def _open_question(self) -> None:
        attributes = {
            sc.OI_SPAN_KIND: sc.OI_KIND_CHAIN,
            sc.GEN_AI_CONVERSATION_ID: self.conversation_id,
            sc.TG_QUESTION_ID: self.question_id,
            sc.AGENTEVALS_CASE_ID: self.question_id,
            sc.TG_RUN_ID: self.run_id,
            sc.TG_TRIAL: self.trial,
            sc.TG_DATASET: self.dataset,
            sc.TG_TARGET: self.target,
            sc.TG_AGENT: self.agent_name,
        }
        if self.question_input is not None:
            attributes[sc.OI_INPUT_VALUE] = self.question_input
            attributes[sc.OI_INPUT_MIME_TYPE] = sc.MIME_TEXT
        span = self._sink.start(sc.SPAN_QUESTION, None, attributes)
        with self._lock:
            self._question = span
            self._trace_id = format(span.get_span_context().trace_id, "032x")

    def _close_question(self, exc: BaseException | None) -> None:
        with self._lock:
            span = self._question
            if span is None or self._question_closed:
                return
            self._question_closed = True
            try:
                self._close_open("question end")
            except Exception as failure:  # isolation point: the question span still ends
                self._collect_locked("question end", failure)
            if exc is not None:
                span.set_attribute(sc.ERROR_TYPE, type(exc).__name__)
                span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            span.set_attribute(sc.TG_RECORD_COMPLETE, not self.problems)
            if self._turn_starts:
                span.set_attribute(sc.TG_TURN_STARTS, list(self._turn_starts))
            if self.problems:
                span.set_attribute(sc.TG_RECORD_PROBLEMS, list(self.problems))
            self._graph_attributes(span)
            span.end(hold=self._hold_question)

    # -- failure collection --------------------------------------------------------------
    def _new_agent(self, run: RunState, name: str, depth: int) -> None:
        attributes = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
            sc.GEN_AI_AGENT_NAME: name,
            sc.GEN_AI_CONVERSATION_ID: self.conversation_id,
            sc.OI_SPAN_KIND: sc.OI_KIND_AGENT,
            sc.OI_AGENT_NAME: name,
            sc.TG_AGENT: name,
            sc.TG_DEPTH: depth,
        }
        if run.inputs is not None:
            messages = genai_messages(run.inputs)
            if messages:
                attributes[sc.GEN_AI_INPUT_MESSAGES] = json.dumps(messages, ensure_ascii=False)
            run.inputs = None
        span = self._start(
            f"{sc.SPAN_INVOKE_AGENT} {name}", run.parent_span, attributes, start_ns=run.start_ns
        )
        run.agent = AgentState(name, depth, span)
        run.is_agent = True
        run.span = span
        run.parent_span = span

    # -- chains: agents and graph tasks --------------------------------------------------
    def on_chain_start(
        self, serialized, inputs, *, run_id, parent_run_id=None, tags=None, metadata=None, **kwargs
    ) -> None:
        # The commonest callback: single dict operations (atomic under the GIL) outside the
        # lock; the lock only where state changes shape (a new agent).
        try:
            if self._ended:
                return
            name = kwargs.get("name") or (serialized or {}).get("name") or "chain"
            parent = self._parent(parent_run_id)
            if parent is None:
                with self._lock:
                    run = RunState(name, None, self._question, inputs)
                    self._runs[run_id.int] = run
                    if parent_run_id is None:
                        if isinstance(inputs, Command) and inputs.resume is not None:
                            self._answered(inputs.resume)
                        self._invocations += 1
                        self._new_agent(run, self.agent_name, 0)
                return
            is_task = False
            if tags:
                for tag in tags:
                    if tag.startswith(_GRAPH_STEP):
                        is_task = True
                        break
            if is_task and not parent.is_agent:
                with self._lock:
                    if not parent.is_agent:  # parallel tasks may race to promote it
                        depth = parent.agent.depth + 1 if parent.agent is not None else 0
                        self._new_agent(parent, parent.name, depth)
            run = RunState(name, parent.agent, parent.parent_span, inputs)
            run.is_task = is_task
            if is_task:
                run.node = name
                node = NodeState(name, metadata, parent.agent, self._invocations - 1, run.start_ns)
                run.node_run = node
                self._nodes.append(node)  # list.append: atomic under the GIL
            else:
                run.node = parent.node
            self._runs[run_id.int] = run
        except Exception as exc:  # isolation point: collected, never raised into the run
            self._collect("on_chain_start", exc)

    def on_chain_end(self, outputs, *, run_id, **kwargs) -> None:
        try:
            run = self._runs.pop(run_id.int, None)
            if run is None:
                return
            if run.node_run is not None:
                run.node_run.end_ns = time.time_ns()
            if run.is_task and outputs is not None:
                errors = [
                    m
                    for m in messages_in(outputs)
                    if isinstance(m, ToolMessage) and m.status == "error"
                ]
                if errors:
                    with self._lock:
                        self._reconcile(errors, run.agent, run.node)
            if run.is_agent:
                answer = genai_messages(messages_in(outputs), output=True)
                with self._lock:
                    if answer:
                        run.span.set_attribute(
                            sc.GEN_AI_OUTPUT_MESSAGES, json.dumps(answer, ensure_ascii=False)
                        )
                    run.span.end()
        except Exception as exc:  # isolation point: collected, never raised into the run
            self._collect("on_chain_end", exc)

    def on_chain_error(self, error, *, run_id, **kwargs) -> None:
        try:
            with self._lock:
                run = self._runs.pop(run_id.int, None)
                if run is not None and run.node_run is not None:
                    run.node_run.end_ns = time.time_ns()
                    run.node_run.outcome = (
                        "interrupted" if isinstance(error, GraphInterrupt) else "error"
                    )
                if run is not None and isinstance(error, GraphInterrupt):
                    self._interrupted(error, run)
                if run is None or not run.is_agent:
                    return
                outcome, _ = outcome_of_error(error)
                if outcome is Outcome.ERROR or outcome is Outcome.CANCELLED:
                    run.span.set_attribute(sc.ERROR_TYPE, type(error).__name__)
                    run.span.set_status(Status(StatusCode.ERROR, type(error).__name__))
                run.span.end()
        except Exception as exc:  # isolation point: collected, never raised into the run
            self._collect("on_chain_error", exc)

    # -- tools ---------------------------------------------------------------------------
    def on_tool_start(
        self,
        serialized,
        input_str,
        *,
        run_id,
        parent_run_id=None,
        tags=None,
        metadata=None,
        inputs=None,
        **kwargs,
    ) -> None:
        try:
            call_id = kwargs.get("tool_call_id")
            with self._lock:
                if self._ended:
                    return
                parent = self._parent(parent_run_id)
                agent = parent.agent if parent is not None else None
                tool = ToolState()
                tool.seq = next(self._seq)
                tool.call_id = call_id
                requested = self._requested.get(call_id) if call_id else None
                if requested is not None:
                    tool.name, tool.arguments, _, _, tool.model_turn, tool.index_in_turn = requested
                else:
                    tool.name = (serialized or {}).get("name") or kwargs.get("name") or "tool"
                    tool.arguments = inputs if inputs is not None else {"input": input_str}
                    tool.model_turn = tool.index_in_turn = None
                tool.agent = agent.name if agent is not None else self.agent_name
                tool.depth = agent.depth if agent is not None else 0
                tool.node = parent.node if parent is not None else None
                tool.outcome = None
                tool.error_type = None
                tool.result = None
                tool.end_ns = 0
                tool.world = None
                if call_id:
                    self._seen_call_ids.add(call_id)
                run = RunState(tool.name, agent, parent.parent_span if parent else self._question)
                run.node = parent.node if parent is not None else None
                tool.start_ns = run.start_ns
                tool.span = self._tool_span(tool, run.parent_span, start_ns=run.start_ns)
                run.parent_span = run.span = tool.span
                run.tool = tool
                self._runs[run_id.int] = run
                self._tools.append(tool)
        except Exception as exc:  # isolation point: collected, never raised into the run
            self._collect("on_tool_start", exc)

    def on_custom_event(self, name, data, *, run_id, **kwargs) -> None:
        """A question's world acted on a tool call (`capture.world_tools`): mark that call."""
        if name != "tracegrade.world":
            return
        try:
            with self._lock:
                run = self._runs.get(run_id.int)
                tool = run.tool if run is not None else None
                if tool is not None:
                    tool.world = str(data.get("mark"))
                    tool.span.set_attribute(sc.TG_WORLD, tool.world)
        except Exception as exc:  # isolation point: collected, never raised into the run
            self._collect("on_custom_event", exc)

    def _tool_span(self, tool: ToolState, parent: Any, start_ns: int | None = None) -> LiteSpan:
        name = f"{sc.SPAN_EXECUTE_TOOL} {tool.name}"
        return self._start(name, parent, tool_attributes(tool), start_ns=start_ns)

    def on_tool_end(self, output, *, run_id, **kwargs) -> None:
        try:
            with self._lock:
                run = self._runs.pop(run_id.int, None)
                if run is None or run.tool is None or run.tool.outcome is not None:
                    return
                outcome, error_type = outcome_of_output(output)
                finish_tool(run.tool, outcome, error_type, plain(output))
        except Exception as exc:  # isolation point: collected, never raised into the run
            self._collect("on_tool_end", exc)

    def on_tool_error(self, error, *, run_id, **kwargs) -> None:
        try:
            with self._lock:
                run = self._runs.pop(run_id.int, None)
                if run is None or run.tool is None or run.tool.outcome is not None:
                    return
                outcome, error_type = outcome_of_error(error)
                if isinstance(error, GraphInterrupt):
                    self._interrupted(error, run)
                finish_tool(run.tool, outcome, error_type, None, message=str(error))
        except Exception as exc:  # isolation point: collected, never raised into the run
            self._collect("on_tool_error", exc)

    # -- interrupts ----------------------------------------------------------------------
    def _interrupted(self, error: GraphInterrupt, run: RunState) -> None:
        """A node (or a tool in it) paused on `interrupt()`: one span per interrupt raised.
        The same interrupt reaches every graph above the node; the first (innermost) sighting
        names the node and the tool."""
        found = error.args[0] if error.args else ()
        for item in found if isinstance(found, list | tuple) else (found,):
            interrupt_id = getattr(item, "id", None) or f"#{len(self._interrupts)}"
            if interrupt_id in self._interrupts:
                continue
            agent = run.agent
            tool = run.tool
            state = InterruptState(
                seq=len(self._interrupts),
                value=plain(getattr(item, "value", item)),
                node=run.node or run.name,
                agent=agent.name if agent is not None else self.agent_name,
                depth=agent.depth if agent is not None else 0,
                interrupt_id=interrupt_id,
                tool=tool.name if tool is not None else None,
                call_id=tool.call_id if tool is not None else None,
            )
            parent = agent.span if agent is not None else self._question
            state.span = self._start(
                sc.SPAN_INTERRUPT, parent, state.attributes(), start_ns=state.start_ns
            )
            self._interrupts[interrupt_id] = state

    def _answered(self, resume: Any) -> None:
        """The graph is being resumed (`Command(resume=...)`): a mapping keyed by interrupt
        ids answers those; any other value answers every interrupt still waiting."""
        waiting = {k: i for k, i in self._interrupts.items() if i.end_ns == 0}
        if isinstance(resume, Mapping) and resume and all(k in waiting for k in resume):
            answers = dict(resume)
        else:
            answers = dict.fromkeys(waiting, resume)
        for interrupt_id, value in answers.items():
            waiting[interrupt_id].finish(resumed=True, value=plain(value))

    # -- reconciliation and closing ------------------------------------------------------
    def _reconcile(self, messages: list, agent: AgentState | None, node: str | None = None) -> None:
        """Error ToolMessages answering a call no tool callback saw. From a node that paused
        on `interrupt()` in this run and was resumed (an approval step): the person declined
        the call, recorded as declined. Otherwise ToolNode's reply to an unknown tool name:
        not_executed. Told from the record's structure, never from the message text."""
        fallback = None
        declined = node is not None and self._asked_and_answered(node, agent)
        for m in messages:
            if not isinstance(m, ToolMessage) or m.status != "error":
                continue
            call_id = m.tool_call_id
            if not call_id or call_id in self._seen_call_ids:
                continue
            self._seen_call_ids.add(call_id)
            tool = ToolState()
            tool.seq = next(self._seq)
            tool.call_id = call_id
            requested = self._requested.get(call_id)
            if requested is None:
                if fallback is None:
                    fallback = requested_calls(messages)
                name, args = fallback.get(call_id, (m.name or "unknown", {}))
                requested = (
                    name,
                    args,
                    agent.name if agent else self.agent_name,
                    agent.depth if agent else 0,
                    None,
                    None,
                )
            tool.name, tool.arguments, tool.agent, tool.depth = requested[:4]
            tool.node = None
            tool.model_turn, tool.index_in_turn = requested[4], requested[5]
            tool.start_ns = time.time_ns()
            parent = agent.span if agent is not None else self._question
            tool.span = self._tool_span(tool, parent, start_ns=tool.start_ns)
            self._tools.append(tool)
            if declined:
                message = f"declined at {node}: the tool did not run"
                finish_tool(
                    tool, Outcome.DECLINED, None, plain(m), message=message, end_ns=tool.start_ns
                )
                continue
            finish_tool(
                tool,
                Outcome.NOT_EXECUTED,
                "UnknownTool",
                plain(m),
                message="no tool ran for this call",
                end_ns=tool.start_ns,
            )

    def _asked_and_answered(self, node: str, agent: AgentState | None) -> bool:
        """Whether `node` (of `agent`) paused on an interrupt that was answered."""
        name = agent.name if agent is not None else self.agent_name
        return any(
            i.node == node and i.agent == name and i.resumed for i in self._interrupts.values()
        )

    def _close_open(self, where: str) -> None:
        """End every span still open as cancelled (abandoned stream, cancelled task)."""
        for run in list(self._runs.values()):
            if run.tool is not None and run.tool.outcome is None:
                finish_tool(
                    run.tool,
                    Outcome.CANCELLED,
                    "cancelled",
                    None,
                    message=f"still running at {where}",
                )
            elif run.span is not None and run.span.is_recording():
                run.span.set_attribute(sc.ERROR_TYPE, "cancelled")
                run.span.set_status(Status(StatusCode.ERROR, f"still running at {where}"))
                run.span.end()
        self._runs.clear()
        for tool in self._tools:
            if tool.outcome is None:
                finish_tool(
                    tool, Outcome.CANCELLED, "cancelled", None, message=f"still running at {where}"
                )
        for pending in self._interrupts.values():
            if pending.end_ns == 0:
                pending.finish(resumed=False)
        for node in self._nodes:
            if node.end_ns == 0:
                node.end_ns = time.time_ns()
                node.outcome = "cancelled"
