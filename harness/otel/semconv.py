"""Every span and attribute name tracegrade writes, in one place.

Three families: the OpenTelemetry GenAI conventions (Development status, so kept here where a
rename is one edit), their OpenInference twins (so Phoenix and trace-based tools read the same
spans), and our own under `tracegrade.*` (never under `gen_ai.*`).
"""

from __future__ import annotations

# -- span names ----------------------------------------------------------------------------
SPAN_QUESTION = "tracegrade.question"
"""Root span of one question run."""
SPAN_INVOKE_AGENT = "invoke_agent"
"""Prefix: `invoke_agent {agent}`."""
SPAN_CHAT = "chat"
"""Prefix: `chat {model}`."""
SPAN_EXECUTE_TOOL = "execute_tool"
"""Prefix: `execute_tool {tool}`."""
SPAN_INTERRUPT = "tracegrade.interrupt"
"""A pause on LangGraph's `interrupt()`: from the moment it was raised until it was answered
(or the question ended)."""

# -- OTel GenAI ----------------------------------------------------------------------------
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
"""One question run (run, target, question, trial): `conversation_id()`. Backends group a
session by it, so it must never repeat across runs, targets or trials; the question id has its
own attribute (`TG_QUESTION_ID`, `AGENTEVALS_CASE_ID`)."""
# What an evaluator concluded about a span (GenAI conventions, Development): one event per
# grade on the span it judged.
GEN_AI_EVALUATION_RESULT = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_NAME = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"
TG_EVALUATION_KIND = "tracegrade.evaluation.kind"
"""`code` (a deterministic grader), `llm` (a judge) or `human` (a person's label)."""
TG_EVALUATION_GRADING = "tracegrade.evaluation.grading"
"""Which grading of the run the grade belongs to (1 the run's own, 2+ a re-grade)."""
TG_EVALUATION_STATUS = "tracegrade.evaluation.status"
"""On a root span `receive --forward` sent on before its grade was known: `ungraded`."""
GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
"""JSON: the messages an agent was invoked with, in the GenAI structured form (role, parts)."""
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
"""JSON: the agent's final message(s), in the same form, with a `finish_reason`."""
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_TYPE = "gen_ai.tool.type"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
ERROR_TYPE = "error.type"

OP_INVOKE_AGENT = "invoke_agent"
OP_CHAT = "chat"
OP_EXECUTE_TOOL = "execute_tool"

# -- OpenInference twins -------------------------------------------------------------------
OI_SPAN_KIND = "openinference.span.kind"
OI_KIND_AGENT = "AGENT"
OI_KIND_LLM = "LLM"
OI_KIND_TOOL = "TOOL"
OI_KIND_CHAIN = "CHAIN"
OI_TOOL_NAME = "tool.name"
OI_TOOL_ID = "tool.id"
OI_TOOL_CALL_ID = "tool_call.id"
OI_INPUT_VALUE = "input.value"
OI_INPUT_MIME_TYPE = "input.mime_type"
OI_OUTPUT_VALUE = "output.value"
OI_OUTPUT_MIME_TYPE = "output.mime_type"
OI_LLM_MODEL_NAME = "llm.model_name"
OI_AGENT_NAME = "agent.name"
OI_TOKEN_COUNT_PROMPT = "llm.token_count.prompt"
OI_TOKEN_COUNT_COMPLETION = "llm.token_count.completion"
OI_TOKEN_COUNT_TOTAL = "llm.token_count.total"
OI_PROJECT_NAME = "openinference.project.name"
"""Resource attribute: the Phoenix project a run's spans land in."""
MIME_JSON = "application/json"
MIME_TEXT = "text/plain"

# -- tracegrade ----------------------------------------------------------------------------
TG_QUESTION_ID = "tracegrade.question.id"
TG_RUN_ID = "tracegrade.run.id"
"""The harness run a question span belongs to (its run directory's name)."""
TG_SOURCE_DIALECT = "tracegrade.source.dialect"
"""On a run made by `grade-traces`: the dialect its source trace spoke."""
TG_SOURCE_ROOT_SPAN_ID = "tracegrade.source.root_span_id"
"""On a run made by `grade-traces` or `receive`: the root span of the trace it judged (the
agent's own span, where its grades are shown as Phoenix annotations)."""
AGENTEVALS_CASE_ID = "agentevals.eval.case.id"
"""The dataset case id, as agentevals-cli pairs a trace with a case."""
TG_TRIAL = "tracegrade.trial"
TG_DATASET = "tracegrade.dataset"
TG_TARGET = "tracegrade.target"
TG_AGENT = "tracegrade.agent"
"""Name of the (sub)graph that ran a tool, or of the agent an invoke_agent span stands for."""
TG_DEPTH = "tracegrade.depth"
TG_QUALIFIED_ID = "tracegrade.tool.qualified_id"
TG_SEQ = "tracegrade.tool.seq"
TG_OUTCOME = "tracegrade.tool.outcome"
TG_WORLD = "tracegrade.tool.world"
"""What the question's world did to this call (a fault, a fixture, planted text, a delay), in
words; absent when the agent met the real tool."""
TG_MODEL_TURN = "tracegrade.tool.model_turn"
TG_INDEX_IN_TURN = "tracegrade.tool.index_in_turn"
TG_RESULT_ENCODING = "tracegrade.tool.result_encoding"
""""text" when the result attribute holds the tool's string as is, "json" when JSON-encoded."""
TG_REPLAYED = "tracegrade.replayed"
"""On a chat span: the call was answered from a cassette (recorded, not made)."""
TG_RECORD_COMPLETE = "tracegrade.record.complete"
TG_RECORD_CALLS = "tracegrade.record.calls"
TG_RECORD_PROBLEMS = "tracegrade.record.problems"
TG_TURN_STARTS = "tracegrade.turn_starts"
"""On the question span of a conversation: when each user turn was sent (epoch ns)."""

