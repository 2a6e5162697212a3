"""The typed, versioned run record: the run manifest (`identity.json`, `tracegrade.rundir.manifest`)
and the per-question results, as pydantic models.

The same `QuestionResult` is what the store rebuilds, what the JSON report writes under
`questions`, and what `tracegrade compare` reads back from either, so a comparison against a CI
artifact (a JSON report) and against a run directory see the same fields. Each model only ever
gains fields within a version; a removed or renamed field is a new version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..canonical import content_hash
from ..usage import QuestionUsage
from ..verdicts.scoring import GraderVerdict, QuestionScore, question_passed
from .manifest import MANIFEST_VERSION, RunManifest, TargetManifest

__all__ = [
    "CONTENT_KEYS",
    "MANIFEST_VERSION",
    "QuestionResult",
    "QuestionRun",
    "RunManifest",
    "TargetManifest",
    "ToolCallResult",
    "question_fingerprint",
    "rubric_versions",
]

CONTENT_KEYS = ("input", "expected", "expected_tools", "rubric_ref")
"""What makes two runs' answers to a question comparable: the same input, the same expected
values and tool expectations, the same rubric reference."""


def question_fingerprint(row: Mapping[str, Any]) -> str:
    """sha256 of the question's content (`CONTENT_KEYS`, canonical JSON): equal fingerprints
    mean the question asked and expected the same thing in both runs."""
    content = {k: row.get(k) for k in CONTENT_KEYS}
    return content_hash(content)


def rubric_versions(checks: list[Mapping[str, Any]]) -> list[str]:
    """`<rubric id>@<version>` of every rubric whose checks graded the question (sorted)."""
    out = set()
    for c in checks:
        rubric = c.get("rubric")
        version = c.get("rubric_version") or c.get("version")
        if rubric:
            out.add(f"{rubric}@{version}" if version else str(rubric))
    return sorted(out)


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)


class ToolCallResult(_Model):
    name: str
    """The tool name the model emitted."""
    args: dict[str, Any] = Field(default_factory=dict)
    """The arguments as the trace file keeps them (redacted on export)."""
    outcome: str = "ok"
    """How the call ended: ok, error, not_executed, declined, interrupted, handoff, command,
    cancelled."""


class QuestionResult(_Model):
    """One question's (one trial's) verdict as reports and `compare` read it."""

    target: str
    """The target it ran against."""
    id: str
    """The question's id."""
    trial: int = 0
    """Trial index (0-based) when the target repeats questions."""
    split: str | None = None
    """The question's split."""
    bundle: str | None = None
    """The question's bundle."""
    tags: list[str] = Field(default_factory=list)
    """The question's tags."""
    composite: float | None = None
    """0–5; 0 for an errored agent; None when every grader skipped."""
    objective: float | None = None
    """0–1; 0 for an errored agent or a failed must-pass grader."""
    degraded: bool = False
    """Excluded from the gate's mean (agent error or grader error)."""
    error: str | None = None
    """Why the agent run failed; None when it ran."""
    error_type: str | None = None
    """The error's class name."""
    trace_id: str | None = None
    """Hex trace id of the question's trace."""
    outcome: str | None = None
    """How the conversation ended when not with an answer: `interrupted` (waiting on an
    `interrupt()` nobody answered), `user_budget` (a simulated user ran out of turns); None
    when it ended normally."""
    outcome_reason: str | None = None
    """What it was waiting on, in words."""
    outcome_expected: bool = False
    """The question said it would end this way (no failure then)."""
    passed: bool | None = None
    """Every scored grader met its bar and no required rubric check failed; False for an
    errored agent; None when the evaluation itself failed (a grader error)."""
    content_sha256: str | None = None
    """Fingerprint of the question's content (`question_fingerprint`); None when unknown."""
    rubrics: list[str] = Field(default_factory=list)
    """`<rubric>@<version>` of the rubrics that graded it."""
    graders: list[GraderVerdict] = Field(default_factory=list)
    """Each attached grader's verdict, in attachment order."""
    checks: list[dict[str, Any]] = Field(default_factory=list)
    """Every rubric check of the question (optional ones, those of an errored grader too),
    with the grader that ran it (`grader`) and all it recorded: id, version, rubric,
    rubric_version, status, severity, required, reason, ..."""
    tool_calls: list[ToolCallResult] | None = None
    """The calls the agent made (from the trace file); None when no record is known."""
    usage: QuestionUsage | None = None
    """What it cost and how long it took: the agent's model calls (`agent`: per model
    `calls`, `unknown_calls` (no usage reported), `input_tokens`, `output_tokens`,
    `cached_tokens`; `cost` in `currency`, None when `unpriced` names a model or no call
    reported usage), the judges' calls (`judges`, the same shape), `latency` (`wall_s`,
    `model_calls`, `tools` by name, in seconds) and the price table's version (`prices`);
    None for a run written by an older release."""
    over_budget: list[str] = Field(default_factory=list)
    """The gate's per-question budgets it exceeded, each naming the figure (it failed)."""
    annotations: list[dict[str, Any]] = Field(default_factory=list)
    """What people answered about it with `tracegrade label`: `label` (a checklist id, or
    `review:<check id>`), `answer` (yes/pass true), `note`, `by`, `created`, `answer_sha256`
    and `stale` (the answer changed since: shown, never applied)."""

    def label(self, label_id: str) -> bool | None:
        """The latest answer to checklist item `label_id` that is not stale; None if none."""
        found = [a for a in self.annotations if a.get("label") == label_id and not a.get("stale")]
        return bool(found[-1]["answer"]) if found else None

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.target, self.id, self.trial)

    def grader(self, grader_id: str) -> GraderVerdict | None:
        return next((g for g in self.graders if g.grader_id == grader_id), None)

    @classmethod
    def from_score(
        cls, q: QuestionScore, *, tool_calls: list[ToolCallResult] | None = None
    ) -> QuestionResult:
        return cls(
            target=q.target,
            id=q.question_id,
            trial=q.trial,
            split=q.split,
            bundle=q.bundle,
            tags=list(q.tags),
            composite=q.composite,
            objective=q.objective,
            degraded=q.degraded,
            error=q.error,
            error_type=q.error_type,
            trace_id=q.trace_id,
            outcome=q.outcome,
            outcome_reason=q.outcome_reason,
            outcome_expected=q.outcome_expected,
            passed=question_passed(q),
            content_sha256=q.content_sha256,
            rubrics=rubric_versions([c for g in q.graders for c in g.checks]),
            graders=[g.model_copy() for g in q.graders],
            checks=[{"grader": g.grader_id, **c} for g in q.graders for c in g.checks],
            tool_calls=tool_calls,
            usage=q.usage.model_copy(deep=True) if q.usage is not None else None,
            over_budget=list(q.over_budget),
            annotations=[dict(a) for a in getattr(q, "annotations", [])],
        )


