"""Executors of the code-run check kinds: each reads the response text and says pass or fail.

Every executor returns a `CheckVerdict` with a score in [0, 1] (1 = passed) and a reason that
names what was found, so a failure can be acted on without rerunning anything.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import jsonschema

from ...redaction import compile_pattern
from .model import Check

__all__ = ["EXECUTORS", "CheckVerdict", "run_check"]


@dataclass(frozen=True, slots=True)
class CheckVerdict:
    """The verdict of one executable check."""

    score: float
    """1.0 when passed; `must_contain` gives partial credit (share of the values found)."""
    reason: str

    @property
    def passed(self) -> bool:
        return self.score >= 1.0


def _fold(text: str, case_sensitive: bool) -> str:
    return text if case_sensitive else text.casefold()


def _must_contain(check: Check, response: str) -> CheckVerdict:
    p = check.typed_params
    haystack = _fold(response, p.case_sensitive)
    missing = [v for v in p.values if _fold(v, p.case_sensitive) not in haystack]
    found = len(p.values) - len(missing)
    if not missing:
        return CheckVerdict(1.0, f"contains all {len(p.values)} required value(s)")
    return CheckVerdict(
        found / len(p.values),
        f"missing {len(missing)} of {len(p.values)} required value(s): "
        + ", ".join(repr(v) for v in missing),
    )


def _must_not_contain(check: Check, response: str) -> CheckVerdict:
    p = check.typed_params
    haystack = _fold(response, p.case_sensitive)
    present = [v for v in p.values if _fold(v, p.case_sensitive) in haystack]
    if present:
        # One forbidden value is a failure: no partial credit for avoiding the others.
        return CheckVerdict(0.0, "contains forbidden value(s): " + ", ".join(map(repr, present)))
    return CheckVerdict(1.0, f"contains none of {len(p.values)} forbidden value(s)")


def _regex(check: Check, response: str) -> CheckVerdict:
    p = check.typed_params
    # RE2 (linear time): a dataset's pattern cannot stall grading by backtracking
    match = compile_pattern(p.pattern if p.case_sensitive else f"(?i){p.pattern}").search(response)
    if p.must_match:
        if match:
            return CheckVerdict(1.0, f"matches /{p.pattern}/ at {match.start()}")
        return CheckVerdict(0.0, f"does not match /{p.pattern}/")
    if match:
        return CheckVerdict(0.0, f"matches forbidden /{p.pattern}/: {match.group(0)!r}")
    return CheckVerdict(1.0, f"does not match forbidden /{p.pattern}/")


def _json_schema(check: Check, response: str) -> CheckVerdict:
    schema = check.typed_params.schema_
    try:
        value = json.loads(response)
    except json.JSONDecodeError as exc:
        return CheckVerdict(0.0, f"response is not JSON: {exc.msg} at line {exc.lineno}")
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is None:
        return CheckVerdict(1.0, "response JSON satisfies the schema")
    where = "/" + "/".join(str(p) for p in error.absolute_path)
    return CheckVerdict(0.0, f"response JSON violates the schema at {where}: {error.message}")


def _max_length(check: Check, response: str) -> CheckVerdict:
    limit = check.typed_params.max_chars
    n = len(response)
    if n <= limit:
        return CheckVerdict(1.0, f"{n} characters, within {limit}")
    return CheckVerdict(0.0, f"{n} characters, over the limit of {limit}")


EXECUTORS: dict[str, Callable[[Check, str], CheckVerdict]] = {
    "must_contain": _must_contain,
    "must_not_contain": _must_not_contain,
    "regex": _regex,
    "json_schema": _json_schema,
    "max_length": _max_length,
}


def run_check(check: Check, response: str) -> CheckVerdict:
    """Run one executable check on the response text."""
    try:
        executor = EXECUTORS[check.kind]
    except KeyError:
        raise ValueError(f"check {check.id!r} of kind {check.kind!r} is not executable") from None
    return executor(check, response)
