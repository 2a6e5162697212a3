"""One agent trace, whatever wrote it, as the tool-call record the graders read.

Three span dialects:

- **tracegrade**: a `tracegrade.question` root and GenAI spans carrying `tracegrade.*`
  attributes (outcome, turn, agent, depth): read as the run's own trace file is.
- **genai**: the OpenTelemetry GenAI conventions alone: `execute_tool` spans (tool name, call
  id, arguments, result, `error.type`), `chat` spans whose `gen_ai.output.messages` hold the
  calls each model turn requested, `invoke_agent` spans for agents and sub-agents.
- **openinference**: what `openinference-instrumentation-langchain` writes for a LangGraph
  app: CHAIN spans for the graph and its nodes, LLM spans whose `llm.output_messages` hold the
  requested calls (id, name, arguments), TOOL spans for the tools that ran.

In every dialect a call a model requested that no tool span answers is `not_executed`, calls
are ordered by (model turn, index in the message), and a span whose parent is missing from the
trace makes the record incomplete (part of the trace was lost), never silently shorter.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..cost.usage import ModelCall
from ..otel import semconv as sc
from ..records import Outcome, ToolCall, ToolRecord, finalize_calls
from .graph_facts import openinference_facts, question_span_facts
from .messages import state_messages
from .spans import Span, json_loads
from .usage_spans import model_calls_of

__all__ = ["DIALECTS", "AgentTrace", "agent_trace", "conversation_of", "dialect_of"]

DIALECTS = ("tracegrade", "genai", "openinference")
_OI_SESSION_ID = "session.id"
_ERROR = 2


@dataclass(slots=True)
class AgentTrace:
    """What a trace says about one agent run: its record and what pairs it with a question."""

    trace_id: str
    dialect: str
    record: ToolRecord
    question_id: str | None
    """An explicit question id attribute (`tracegrade.question.id`, `agentevals.eval.case.id`)."""
    conversation_id: str | None
    user_message: str | None
    """The first user message the agent was given."""
    answer: str
    error: str | None
    """The root span ended in error (the agent raised): the question errors."""
    error_type: str | None
    start_ns: int
    end_ns: int
    span_count: int
    turns: tuple[tuple[str, str], ...] = ()
    """A conversation read from several traces (`traces.conversations`): each user turn's
    message and the agent's answer to it, in order; () for one trace."""
    model_calls: list[ModelCall] | None = None
    """The agent's model calls with the tokens its spans report (`usage_spans`); None when no
    span carries a token count."""
    root_span_id: str | None = None
    """The trace's root span (the first turn's in a conversation); None when no span of the
    trace is a root (its root was never received)."""


def dialect_of(spans: Sequence[Span]) -> str | None:
    """Which dialect a trace speaks; None when it holds no agent spans at all."""
    found = None
    for s in spans:
        if s.name == sc.SPAN_QUESTION:
            return "tracegrade"
        if sc.GEN_AI_OPERATION_NAME in s.attributes:
            found = "genai"
        elif found is None and sc.OI_SPAN_KIND in s.attributes:
            found = "openinference"
    return found


def agent_trace(spans: Sequence[Span]) -> AgentTrace | None:
    """The agent run in one trace's spans, or None when the trace holds no agent spans."""
    dialect = dialect_of(spans)
    if dialect is None:
        return None
    by_id = {s.span_id: s for s in spans}
    roots = [s for s in spans if not s.parent_id]
    root = min(roots, key=lambda s: s.start_ns) if roots else min(spans, key=lambda s: s.start_ns)
    problems = [
        f"span {s.name!r} ({s.span_id}): its parent {s.parent_id} is missing from the trace"
        for s in spans
        if s.parent_id and s.parent_id not in by_id
    ][:5]
    if not roots:
        problems.insert(0, "the trace's root span is missing")
    if dialect == "openinference":
        # each span's metadata JSON is parsed once, the graph runs found once: the calls, the
        # graph path and the agents all read them (parsing them per reader was a third of it)
        metadata = _metadata_of(spans)
        graphs = _oi_graphs(spans, by_id, metadata)
        calls, user, answer = _openinference(spans, by_id, graphs)
        facts = openinference_facts(spans, by_id, metadata, lambda s: _oi_agent(s, by_id, graphs))
    else:
        calls, user, answer = _genai(spans, by_id)
        facts = question_span_facts(spans)
    complete = not problems
    if dialect == "tracegrade":
        question = next(s for s in spans if s.name == sc.SPAN_QUESTION)
        root = question
        complete = complete and bool(question.attributes.get(sc.TG_RECORD_COMPLETE, True))
        problems += list(question.attributes.get(sc.TG_RECORD_PROBLEMS) or ())
        user = question.attributes.get(sc.OI_INPUT_VALUE) or user
        answer = question.attributes.get(sc.OI_OUTPUT_VALUE) or answer
    error = error_type = None
    if root.status_code == _ERROR:
        error_type = root.attributes.get(sc.ERROR_TYPE) or _error_type(root.status_message)
        error = f"the agent's run ended in error: {root.status_message or error_type or 'error'}"
    return AgentTrace(
        trace_id=root.trace_id,
        dialect=dialect,
        record=ToolRecord(
            finalize_calls(calls), complete=complete, problems=tuple(problems), **facts
        ),
        question_id=_first_attribute(spans, root, (sc.TG_QUESTION_ID, sc.AGENTEVALS_CASE_ID)),
        conversation_id=conversation_of(spans, root),
        user_message=user,
        answer=answer or "",
        error=error,
        error_type=error_type,
        start_ns=min(s.start_ns for s in spans),
        end_ns=max(s.end_ns for s in spans),
        span_count=len(spans),
        model_calls=model_calls_of(spans),
        root_span_id=None if root.parent_id else root.span_id,
    )


