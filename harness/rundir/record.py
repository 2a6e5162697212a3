"""The typed, versioned run record: the run manifest (`identity.json`, `tracegrade.rundir.manifest`)
and the per-question result (`QuestionResult`, defined with the verdicts it carries in
`tracegrade.verdicts.result`), re-exported here.

The same `QuestionResult` is what the store rebuilds, what the JSON report writes under
`questions`, and what `tracegrade compare` reads back from either, so a comparison against a CI
artifact (a JSON report) and against a run directory see the same fields. Each model only ever
gains fields within a version; a removed or renamed field is a new version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..verdicts.result import (
    CONTENT_KEYS,
    QuestionResult,
    ToolCallResult,
    question_fingerprint,
    rubric_versions,
)
from ..verdicts.scoring import GraderVerdict
from .manifest import MANIFEST_VERSION, RunManifest, TargetManifest

__all__ = [
    "CONTENT_KEYS",
    "MANIFEST_VERSION",
    "GraderVerdict",
    "QuestionResult",
    "QuestionRun",
    "RunManifest",
    "TargetManifest",
    "ToolCallResult",
    "question_fingerprint",
    "rubric_versions",
]


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
    """The agent's side of `tracegrade.cost.usage.QuestionUsage` (model calls per model, priced;
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
