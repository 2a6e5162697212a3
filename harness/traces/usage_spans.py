"""What an agent's model calls used, read from a trace's spans: OpenInference LLM spans
(`llm.token_count.prompt`, `llm.token_count.completion`, `llm.model_name`) and OTel GenAI chat
spans (`gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`, the response or request
model). Priced by the same table as a run (`tracegrade.cost.pricing`); a trace whose spans carry no
token count has no accounting, and the gate's budgets are not applicable to it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..cost.usage import ModelCall, token_count
from ..otel import semconv as sc

__all__ = ["NO_TOKEN_COUNTS", "model_calls_of"]

NO_TOKEN_COUNTS = (
    "the trace's spans carry no token counts (llm.token_count.* or gen_ai.usage.*): "
    "budgets are not applicable to it"
)
_OI_CACHED = "llm.token_count.prompt_details.cache_read"
_GENAI_OPERATIONS = ("chat", "text_completion", "generate_content")


def _call(span: Any, model: Any, inp: Any, out: Any, cached: Any = None) -> ModelCall:
    return ModelCall(
        model=str(model or "unknown"),
        input_tokens=token_count(inp),
        output_tokens=token_count(out),
        cached_tokens=token_count(cached),
        latency_s=max(0, span.end_ns - span.start_ns) / 1e9,
    )


def model_calls_of(spans: Sequence[Any]) -> list[ModelCall] | None:
    """The model calls the trace's spans record, in start order; None when no span carries a
    token count (then nothing is known of what the agent used)."""
    calls = []
    counted = False
    for span in sorted(spans, key=lambda s: s.start_ns):
        a = span.attributes
        if a.get(sc.OI_SPAN_KIND) == "LLM":
            inp, out = a.get(sc.OI_TOKEN_COUNT_PROMPT), a.get(sc.OI_TOKEN_COUNT_COMPLETION)
            calls.append(_call(span, a.get(sc.OI_LLM_MODEL_NAME), inp, out, a.get(_OI_CACHED)))
        elif a.get(sc.GEN_AI_OPERATION_NAME) in _GENAI_OPERATIONS:
            model = a.get(sc.GEN_AI_RESPONSE_MODEL) or a.get(sc.GEN_AI_REQUEST_MODEL)
            inp, out = a.get(sc.GEN_AI_USAGE_INPUT_TOKENS), a.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS)
            calls.append(_call(span, model, inp, out))
        else:
            continue
        counted = (
            counted or calls[-1].input_tokens is not None or calls[-1].output_tokens is not None
        )
    return calls if counted else None