def conversation_of(spans: Sequence[Span], root: Span | None = None) -> str | None:
    """The conversation a trace belongs to (`session.id`, `gen_ai.conversation.id`, LangGraph's
    `thread_id`), read from its spans alone: what `receive --workers` routes a conversation's
    traces by, so one worker holds them all. `root`: the trace's question or root span."""
    if root is None:
        roots = [s for s in spans if s.name == sc.SPAN_QUESTION] or [
            s for s in spans if not s.parent_id
        ]
        root = min(roots or spans, key=lambda s: s.start_ns)
    keys = (sc.GEN_AI_CONVERSATION_ID, _OI_SESSION_ID)
    return _first_attribute(spans, root, keys) or _thread_id(root)


def _thread_id(root: Span) -> str | None:
    """LangGraph's `thread_id`, which OpenInference writes into the root's `metadata` JSON: a
    conversation's id when the app sets neither session.id nor gen_ai.conversation.id."""
    metadata = root.attributes.get("metadata")
    if not isinstance(metadata, str) or "thread_id" not in metadata:
        return None
    try:
        value = json_loads(metadata).get("thread_id")
    except (ValueError, AttributeError):
        return None
    return str(value) if value not in (None, "") else None


def _first_attribute(spans: Sequence[Span], root: Span, keys: Sequence[str]) -> str | None:
    for span in (root, *sorted(spans, key=lambda s: s.start_ns)):
        for key in keys:
            value = span.attributes.get(key)
            if value not in (None, ""):
                return str(value)
    return None


_IDENT = re.compile(r"[A-Za-z_][\w.]*")


def _error_type(message: str) -> str | None:
    match = _IDENT.match(message or "")
    return match.group(0).rsplit(".", 1)[-1] if match else None


def _arguments(text: Any) -> dict[str, Any]:
    if isinstance(text, Mapping):
        return dict(text)
    if not isinstance(text, str) or not text:
        return {}
    try:
        value = json_loads(text)
    except (ValueError, RecursionError):  # malformed, or nested too deep
        return {"input": text}
    return value if isinstance(value, dict) else {"input": value}


@dataclass(slots=True)
class _Requested:
    call_id: str | None
    name: str
    arguments: dict[str, Any]
    turn: int
    index: int
    agent: str
    depth: int
    start_ns: int
    answered: bool = False


def _ancestors(span: Span, by_id: Mapping[str, Span]) -> Iterable[Span]:
    seen = 0
    parent = by_id.get(span.parent_id)
    while parent is not None and seen < 10_000:  # a cycle in hostile input ends here
        yield parent
        parent = by_id.get(parent.parent_id)
        seen += 1


def _not_executed(requested: Iterable[_Requested]) -> list[ToolCall]:
    """Requested calls no tool span answered, placed in time where their request ended."""
    out = []
    for r in requested:
        if r.answered:
            continue
        out.append(
            ToolCall(
                seq=0,
                name=r.name,
                qualified_id=f"{r.agent}:{r.name}",
                call_id=r.call_id,
                arguments=r.arguments,
                outcome=Outcome.NOT_EXECUTED,
                error_type="UnknownTool",  # as the recorder names it
                error_message="no tool ran for this call",
                result=None,
                agent=r.agent,
                depth=r.depth,
                model_turn=r.turn,
                index_in_turn=r.index,
                start_ns=r.start_ns,
                end_ns=r.start_ns,
            )
        )
    return out


