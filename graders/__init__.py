"""tracegrade graders: the public facade (flat: import what you need from `graders`).

Writing a grader: subclass `Grader`, set its declarations, implement `grade` (or `agrade`),
build results with `self.result(...)`, and register it through the `tracegrade.graders` entry
point group. Code graders: `@grader` functions and `ExactMatch`, `Contains`, `Similarity`.

The facade is lazy, as `harness`'s is: each name is imported from its module on first use, so
`import graders` (and `tracegrade --help`) does not load the judges, the rubric machinery or
jsonschema until something asks for them. Everything in `__all__` is public API.
"""

from harness.lazy import lazy_facade as _lazy_facade

_EXPORTS: dict[str, str] = {
    "DEFAULT_RESPONSE_CHAR_LIMIT": "graders.context",
    "FALLBACK_MARKER": "graders.tool_usage",
    "Advisory": "graders.advisories",
    "Attachment": "graders.base",
    "CatalogRow": "graders.registry",
    "Check": "graders.rubrics",
    "Contains": "graders.code",
    "ExactMatch": "graders.code",
    "FormatGrader": "graders.format",
    "GoalJudge": "graders.judges",
    "Grader": "graders.base",
    "GraderRegistry": "graders.registry",
    "GraderServices": "graders.base",
    "LlmJudge": "graders.judges",
    "Rubric": "graders.rubrics",
    "RubricStore": "graders.rubrics",
    "Similarity": "graders.code",
    "StateGrader": "graders.state",
    "ToolUsageGrader": "graders.tool_usage",
    "TrajectoryGrader": "graders.trajectory",
    "advisories": "graders.advisories",
    "attachment_of": "graders.code",
    "build_context": "graders.context",
    "criteria_text": "graders.rubrics",
    "file_judge": "graders.judges",
    "find_grading_module": "graders.modules",
    "grader": "graders.code",
    "levenshtein": "graders.code",
    "load_grading_module": "graders.modules",
    "load_registry": "graders.registry",
    "text_only": "graders.advisories",
    "validate_rubric_file": "graders.rubrics",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = _lazy_facade(__name__, _EXPORTS)
