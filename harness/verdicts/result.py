"""One question's result: the one record the runner builds, the store writes and reads back,
every report, `compare`, labelling, the API and the pytest plugin read, and the JSON report
writes under `questions`.

Its verdict (`degraded`, `passed`, `rubrics`, `checks`) is derived from its graders whenever it
is read, never copied: a re-grade, a person's Review decision or a budget applied later changes
it everywhere at once. The record only ever gains fields within a version; a removed or renamed
field is a new version.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from ..canonical import content_hash
from ..cost.usage import QuestionUsage
from .scoring import GraderVerdict, question_passed

__all__ = [
    "CONTENT_KEYS",
    "QuestionAnswer",
    "QuestionResult",
    "ToolCallResult",
    "question_fingerprint",
    "rubric_versions",
]

CONTENT_KEYS = ("input", "expected", "expected_tools", "rubric_ref")
"""What makes two runs' answers to a question comparable: the same input, the same expected
values and tool expectations, the same rubric reference."""

_DERIVED = ("degraded", "passed", "rubrics", "checks")
"""Written by the record (JSON report), derived again when read back: never input."""

_ORDER = (
    *("target", "id", "trial", "split", "bundle", "tags", "composite", "objective", "degraded"),
    *("error", "error_type", "trace_id", "outcome", "outcome_reason", "outcome_expected"),
    *("passed", "content_sha256", "rubrics", "graders", "checks", "tool_calls", "usage"),
    *("over_budget", "annotations"),
)
"""The JSON report's key order of a question entry (version 1)."""


def question_fingerprint(row: Mapping[str, Any]) -> str:
    """sha256 of the question's content (`CONTENT_KEYS`, canonical JSON): equal fingerprints
    mean the question asked and expected the same thing in both runs."""
    content = {k: row.get(k) for k in CONTENT_KEYS}
    return content_hash(content)


def rubric_versions(checks: Iterable[Mapping[str, Any]]) -> list[str]:
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


class QuestionAnswer(_Model):
    """What the agent received and answered: the part of a question result the store keeps in
    its question row and a re-grade reads back (no tool arguments: those stay in the trace
    file). Not in the JSON report."""

    ordinal: int = 0
    """Position of the question in the selection, so reports keep dataset order."""
    row: dict[str, Any] = Field(default_factory=dict)
    """The question as authored (the grader context is rebuilt from it when re-grading)."""
    input: str = ""
    """The flattened transcript graders received as `input`."""
    messages: list[dict[str, Any]] = Field(default_factory=list)
    """The question's input messages (role/content) as the agent received them."""
    response: str = ""
    """The agent's final answer text."""
    latency_s: float = 0.0
    """Wall seconds of the agent's run."""
    usage: dict[str, Any] = Field(default_factory=dict)
    """The agent's side of `tracegrade.cost.usage.QuestionUsage` as the run recorded it (JSON);
    {} in a run from an older release."""
    has_record: bool = False
    """A tool-call record existed (agent mode, captured). False in chat mode."""
    tool_call_count: int | None = None
    """Number of calls in the record; None when no record exists."""


