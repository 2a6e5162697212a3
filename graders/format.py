"""`format_grader`: the shape of the response (seed 000 "format_grader").

`expected.format: json` decodes the response: valid JSON 5.0, anything else 0.0 with the decode
error. Every other value (text, yaml, markdown, none) runs the text rules: start at 5, one point
off per violation, floored at 0. An empty or whitespace-only response is 0.0 before any rule.
Lengths are measured on the response with surrounding whitespace stripped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..records import GradeResult
from .base import Grader, GraderServices
from .context import DEFAULT_RESPONSE_CHAR_LIMIT

__all__ = ["GRADERS", "MIN_LENGTH", "FormatGrader", "text_rule_violations"]

MIN_LENGTH = 20
"""Shorter than this many characters is suspiciously short."""

_HEADING = re.compile(r"^[ ]{0,3}#{1,6}(?:[ \t]|$)", re.MULTILINE)
_LINK = re.compile(r"\[[^\]\n]+\]\([^)\s]+(?:\s+\"[^\"]*\")?\)")
_BOLD = re.compile(r"\*\*(?=\S)[^*\n]+?(?<=\S)\*\*|__(?=\S)[^_\n]+?(?<=\S)__")


def text_rule_violations(response: str, *, char_limit: int) -> list[str]:
    """The text rules broken by `response`, one entry per rule (each costs one point)."""
    text = response.strip()
    violations = []
    if _HEADING.search(text):
        violations.append("markdown heading")
    if _LINK.search(text):
        violations.append("inline link")
    if _BOLD.search(text):
        violations.append("bold")
    if len(text) > char_limit:
        violations.append(f"longer than the {char_limit}-character limit ({len(text)})")
    if len(text) < MIN_LENGTH:
        violations.append(f"shorter than {MIN_LENGTH} characters ({len(text)})")
    return violations


class FormatGrader(Grader):
    """Validates the shape of the response: JSON when asked for, plain prose otherwise."""

    id = "format_grader"
    label = "Format"
    description = (
        "Deterministic: valid JSON when expected.format is json; otherwise plain text "
        "(no headings, links or bold; within the length limit; not suspiciously short)."
    )
    needs = "`expected.format` (optional)"
    owns = ("expected.format",)
    evidence = ("answer",)

    def __init__(self, *, services: GraderServices | None = None) -> None:
        # No options: an unknown option in a config is an error, not silently ignored.
        super().__init__(services=services)

    def grade(self, input: str, response: str, context: Mapping[str, Any]) -> GradeResult:
        if not response.strip():
            return self.result(0.0, "empty response")
        if _expected_format(context) == "json":
            try:
                json.loads(response)
            except ValueError as exc:
                return self.result(0.0, f"invalid JSON: {exc}")
            return self.result(5.0, "valid JSON")
        limit = context.get("response_char_limit") or DEFAULT_RESPONSE_CHAR_LIMIT
        violations = text_rule_violations(response, char_limit=int(limit))
        if not violations:
            return self.result(5.0, "no text-rule violations")
        count = len(violations)
        return self.result(
            max(0.0, 5.0 - count),
            f"{count} text-rule violation{'s' if count != 1 else ''}: " + "; ".join(violations),
            details={"violations": violations},
        )


def _expected_format(context: Mapping[str, Any]) -> str | None:
    expected = context.get("expected")
    if isinstance(expected, Mapping) and isinstance(expected.get("format"), str):
        return expected["format"].strip().lower()
    return None


GRADERS: list[type[Grader]] = [FormatGrader]
