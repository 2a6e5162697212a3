"""tracegrade graders: the public facade (flat: import what you need from `graders`).

Writing a grader: subclass `Grader`, set its declarations, implement `grade` (or `agrade`),
build results with `self.result(...)`, and register it through the `tracegrade.graders` entry
point group. Code graders: `@grader` functions and `ExactMatch`, `Contains`, `Similarity`.
"""

from graders.advisories import Advisory, advisories, text_only
from graders.base import Attachment, Grader, GraderServices
from graders.code import (
    Contains,
    ExactMatch,
    Similarity,
    attachment_of,
    grader,
    levenshtein,
)
from graders.context import DEFAULT_RESPONSE_CHAR_LIMIT, build_context
from graders.format import FormatGrader
from graders.judges import LlmJudge
from graders.modules import find_grading_module, load_grading_module
from graders.registry import CatalogRow, GraderRegistry, load_registry
from graders.rubrics import Check, Rubric, RubricStore, criteria_text, validate_rubric_file
from graders.state import StateGrader
from graders.tool_usage import FALLBACK_MARKER, ToolUsageGrader

__all__ = [
    "DEFAULT_RESPONSE_CHAR_LIMIT",
    "FALLBACK_MARKER",
    "Advisory",
    "Attachment",
    "CatalogRow",
    "Check",
    "Contains",
    "ExactMatch",
    "FormatGrader",
    "Grader",
    "GraderRegistry",
    "GraderServices",
    "LlmJudge",
    "Rubric",
    "RubricStore",
    "Similarity",
    "StateGrader",
    "ToolUsageGrader",
    "advisories",
    "attachment_of",
    "build_context",
    "criteria_text",
    "find_grading_module",
    "grader",
    "levenshtein",
    "load_grading_module",
    "load_registry",
    "text_only",
    "validate_rubric_file",
]
