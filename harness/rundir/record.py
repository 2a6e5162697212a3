"""The typed, versioned run record: the run manifest (`identity.json`, `tracegrade.rundir.manifest`)
and the per-question result (`QuestionResult`, defined with the verdicts it carries in
`tracegrade.verdicts.result`), re-exported here.

The same `QuestionResult` is what the store rebuilds, what the JSON report writes under
`questions`, and what `tracegrade compare` reads back from either, so a comparison against a CI
artifact (a JSON report) and against a run directory see the same fields. Each model only ever
gains fields within a version; a removed or renamed field is a new version.
"""

from __future__ import annotations

from ..verdicts.result import (
    CONTENT_KEYS,
    QuestionAnswer,
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
    "QuestionAnswer",
    "QuestionResult",
    "RunManifest",
    "TargetManifest",
    "ToolCallResult",
    "question_fingerprint",
    "rubric_versions",
]