def _match(
    requested: list[_Requested], call_id: str | None, name: str, agent: str, start_ns: int
) -> _Requested | None:
    if call_id:
        for r in requested:
            if r.call_id == call_id and not r.answered:
                return r
    # no id on the tool span: the latest turn of its agent requested before it started
    candidates = [r for r in requested if r.agent == agent and r.start_ns <= start_ns]
    if not candidates:  # clocks of different hosts: any turn of its agent
        candidates = [r for r in requested if r.agent == agent]
    if not candidates:
        return None
    turn = max(r.turn for r in candidates)
    for r in candidates:
        if r.turn == turn and r.name == name and not r.answered:
            return r
    return None


# -- OTel GenAI (and tracegrade's own spans) ---------------------------------------------
def _genai_parts(text: Any) -> list[dict[str, Any]]:
    try:
        messages = json_loads(text) if isinstance(text, str) else text
    except (ValueError, RecursionError):  # malformed, or nested too deep
        return []
    return [m for m in messages or () if isinstance(m, dict)] if isinstance(messages, list) else []


def _genai_text(message: Mapping[str, Any]) -> str:
    return "".join(
        str(p.get("content", ""))
        for p in message.get("parts") or ()
        if isinstance(p, dict) and p.get("type") == "text"
    )


def _genai_agent(span: Span, by_id: Mapping[str, Span]) -> tuple[str, int]:
    agents = [
        a
        for a in _ancestors(span, by_id)
        if a.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_INVOKE_AGENT
    ]
    if span.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_INVOKE_AGENT:
        agents.insert(0, span)
    if not agents:
        return "", 0
    name = agents[0].attributes.get(sc.GEN_AI_AGENT_NAME) or agents[0].name.removeprefix(
        sc.SPAN_INVOKE_AGENT + " "
    )
    return str(name), len(agents) - 1


def _genai(
    spans: Sequence[Span], by_id: Mapping[str, Span]
) -> tuple[list[ToolCall], str | None, str]:
    ordered = sorted(spans, key=lambda s: s.start_ns)
    requested: list[_Requested] = []
    turns: dict[str, int] = {}  # model turns are numbered per agent, as the recorder does
    user: str | None = None
    answer = ""
    top_agent_start = None
    for s in ordered:
        op = s.attributes.get(sc.GEN_AI_OPERATION_NAME)
        if op == sc.OP_CHAT:
            agent, depth = _genai_agent(s, by_id)
            turn = turns[agent] = turns.get(agent, -1) + 1
            out = _genai_parts(s.attributes.get(sc.GEN_AI_OUTPUT_MESSAGES))
            index = 0
            for message in out:
                for part in message.get("parts") or ():
                    if isinstance(part, dict) and part.get("type") == "tool_call":
                        requested.append(
                            _Requested(
                                part.get("id"),
                                str(part.get("name", "")),
                                _arguments(part.get("arguments")),
                                turn,
                                index,
                                agent,
                                depth,
                                s.end_ns,
                            )
                        )
                        index += 1
        elif op == sc.OP_INVOKE_AGENT and (top_agent_start is None):
            top_agent_start = s.start_ns
            for message in _genai_parts(s.attributes.get(sc.GEN_AI_INPUT_MESSAGES)):
                if message.get("role") == "user" and user is None:
                    user = _genai_text(message)
            for message in _genai_parts(s.attributes.get(sc.GEN_AI_OUTPUT_MESSAGES)):
                answer = _genai_text(message) or answer
    calls: list[ToolCall] = []
    for s in ordered:
        a = s.attributes
        if a.get(sc.GEN_AI_OPERATION_NAME) != sc.OP_EXECUTE_TOOL:
            continue
        name = str(a.get(sc.GEN_AI_TOOL_NAME) or s.name.removeprefix(sc.SPAN_EXECUTE_TOOL + " "))
        agent, depth = _genai_agent(s, by_id)
        agent = str(a.get(sc.TG_AGENT) or agent)
        depth = int(a.get(sc.TG_DEPTH, depth))
        call_id = a.get(sc.GEN_AI_TOOL_CALL_ID)
        asked = _match(requested, call_id, name, agent, s.start_ns)
        if asked is not None:
            asked.answered = True
        arguments = (
            _arguments(a[sc.GEN_AI_TOOL_CALL_ARGUMENTS])
            if sc.GEN_AI_TOOL_CALL_ARGUMENTS in a
            else asked.arguments
            if asked is not None
            else {}
        )
        result = a.get(sc.GEN_AI_TOOL_CALL_RESULT)
        if result is not None and a.get(sc.TG_RESULT_ENCODING) == sc.RESULT_JSON:
            with contextlib.suppress(ValueError, RecursionError):
                result = json_loads(result)
        error_type = a.get(sc.ERROR_TYPE)
        if sc.TG_OUTCOME in a:
            outcome = Outcome(a[sc.TG_OUTCOME])
        else:
            outcome = Outcome.ERROR if error_type or s.status_code == _ERROR else Outcome.OK
        if outcome is Outcome.ERROR and not error_type:
            error_type = _error_type(s.status_message)
        status_text = s.status_message or None
        if status_text in (error_type, a.get(sc.TG_OUTCOME)):
            status_text = None
        calls.append(
            ToolCall(
                seq=int(a.get(sc.TG_SEQ, 0)),  # without one: start order
                name=name,
                qualified_id=str(a.get(sc.TG_QUALIFIED_ID) or f"{agent}:{name}"),
                call_id=call_id,
                arguments=arguments,
                outcome=outcome,
                error_type=error_type,
                error_message=status_text,
                result=result,
                agent=agent,
                depth=depth,
                model_turn=a.get(sc.TG_MODEL_TURN, asked.turn if asked else None),
                index_in_turn=a.get(sc.TG_INDEX_IN_TURN, asked.index if asked else None),
                span_id=s.span_id,
                trace_id=s.trace_id,
                start_ns=s.start_ns,
                end_ns=s.end_ns,
            )
        )
    if not any(sc.TG_OUTCOME in s.attributes for s in spans):
        calls += _not_executed(requested)
    return calls, user, answer


