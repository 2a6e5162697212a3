"""What tracegrade concluded about a question, as the OTel GenAI conventions carry it: one
`gen_ai.evaluation.result` event per grade on the span it judged (the question's root span),
and the same grades as Phoenix span annotations.

Every grade of the run's latest grading becomes one `Evaluation`: each grader's verdict
(`code` for deterministic graders, `llm` for judges, from the grader's own declaration), the
question's overall verdict (`tracegrade`), and each label a person gave (`human`). A skipped
grader concluded nothing and gives none; an errored one gives an evaluation with `error.type`
and no score, never a score of 0.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..otel import semconv as sc
from ..verdicts.result import QuestionResult

__all__ = [
    "Evaluation",
    "evaluations_of",
    "event_attributes",
    "otlp_events",
    "phoenix_annotation",
    "span_events",
]


@dataclass(frozen=True, slots=True)
class Evaluation:
    """One grade of one question run."""

    trace_id: str
    """Hex trace id of the question run: the event goes on its root span."""
    name: str
    """The grader's id, `tracegrade` for the question's verdict, `label:<name>` for a label."""
    kind: str
    """`code`, `llm` or `human` (Phoenix's annotator kinds CODE, LLM, HUMAN)."""
    score: float | None
    """On the grader's own scale; None for a label or an error."""
    label: str | None
    """`pass`, `fail`, `yes`, `no`; None when the evaluation itself errored."""
    explanation: str
    error_type: str | None = None
    time_ns: int = 0
    grading: int | None = None
    question_id: str = ""


def _kind_of(grader_id: str, kinds: dict[str, bool]) -> str:
    return "llm" if kinds.get(grader_id) else "code"


def _llm_kinds(ids: Iterable[str]) -> dict[str, bool]:
    """grader id -> whether it is a judge, from the installed graders' declarations (a grader
    no longer installed, or a grading module's function, counts as code)."""
    from ..graders.registry import load_registry

    registry = load_registry()
    return {i: bool(getattr(registry.get(i), "llm", False)) for i in ids if i in registry}


def _time_ns(stamp: Any, default: int) -> int:
    if isinstance(stamp, str):
        try:
            return int(datetime.fromisoformat(stamp).timestamp() * 1e9)
        except ValueError:
            return default
    return default


def evaluations_of(
    questions: Sequence[QuestionResult], *, grading: int | None = None
) -> list[Evaluation]:
    """Every evaluation of these question runs (their graders, verdicts and labels); a question
    run without a trace id (it never ran) has no span to carry them and gives none."""
    from ..verdicts.scoring import question_passed

    kinds = _llm_kinds({g.grader_id for q in questions for g in q.graders})
    now = time.time_ns()
    found: list[Evaluation] = []
    for q in questions:
        if not q.trace_id:
            continue
        evaluation = functools.partial(
            Evaluation, trace_id=q.trace_id, time_ns=now, grading=grading, question_id=q.id
        )
        for g in q.graders:
            if g.error:
                found.append(
                    evaluation(
                        name=g.grader_id,
                        kind=_kind_of(g.grader_id, kinds),
                        score=None,
                        label=None,
                        explanation=g.reason,
                        error_type="GraderError",
                    )
                )
            elif g.score is not None:
                found.append(
                    evaluation(
                        name=g.grader_id,
                        kind=_kind_of(g.grader_id, kinds),
                        score=float(g.score),
                        label="pass" if g.passed else "fail",
                        explanation=g.reason,
                    )
                )
        verdict = question_passed(q)
        if q.errored:
            found.append(
                evaluation(
                    name="tracegrade",
                    kind="code",
                    score=None,
                    label="fail",
                    explanation=f"agent error ({q.error_type}): {q.error}",
                )
            )
        elif verdict is not None:
            found.append(
                evaluation(
                    name="tracegrade",
                    kind="code",
                    score=q.composite,
                    label="pass" if verdict else "fail",
                    explanation="every grader met its bar"
                    if verdict
                    else "; ".join([*q.must_pass_failures, *(g.grader_id for g in q.unmet)][:10])
                    or "failed",
                )
            )
        for a in getattr(q, "annotations", None) or []:
            name = str(a.get("label", "label"))
            found.append(
                evaluation(
                    name=name if name.startswith("label:") else f"label:{name}",
                    kind="human",
                    score=1.0 if a.get("answer") else 0.0,
                    label="yes" if a.get("answer") else "no",
                    explanation=str(a.get("note") or f"by {a.get('by', 'someone')}"),
                    time_ns=_time_ns(a.get("created"), now),
                )
            )
    return found


def _kv(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def event_attributes(e: Evaluation, *, text: Callable[[str], str] | None = None) -> dict[str, Any]:
    """The attributes of the `gen_ai.evaluation.result` event of one evaluation (`text`:
    applied to the explanation, a redaction policy's `text` where nothing redacts later)."""
    attrs: dict[str, Any] = {sc.GEN_AI_EVALUATION_NAME: e.name, sc.TG_EVALUATION_KIND: e.kind}
    if e.score is not None:
        attrs[sc.GEN_AI_EVALUATION_SCORE_VALUE] = float(e.score)
    if e.label is not None:
        attrs[sc.GEN_AI_EVALUATION_SCORE_LABEL] = e.label
    if e.explanation:
        explanation = text(e.explanation) if text is not None else e.explanation
        attrs[sc.GEN_AI_EVALUATION_EXPLANATION] = explanation
    if e.error_type:
        attrs[sc.ERROR_TYPE] = e.error_type
    if e.grading is not None:
        attrs[sc.TG_EVALUATION_GRADING] = e.grading
    return attrs


def otlp_events(
    evaluations: Iterable[Evaluation], *, text: Callable[[str], str] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """trace id -> the OTLP/JSON span events of its evaluations (`text` as `event_attributes`)."""
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for e in evaluations:
        attrs = [_kv(k, v) for k, v in event_attributes(e, text=text).items()]
        by_trace.setdefault(e.trace_id, []).append(
            {
                "timeUnixNano": str(e.time_ns),
                "name": sc.GEN_AI_EVALUATION_RESULT,
                "attributes": attrs,
            }
        )
    return by_trace


def span_events(question: Any) -> list[tuple[int, dict[str, Any]]]:
    """One question run's evaluations as (time in ns, attributes) of its span events: what
    the runner puts on the question span it writes to the trace file."""
    return [(e.time_ns, event_attributes(e)) for e in evaluations_of([question])]


def phoenix_annotation(e: Evaluation, span_id: str, *, explanation: str) -> dict[str, Any]:
    """One Phoenix span annotation (REST `POST /v1/span_annotations`). Its `identifier` is
    stable for the same grade of the same span, so exporting again updates it in place."""
    result: dict[str, Any] = {"explanation": explanation}
    if e.score is not None:
        result["score"] = e.score
    if e.label is not None:
        result["label"] = e.label
    ident = hashlib.sha256(f"{e.trace_id}\0{span_id}\0{e.name}".encode()).hexdigest()[:32]
    return {
        "span_id": span_id,
        "name": e.name,
        "annotator_kind": e.kind.upper(),
        "result": result,
        "metadata": {"tracegrade.grading": e.grading, "tracegrade.question.id": e.question_id},
        "identifier": f"tracegrade-{ident}",
    }