class QuestionResult(_Model):
    """One question's (one trial's) result: what it was, how the agent's run ended, each
    grader's verdict, and the question's verdict derived from them."""

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
    """0–5; 0 for an errored agent or a conversation that ended early; None when every grader
    skipped (`tracegrade.verdicts.scoring.score_question` fills it)."""
    objective: float | None = None
    """0–1; 0 for an errored agent or a failed must-pass grader; None when nothing scored."""
    error: str | None = None
    """Why the agent run failed (exception, timeout, capture failure); None when it ran."""
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
    content_sha256: str | None = None
    """Fingerprint of the question's content (`question_fingerprint`); None when unknown."""
    graders: list[GraderVerdict] = Field(default_factory=list)
    """Each attached grader's verdict, in attachment order."""
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
    answer: QuestionAnswer = Field(default_factory=QuestionAnswer)
    """What the agent received and answered, as the store keeps it; empty where it was not
    read (`ResultStore.load_scores` leaves it on disk) and in a JSON report (not written)."""

    @model_validator(mode="before")
    @classmethod
    def _drop_derived(cls, data: Any) -> Any:
        # the verdict a JSON report wrote is derived again from the graders it wrote
        if isinstance(data, Mapping) and any(k in data for k in _DERIVED):
            data = {k: v for k, v in data.items() if k not in _DERIVED}
        return data

    @model_serializer(mode="wrap")
    def _serialize(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        data["degraded"] = self.degraded
        data["passed"] = self.passed
        data["rubrics"] = self.rubrics
        data["checks"] = self.checks
        ordered = {k: data.pop(k) for k in _ORDER if k in data}
        return {**ordered, **data}

    # -- the verdict, derived ----------------------------------------------------------------
    @property
    def key(self) -> tuple[str, str, int]:
        return (self.target, self.id, self.trial)

    @property
    def ended_early(self) -> bool:
        """The conversation stopped before an answer and the question did not expect it: the
        question fails, and so does each of its must-pass graders."""
        return self.outcome is not None and not self.outcome_expected

    @property
    def errored(self) -> bool:
        """The agent itself failed (exception, timeout, capture failure)."""
        return self.error is not None

    @property
    def degraded(self) -> bool:
        """Excluded from the gate's mean and counted against the error budget: the agent
        errored or a grader did."""
        return self.errored or any(g.error for g in self.graders)

    @property
    def passed(self) -> bool | None:
        """Every scored grader met its bar and no required or critical rubric check failed;
        False for an errored agent; None when the evaluation itself failed (a grader error) or
        nothing was scored (`tracegrade.verdicts.scoring.question_passed`)."""
        return question_passed(self)

    @property
    def rubrics(self) -> list[str]:
        """`<rubric>@<version>` of the rubrics that graded it."""
        return rubric_versions(self.grader_checks())

    @property
    def checks(self) -> list[dict[str, Any]]:
        """Every rubric check of the question (optional ones, those of an errored grader too),
        with the grader that ran it (`grader`) and all it recorded: id, version, rubric,
        rubric_version, status, severity, required, reason, ..."""
        return [{"grader": g.grader_id, **c} for g in self.graders for c in g.checks]

    def grader_checks(self) -> list[dict[str, Any]]:
        """Every check a grader reported, as it reported it, including those of a grader that
        errored overall: a check that was decided is evidence whatever its siblings did."""
        return [c for g in self.graders for c in g.checks]

    @property
    def must_pass_failures(self) -> list[str]:
        """Must-pass graders that scored and failed (an errored agent is counted as errored);
        every must-pass grader when the conversation ended early."""
        if self.ended_early:
            return [g.grader_id for g in self.graders if g.must_pass]
        return [g.grader_id for g in self.graders if g.must_pass and g.passed is False]

    @property
    def unmet(self) -> list[GraderVerdict]:
        """Graders that scored and did not pass (one JUnit failure each)."""
        return [g for g in self.graders if g.passed is False]

    @property
    def required_check_failures(self) -> list[str]:
        return [
            _check_name(c)
            for c in self.grader_checks()
            if c.get("required", True) and c.get("status") == "fail"
        ]

    @property
    def required_check_reviews(self) -> list[str]:
        return [
            _check_name(c)
            for c in self.grader_checks()
            if c.get("required", True) and c.get("status") == "review"
        ]

    @property
    def critical_failures(self) -> list[str]:
        """Failed checks of severity critical (counted separately so they cannot hide)."""
        return [
            _check_name(c)
            for c in self.grader_checks()
            if c.get("severity") == "critical" and c.get("status") == "fail"
        ]

    def label(self, label_id: str) -> bool | None:
        """The latest answer to checklist item `label_id` that is not stale; None if none."""
        found = [a for a in self.annotations if a.get("label") == label_id and not a.get("stale")]
        return bool(found[-1]["answer"]) if found else None

    def grader(self, grader_id: str) -> GraderVerdict | None:
        return next((g for g in self.graders if g.grader_id == grader_id), None)


def _check_name(check: Mapping[str, Any]) -> str:
    name = str(check.get("id", "?"))
    return f"{name}@{check['version']}" if check.get("version") else name