@dataclass(slots=True)
class QuestionRun:
    """What a finished question run stores (no tool arguments: the tool-call record stays in the trace file)."""

    target: str
    """The target it ran against."""
    question_id: str
    trial: int = 0
    """Trial index (0-based) when the target repeats each question."""
    ordinal: int = 0
    """Position of the question in the selection, so reports keep dataset order."""
    split: str | None = None
    bundle: str | None = None
    tags: list[str] = field(default_factory=list)
    row: dict[str, Any] = field(default_factory=dict)
    """The question as authored (the grader context is rebuilt from it when re-grading)."""
    input: str = ""
    """The flattened transcript graders received as `input`."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    """The question's input messages (role/content) as the agent received them."""
    response: str = ""
    """The agent's final answer text."""
    error: str | None = None
    """Why the agent run failed; None when it ran."""
    error_type: str | None = None
    trace_id: str | None = None
    latency_s: float = 0.0
    usage: dict[str, Any] = field(default_factory=dict)
    """The agent's side of `tracegrade.usage.QuestionUsage` (model calls per model, priced;
    wall, model-call and tool-call seconds) as JSON; {} in a run from an older release."""
    has_record: bool = False
    """A tool-call record existed (agent mode, captured). False in chat mode."""
    tool_call_count: int | None = None
    """Number of calls in the record; None when no record exists."""
    content_sha256: str | None = None
    """Fingerprint of the question's content (computed from `row` when not given)."""
    outcome: str | None = None
    """How the conversation ended when not with an answer: `interrupted` (waiting on an
    `interrupt()` nobody answered), `user_budget` (the simulated user ran out of turns); None
    when it ended normally (or errored: see `error`)."""
    outcome_reason: str | None = None
    """What it was waiting on, in words."""
    outcome_expected: bool = False
    """The question said it would end this way: not a failure."""