TG_NODE = "tracegrade.node"
"""On a tool span: the graph node (task) the tool ran in."""
TG_NODES = "tracegrade.nodes"
"""On the question span: the path through the graph, every node run as JSON
(`tracegrade.graph_path.encode_nodes`)."""
TG_TOOLS = "tracegrade.tools"
"""On the question span: the tools the agent's models were offered, as JSON
(`tracegrade.toolspec.encode_specs`)."""
TG_ANSWER_NS = "tracegrade.answer_ns"
"""On the question span: when the final answer (the last model turn, of any agent, that
requested no tool) ended, epoch ns."""

TG_INTERRUPT_VALUE = "tracegrade.interrupt.value"
"""JSON: the payload passed to `interrupt()` (redacted like tool arguments)."""
TG_INTERRUPT_ID = "tracegrade.interrupt.id"
TG_INTERRUPT_NODE = "tracegrade.interrupt.node"
TG_INTERRUPT_TOOL = "tracegrade.interrupt.tool"
TG_INTERRUPT_CALL_ID = "tracegrade.interrupt.tool_call_id"
TG_INTERRUPT_SEQ = "tracegrade.interrupt.seq"
TG_INTERRUPT_RESUMED = "tracegrade.interrupt.resumed"
TG_INTERRUPT_RESUME = "tracegrade.interrupt.resume"
"""JSON: the value the interrupt was resumed with (redacted like tool arguments)."""

RESULT_TEXT = "text"
RESULT_JSON = "json"

# Attributes whose values the OTLP redacting wrapper truncates (never the SDK, never the record).
TRUNCATED_ATTRIBUTES: frozenset[str] = frozenset(
    {
        GEN_AI_TOOL_CALL_ARGUMENTS,
        GEN_AI_TOOL_CALL_RESULT,
        OI_INPUT_VALUE,
        OI_OUTPUT_VALUE,
        TG_INTERRUPT_VALUE,
        TG_INTERRUPT_RESUME,
    }
)
# Attributes holding JSON text (tool arguments, messages): redacted by key name, then by value.
ARGUMENT_ATTRIBUTES: frozenset[str] = frozenset(
    {
        GEN_AI_TOOL_CALL_ARGUMENTS,
        OI_INPUT_VALUE,
        GEN_AI_INPUT_MESSAGES,
        GEN_AI_OUTPUT_MESSAGES,
        TG_INTERRUPT_VALUE,
        TG_INTERRUPT_RESUME,
    }
)
EXPORT_TRUNCATE_CHARS = 4096
# Attributes tracegrade fills with names, ids and enums of its own choosing: never secrets, so
# export skips the value scan for them. Every other string attribute is scanned.
STRUCTURAL_ATTRIBUTES: frozenset[str] = frozenset(
    {
        GEN_AI_OPERATION_NAME,
        GEN_AI_AGENT_NAME,
        GEN_AI_PROVIDER_NAME,
        GEN_AI_REQUEST_MODEL,
        GEN_AI_RESPONSE_MODEL,
        GEN_AI_TOOL_NAME,
        GEN_AI_TOOL_TYPE,
        GEN_AI_TOOL_CALL_ID,
        GEN_AI_CONVERSATION_ID,
        ERROR_TYPE,
        OI_SPAN_KIND,
        OI_TOOL_NAME,
        OI_TOOL_ID,
        OI_TOOL_CALL_ID,
        OI_INPUT_MIME_TYPE,
        OI_OUTPUT_MIME_TYPE,
        OI_LLM_MODEL_NAME,
        OI_AGENT_NAME,
        TG_QUESTION_ID,
        TG_RUN_ID,
        AGENTEVALS_CASE_ID,
        TG_DATASET,
        TG_TARGET,
        TG_AGENT,
        TG_QUALIFIED_ID,
        TG_OUTCOME,
        TG_WORLD,
        TG_RESULT_ENCODING,
        TG_INTERRUPT_ID,
        TG_INTERRUPT_NODE,
        TG_INTERRUPT_TOOL,
        TG_INTERRUPT_CALL_ID,
        TG_NODE,
    }
)


def conversation_id(*, run_id: str, target: str, question_id: str, trial: int) -> str:
    """The `gen_ai.conversation.id` of one question run: unique per (run, target, question,
    trial), so a backend's session never merges two runs of a question."""
    return f"{run_id}/{target}/{question_id}/{trial}"