# -- OpenInference (openinference-instrumentation-langchain) -----------------------------
_OI_CALL = re.compile(
    r"llm\.output_messages\.(\d+)\.message\.tool_calls\.(\d+)\.tool_call\.(id|function\.name|function\.arguments)$"
)


def _metadata(span: Span) -> dict[str, Any]:
    raw = span.attributes.get("metadata")
    if not isinstance(raw, str):
        return raw if isinstance(raw, dict) else {}
    try:
        value = json_loads(raw)
    except (ValueError, RecursionError):  # malformed, or nested too deep
        return {}
    return value if isinstance(value, dict) else {}


def _metadata_of(spans: Sequence[Span]) -> Callable[[Span], dict[str, Any]]:
    """`_metadata`, parsed once per span of the trace."""
    parsed = {id(s): _metadata(s) for s in spans}
    return lambda span: parsed[id(span)] if id(span) in parsed else _metadata(span)


def _oi_graphs(
    spans: Sequence[Span],
    by_id: Mapping[str, Span],
    metadata: Callable[[Span], dict[str, Any]] = _metadata,
) -> set[str]:
    """Span ids of the graph runs. A LangGraph node's span carries `langgraph_node` (its own
    name) in its metadata, and its parent is the graph that ran it; a node's inner runnable of
    the same name (LangGraph wraps each node) is not a graph. The root is the top graph."""
    graphs = {s.span_id for s in spans if not s.parent_id}
    for s in spans:
        parent = by_id.get(s.parent_id)
        if parent is None or metadata(s).get("langgraph_node") != s.name:
            continue
        if parent.name == s.name and metadata(parent).get("langgraph_node") == s.name:
            continue  # the node's own wrapper
        graphs.add(parent.span_id)
    return graphs


def _oi_agent(span: Span, by_id: Mapping[str, Span], graphs: set[str]) -> tuple[str, int]:
    above = [a for a in _ancestors(span, by_id) if a.span_id in graphs]
    if span.span_id in graphs:
        above.insert(0, span)
    if not above:
        return "", 0
    return above[0].name, len(above) - 1


def _oi_user(root: Span) -> str | None:
    """The first user message: the root's `llm.input_messages`, else its `input.value` (a
    user message named by its role alone, as when the graph was given OpenAI-style dicts,
    falls back to the input)."""
    a = root.attributes
    for n in range(50):
        role = a.get(f"llm.input_messages.{n}.message.role")
        if role is None:
            break
        content = a.get(f"llm.input_messages.{n}.message.content")
        if role == "user" and isinstance(content, str) and content:
            return content
    raw = a.get(sc.OI_INPUT_VALUE)
    messages = state_messages(raw)
    if messages is None:
        return raw if isinstance(raw, str) and raw.lstrip()[:1] not in ("{", "[") else None
    return next((text for role, text in messages if role == "user"), None)


