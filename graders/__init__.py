"""tracegrade graders: the public facade (flat: import what you need from `graders`).

Writing a grader: subclass `Grader`, set its declarations, implement `grade` (or `agrade`),
build results with `self.result(...)`, and register it through the `tracegrade.graders` entry
point group. Code graders: `@grader` functions and `ExactMatch`, `Contains`, `Similarity`.

The facade is lazy, as `tracegrade`'s is: each name is imported from its module on first use, so
`import tracegrade.graders` (and `tracegrade --help`) does not load the judges, the rubric machinery or
jsonschema until something asks for them. Everything in `__all__` is public API.
"""

from ..lazy import lazy_facade as _lazy_facade

_EXPORTS: dict[str, str] = {
    "DEFAULT_RESPONSE_CHAR_LIMIT": "tracegrade.graders.context",
    "FALLBACK_MARKER": "tracegrade.graders.tool_usage",
    "Advisory": "tracegrade.graders.advisories",
    "Attachment": "tracegrade.graders.base",
    "CatalogRow": "tracegrade.graders.registry",
    "Check": "tracegrade.graders.rubrics",
    "Contains": "tracegrade.graders.code",
    "ExactMatch": "tracegrade.graders.code",
    "FormatGrader": "tracegrade.graders.format",
    "GoalJudge": "tracegrade.graders.judges",
    "Grader": "tracegrade.graders.base",
    "GraderRegistry": "tracegrade.graders.registry",
    "GraderServices": "tracegrade.graders.base",
    "InterruptGrader": "tracegrade.graders.interrupts",
    "LlmJudge": "tracegrade.graders.judges",
    "Rubric": "tracegrade.graders.rubrics",
    "RubricStore": "tracegrade.graders.rubrics",
    "Similarity": "tracegrade.graders.code",
    "StateGrader": "tracegrade.graders.state",
    "ToolUsageGrader": "tracegrade.graders.tool_usage",
    "TrajectoryGrader": "tracegrade.graders.trajectory.grader",
    "advisories": "tracegrade.graders.advisories",
    "attachment_of": "tracegrade.graders.code",
    "build_context": "tracegrade.graders.context",
    "criteria_text": "tracegrade.graders.rubrics",
    "file_judge": "tracegrade.graders.judges",
    "find_grading_module": "tracegrade.graders.modules",
    "grader": "tracegrade.graders.code",
    "levenshtein": "tracegrade.graders.code",
    "load_grading_module": "tracegrade.graders.modules",
    "load_registry": "tracegrade.graders.registry",
    "text_only": "tracegrade.graders.advisories",
    "validate_rubric_file": "tracegrade.graders.rubrics",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = _lazy_facade(__name__, _EXPORTS)
