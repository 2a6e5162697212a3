"""`rubric_checks`: the deterministic rubric grader (seed 000). Runs the executable checks of the
question's rubric, combines them per the rubric's scoring block, and scales 0–1 onto 0–5.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...records import GradeResult
from ..base import Grader
from .attach import check_entry, rubric_for, store_of, summarize
from .executable import run_check
from .model import Rubric

__all__ = ["RubricChecksGrader", "combine"]


def combine(rubric: Rubric, scores: Mapping[str, float]) -> float:
    """The 0–1 verdict of check scores (by check id) under the rubric's scoring mode."""
    values = list(scores.values())
    mode = rubric.scoring.mode
    if mode == "all":
        return 1.0 if all(v >= 1.0 for v in values) else 0.0
    if mode == "any":
        return 1.0 if any(v >= 1.0 for v in values) else 0.0
    if mode == "min":
        return min(values)
    checks = {c.id: c for c in rubric.checks}
    weights = {cid: rubric.weight_of(checks[cid]) for cid in scores}
    total = sum(weights.values())
    if total == 0:
        return min(values)  # every weight zero: no preference, so the strict reading
    return sum(scores[cid] * weights[cid] for cid in scores) / total


class RubricChecksGrader(Grader):
    id = "rubric_checks"
    label = "Rubric checks"
    description = (
        "Runs the executable checks (must_contain, must_not_contain, regex, json_schema, "
        "max_length) of the question's rubric_ref, combines the required ones per the rubric's "
        "scoring block (all, any, weighted_mean, min) and scales the 0-1 verdict onto 0-5. "
        "Optional checks are reported only. Skips a question without rubric_ref or whose "
        "rubric has no executable checks."
    )
    llm = False
    min_score = 0.0
    max_score = 5.0
    needs = "`rubric_ref` with executable checks (else skips)"
    owns = ("rubric_ref",)
    evidence = ("answer", "tool_calls")

    def __init__(self, *, services=None, **options: Any) -> None:
        super().__init__(services=services, **options)
        self._rubric_store = store_of(self.services, self.options)

    def grade(self, input: str, response: str, context: Mapping[str, Any]) -> GradeResult:
        rubric = rubric_for(context, store=self._rubric_store)
        if rubric is None:
            return self.result(None, "no rubric_ref")
        checks = [c for c in rubric.checks if c.executable]
        if not checks:
            return self.result(
                None, f"rubric {rubric.id}@{rubric.version} has no executable checks"
            )
        entries = []
        scores: dict[str, float] = {}
        for check in checks:
            verdict = run_check(check, response)
            status = "pass" if verdict.passed else "fail"
            entries.append(
                check_entry(
                    rubric, check, status=status, reason=verdict.reason, score=verdict.score
                )
            )
            if check.required:
                scores[check.id] = verdict.score
        details: dict[str, Any] = {
            "checks": entries,
            "rubric": rubric.id,
            "rubric_version": rubric.version,
            "scoring": rubric.scoring.mode,
        }
        if not scores:
            return self.result(
                None,
                f"rubric {rubric.id}@{rubric.version}: only optional "
                f"executable checks ({summarize(entries)}; reported only)",
                details=details,
            )
        combined = combine(rubric, scores)
        details["combined"] = combined
        reason = (
            f"{rubric.id}@{rubric.version} {rubric.scoring.mode} = {combined:.3f}: "
            f"{summarize(entries)}"
        )
        failing = [e for e in entries if e["status"] == "fail"]
        if failing:
            reason += " — " + "; ".join(f"{e['id']}: {e['reason']}" for e in failing)
        return self.result(combined * 5.0, reason, details=details)