def _oi_answer(root: Span) -> str | None:
    """What the graph returned, as a run reads it: the text of the last AI message of the
    root's output (None when the output holds no messages)."""
    messages = state_messages(root.attributes.get(sc.OI_OUTPUT_VALUE))
    if not messages:
        return None
    return next((text for role, text in reversed(messages) if role == "assistant"), None)


def _oi_result(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        value = json_loads(text)
    except (ValueError, RecursionError):  # malformed, or nested too deep
        return text
    if (
        isinstance(value, dict)
        and value.get("type") == "tool"
        and isinstance(value.get("data"), dict)
    ):
        return value["data"].get("content")
    return value


def _oi_tool_call_id(text: Any) -> str | None:
    if not isinstance(text, str) or '"tool_call_id"' not in text:
        return None
    try:
        value = json_loads(text)
    except (ValueError, RecursionError):  # malformed, or nested too deep
        return None
    data = value.get("data") if isinstance(value, dict) else None
    return data.get("tool_call_id") if isinstance(data, dict) else None


def _openinference(
    spans: Sequence[Span], by_id: Mapping[str, Span], graphs: set[str]
) -> tuple[list[ToolCall], str | None, str]:
    ordered = sorted(spans, key=lambda s: s.start_ns)
    requested: list[_Requested] = []
    answer = ""
    turns: dict[str, int] = {}
    for s in ordered:
        if s.attributes.get(sc.OI_SPAN_KIND) != sc.OI_KIND_LLM:
            continue
        agent, depth = _oi_agent(s, by_id, graphs)
        turn = turns[agent] = turns.get(agent, -1) + 1
        found: dict[tuple[int, int], dict[str, str]] = {}
        for key, value in s.attributes.items():
            # the pattern's own words first: an LLM span holds hundreds of other keys
            if ".tool_call." in key and (m := _OI_CALL.match(key)):
                found.setdefault((int(m.group(1)), int(m.group(2))), {})[m.group(3)] = value
        for index, (_, fields) in enumerate(sorted(found.items())):
            requested.append(
                _Requested(
                    fields.get("id"),
                    str(fields.get("function.name", "")),
                    _arguments(fields.get("function.arguments")),
                    turn,
                    index,
                    agent,
                    depth,
                    s.end_ns,
                )
            )
        if not found:  # a turn that asked for no tool: the last such one (any agent) answers
            answer = str(s.attributes.get("llm.output_messages.0.message.content", "") or "")
    calls: list[ToolCall] = []
    for s in ordered:
        a = s.attributes
        if a.get(sc.OI_SPAN_KIND) != sc.OI_KIND_TOOL:
            continue
        name = str(a.get(sc.OI_TOOL_NAME) or s.name)
        agent, depth = _oi_agent(s, by_id, graphs)
        call_id = a.get(sc.OI_TOOL_CALL_ID) or _oi_tool_call_id(a.get(sc.OI_OUTPUT_VALUE))
        asked = _match(requested, call_id, name, agent, s.start_ns)
        if asked is not None:
            asked.answered = True
            call_id = call_id or asked.call_id
        failed = s.status_code == _ERROR
        calls.append(
            ToolCall(
                seq=0,  # start order
                name=name,
                qualified_id=f"{agent}:{name}",
                call_id=call_id,
                arguments=asked.arguments if asked else _arguments(a.get(sc.OI_INPUT_VALUE)),
                outcome=Outcome.ERROR if failed else Outcome.OK,
                error_type=_error_type(s.status_message) if failed else None,
                error_message=(s.status_message or None) if failed else None,
                result=None if failed else _oi_result(a.get(sc.OI_OUTPUT_VALUE)),
                agent=agent,
                depth=depth,
                model_turn=asked.turn if asked else None,
                index_in_turn=asked.index if asked else None,
                span_id=s.span_id,
                trace_id=s.trace_id,
                start_ns=s.start_ns,
                end_ns=s.end_ns,
            )
        )
    calls += _not_executed(requested)
    roots = [s for s in ordered if not s.parent_id] or ordered
    returned = _oi_answer(roots[0])  # what the graph returned wins over its last model turn
    return calls, _oi_user(roots[0]), answer if returned is None else returned
