"""The base of `tracegrade.capture.recorder.Recorder`: a question run's capture state, the
span helpers every callback uses, and the chat-model callbacks (each model call's span, the
tool calls it requested, its reported usage and latency: `model_calls`). The recorder adds the
question scope, agents and graph tasks, tools, interrupts and the sealed record."""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from collections.abc import Mapping
from typing import Any
from uuid import UUID, uuid4

from langchain_core.callbacks import BaseCallbackHandler
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from ..cost.usage import ModelCall, model_call, token_count
from ..graph_path import NodeRun
from ..otel import semconv as sc
from ..records import ToolRecord
from ..redaction import truncate
from ..toolspec import ToolSpec, tool_spec
from .cassette import REPLAYED
from .reconcile import (
    genai_messages,
)
from .spans import LiteSpan, SpanSink
from .state import (
    InterruptState,
    NodeState,
    RunState,
    ToolState,
)
from .tracefile import graph_attributes

__all__ = ["ModelCallRecorder"]

log = logging.getLogger("tracegrade.capture.recorder")


class ModelCallRecorder(BaseCallbackHandler):
    """A question run's capture state and its chat-model callbacks (see the module docstring)."""

    run_inline = True
    raise_error = False
    ignore_retriever = True
    ignore_retry = True
    ignore_custom_event = False  # a question's world marks the calls it acted on (rare)

    def __init__(
        self,
        *,
        tracer: trace.Tracer,
        question_id: str,
        dataset: str,
        target: str,
        agent_name: str,
        question_input: str | None = None,
        trial: int = 0,
        run_id: str = "",
        message_chars: int | None = None,
    ) -> None:
        self.tracer = tracer
        self.question_input = question_input
        """The question as the agent got it, for the question span's `input.value`."""
        self._sink = SpanSink(tracer)
        self.question_id = question_id
        self.trial = trial
        """Trial index of this question run (targets with `repeats`)."""
        self.run_id = run_id or f"adhoc-{uuid4().hex[:12]}"
        """The harness run (its directory's name); a recorder outside a run gets its own."""
        self.message_chars = message_chars
        """Opt-in: put each model call's messages and answer on its chat span, each cut to
        this many characters (None: not recorded). Redacted on every export like arguments."""
        self.conversation_id = sc.conversation_id(
            run_id=self.run_id, target=target, question_id=question_id, trial=trial
        )
        self.dataset = dataset
        self.target = target
        self.agent_name = agent_name
        self.problems: list[str] = []
        """Failures collected inside the recorder; any makes the sealed record incomplete."""
        self._lock = threading.Lock()
        self._runs: dict[int, RunState] = {}  # keyed by run_id.int: UUID hashing is slow Python
        self._tools: list[ToolState] = []
        self._seen_call_ids: set[str] = set()
        self._requested: dict[str, tuple[str, dict, str, int, int | None, int | None]] = {}
        self._turns: dict[str, int] = {}
        self._seq = itertools.count()
        self._question: Any = None
        self._question_closed = False
        self._hold_question = False
        self._trace_id: str | None = None
        self._record: ToolRecord | None = None
        self._interrupts: dict[str, InterruptState] = {}
        self._turn_starts: list[int] = []
        self.model_calls: list[ModelCall] = []
        """Each chat model call with the usage it reported (None counts: unknown) and its
        latency, in the order they ended."""
        self._nodes: list[NodeState] = []
        self._invocations = 0
        self._offered: dict[tuple[str, str], ToolSpec] = {}
        self._offered_seen: set[tuple[str, int]] = set()
        self._answer_ns: int | None = None
        self._closed_nodes: tuple[NodeRun, ...] | None = None

    @property
    def _ended(self) -> bool:
        """Capture is over (question span closed or record sealed): late starts are ignored."""
        return self._record is not None or self._question_closed

    def _collect(self, where: str, exc: BaseException) -> None:
        with self._lock:
            self._collect_locked(where, exc)

    def _collect_locked(self, where: str, exc: BaseException) -> None:
        self.problems.append(f"{where}: {type(exc).__name__}: {exc}")
        log.exception("capture failure in %s (question %s)", where, self.question_id)

    # -- span helpers --------------------------------------------------------------------
    def _start(
        self,
        name: str,
        parent: LiteSpan | None,
        attributes: dict,
        *,
        kind=SpanKind.INTERNAL,
        start_ns: int | None = None,
    ) -> LiteSpan:
        span = self._sink.start(name, parent, attributes, kind=kind, start_ns=start_ns)
        if self._trace_id is None:
            self._trace_id = format(span.context.trace_id, "032x")
        return span

    def _parent(self, parent_run_id: UUID | None) -> RunState | None:
        return self._runs.get(parent_run_id.int) if parent_run_id is not None else None

    # -- chat models ---------------------------------------------------------------------
    def on_chat_model_start(
        self,
        serialized,
        messages,
        *,
        run_id,
        parent_run_id=None,
        tags=None,
        metadata=None,
        **kwargs,
    ) -> None:
        try:
            prompt = messages[0] if messages and self.message_chars is not None else None
            self._model_start(serialized, run_id, parent_run_id, metadata, kwargs, prompt)
        except Exception as exc:  # isolation point: collected, never raised into the run
            self._collect("on_chat_model_start", exc)

    def on_llm_start(
        self, serialized, prompts, *, run_id, parent_run_id=None, tags=None, metadata=None, **kwargs
    ) -> None:
        try:
            self._model_start(serialized, run_id, parent_run_id, metadata, kwargs)
        except Exception as exc:  # isolation point: collected, never raised into the run
            self._collect("on_llm_start", exc)

    def _messages_text(self, messages: Any, *, output: bool = False) -> str:
        text = json.dumps(genai_messages(messages, output=output), ensure_ascii=False)
        return truncate(text, self.message_chars or 0)

    def _model_start(
        self, serialized, run_id, parent_run_id, metadata, kwargs, prompt=None
    ) -> None:
        params = kwargs.get("invocation_params") or {}
        model = (
            (metadata or {}).get("ls_model_name")
            or params.get("model_name")
            or params.get("model")
            or kwargs.get("name")
            or "model"
        )
        with self._lock:
            if self._ended:
                return
            parent = self._parent(parent_run_id)
            agent = parent.agent if parent is not None else None
            run = RunState(str(model), agent, parent.parent_span if parent else self._question)
            attributes = {
                sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                sc.GEN_AI_REQUEST_MODEL: run.name,
                sc.OI_SPAN_KIND: sc.OI_KIND_LLM,
                sc.OI_LLM_MODEL_NAME: run.name,
            }
            provider = (metadata or {}).get("ls_provider")
            if provider:
                attributes[sc.GEN_AI_PROVIDER_NAME] = provider
            if prompt is not None:  # opt-in (telemetry.capture_messages)
                text = self._messages_text(prompt)
                attributes[sc.GEN_AI_INPUT_MESSAGES] = text
                attributes[sc.OI_INPUT_VALUE] = text
                attributes[sc.OI_INPUT_MIME_TYPE] = sc.MIME_JSON
            if agent is not None:
                attributes[sc.TG_AGENT] = agent.name
                tools = params.get("tools")
                if tools:
                    self._offer(agent.name, tools)
            run.span = self._start(
                f"{sc.SPAN_CHAT} {run.name}", run.parent_span, attributes, kind=SpanKind.CLIENT
            )
            self._runs[run_id.int] = run

    def on_llm_end(self, response, *, run_id, **kwargs) -> None:
        try:
            with self._lock:
                run = self._runs.pop(run_id.int, None)
                if run is None or run.span is None:
                    return
                generations = response.generations[0] if response.generations else []
                message = getattr(generations[0], "message", None) if generations else None
                if message is not None and self.message_chars is not None:
                    text = self._messages_text([message], output=True)
                    run.span.set_attribute(sc.GEN_AI_OUTPUT_MESSAGES, text)
                    run.span.set_attribute(sc.OI_OUTPUT_VALUE, text)
                    run.span.set_attribute(sc.OI_OUTPUT_MIME_TYPE, sc.MIME_JSON)
                usage = getattr(message, "usage_metadata", None) if message is not None else None
                if usage is None and isinstance(response.llm_output, Mapping):
                    usage = response.llm_output.get("token_usage") or None
                replayed = _take_replayed(message)
                if replayed:
                    run.span.set_attribute(sc.TG_REPLAYED, True)
                self.model_calls.append(
                    model_call(
                        run.name, usage, (time.time_ns() - run.start_ns) / 1e9, replayed=replayed
                    )
                )
                if message is not None:
                    if usage:
                        self._set_usage(run.span, usage)
                    agent = run.agent
                    if not getattr(message, "tool_calls", None):
                        # The last model turn, of any agent, that asked for no tool: the answer.
                        self._answer_ns = time.time_ns()
                    if agent is not None:
                        turn = self._turns.get(agent.name, 0)
                        self._turns[agent.name] = turn + 1
                        for index, tc in enumerate(getattr(message, "tool_calls", None) or ()):
                            if tc.get("id"):
                                self._requested[tc["id"]] = (
                                    tc["name"],
                                    tc.get("args") or {},
                                    agent.name,
                                    agent.depth,
                                    turn,
                                    index,
                                )
                run.span.end()
        except Exception as exc:  # isolation point: collected, never raised into the run
            self._collect("on_llm_end", exc)

    # -- the tools offered, the path through the graph -----------------------------------
    def _offer(self, agent: str, tools: Any) -> None:
        """The tools a model of `agent` was bound to. A binding passes the same list object
        on every call, so each list is read once (called under the lock)."""
        key = (agent, id(tools))
        if key in self._offered_seen:
            return
        self._offered_seen.add(key)
        for raw in tools if isinstance(tools, list | tuple) else ():
            spec = tool_spec(raw, agent)
            if spec is not None:
                self._offered[(agent, spec.name)] = spec

    def _offered_specs(self) -> tuple[ToolSpec, ...] | None:
        return tuple(self._offered.values()) if self._offered_seen else None

    def _node_runs(self) -> tuple[NodeRun, ...]:
        if self._closed_nodes is not None:
            return self._closed_nodes
        ordered = sorted(self._nodes, key=lambda n: n.start_ns)
        return tuple(n.freeze(i, self.agent_name) for i, n in enumerate(ordered))

    def _graph_attributes(self, span: Any) -> None:
        """The question span carries the path, the offered tools and the answer time, so a
        trace file or a backend holds what the record holds."""
        nodes = self._node_runs()
        if not self._runs:
            # Every run closed with the question: no callback can change a node now, so the
            # record made at `seal` takes these (freezing them was a tenth of the capture).
            self._closed_nodes = nodes
        facts = graph_attributes(nodes, self._offered_specs(), self._answer_ns)
        for key, value in facts.items():
            span.set_attribute(key, value)

    @staticmethod
    def _set_usage(span: LiteSpan, usage: Any) -> None:
        """Token counts the model reported, under both conventions' names (a count that is
        not a finite number is unknown: not written)."""
        prompt = token_count(usage.get("input_tokens"))
        completion = token_count(usage.get("output_tokens"))
        if prompt is not None:
            span.set_attribute(sc.GEN_AI_USAGE_INPUT_TOKENS, prompt)
            span.set_attribute(sc.OI_TOKEN_COUNT_PROMPT, prompt)
        if completion is not None:
            span.set_attribute(sc.GEN_AI_USAGE_OUTPUT_TOKENS, completion)
            span.set_attribute(sc.OI_TOKEN_COUNT_COMPLETION, completion)
        total = token_count(usage.get("total_tokens"))
        if total is None and prompt is not None and completion is not None:
            total = prompt + completion
        if total is not None:
            span.set_attribute(sc.OI_TOKEN_COUNT_TOTAL, total)

    def on_llm_error(self, error, *, run_id, **kwargs) -> None:
        try:
            with self._lock:
                run = self._runs.pop(run_id.int, None)
                if run is None or run.span is None:
                    return
                self.model_calls.append(
                    model_call(run.name, None, (time.time_ns() - run.start_ns) / 1e9)
                )
                run.span.set_attribute(sc.ERROR_TYPE, type(error).__name__)
                run.span.set_status(Status(StatusCode.ERROR, type(error).__name__))
                run.span.end()
        except Exception as exc:  # isolation point: collected, never raised into the run
            self._collect("on_llm_error", exc)


def _take_replayed(message: Any) -> bool:
    """Whether a cassette answered this call; the flag is removed so the agent never sees it."""
    metadata = getattr(message, "response_metadata", None)
    if not isinstance(metadata, dict) or REPLAYED not in metadata:
        return False
    return bool(metadata.pop(REPLAYED))
