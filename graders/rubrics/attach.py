"""Attaching a rubric to a question: resolving its `rubric_ref`, the criteria text judges read,
and the per-check entry both rubric graders put in `GradeResult.details["checks"]`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...errors import RubricError
from .model import Check, Rubric
from .store import RubricStore

__all__ = ["append_criteria", "check_entry", "criteria_text", "rubric_for", "store_of", "summarize"]


def criteria_text(rubric: Rubric) -> str:
    """The check descriptions of `rubric` as prose for the judges' `criteria`: an `llm_judge`
    check contributes its criterion (its description too, when it has one), every other check
    its description (or, lacking one, its criterion)."""
    lines = [
        f"Rubric {rubric.id}@{rubric.version}"
        + (f": {rubric.description}" if rubric.description else "")
    ]
    for check in rubric.checks:
        texts: list[str] = []
        if check.description:
            texts.append(check.description.strip())
        criterion = (check.criterion or "").strip()
        if (check.kind == "llm_judge" or not texts) and criterion and criterion not in texts:
            texts.append(criterion)
        if texts:
            lines.append(f"- [{check.id}] " + " ".join(texts))
    return "\n".join(lines)


def append_criteria(criteria: str | None, rubric: Rubric) -> str:
    """`criteria` with the rubric's text appended (a blank line between)."""
    text = criteria_text(rubric)
    return f"{criteria.rstrip()}\n\n{text}" if criteria and criteria.strip() else text


def store_of(services: Any, options: Mapping[str, Any]) -> RubricStore | None:
    """The services' rubric store, else one over the grader option `rubric_dir`, else None."""
    store = getattr(services, "rubrics", None)
    if store is None and options.get("rubric_dir") is not None:
        store = RubricStore(Path(options["rubric_dir"]))
    return store


def rubric_for(context: Mapping[str, Any], *, store: RubricStore | None) -> Rubric | None:
    """The rubric a question's `rubric_ref` names, None when it has none. A ref with no store
    configured, or one the store cannot resolve, is an input error (exit 4)."""
    ref = context.get("rubric_ref")
    if ref is None:
        return None
    question_id = context.get("id")
    question_id = None if question_id is None else str(question_id)
    if store is None:
        raise RubricError(
            f"rubric_ref {ref!r} but no rubric directory is configured",
            key="rubric_ref",
            question_id=question_id,
            hint="set the target's rubric directory",
        )
    return store.resolve(str(ref), question_id=question_id)


def check_entry(
    rubric: Rubric, check: Check, *, status: str, reason: str, **extra: Any
) -> dict[str, Any]:
    """One per-check result: the keys the runner's gate and the reports read, then extras."""
    return {
        "id": check.id,
        "version": rubric.check_version(check),
        "rubric": rubric.id,
        "rubric_version": rubric.version,
        "rubric_ref": rubric.ref,
        "kind": check.kind,
        "status": status,
        "severity": check.severity,
        "required": check.required,
        "reason": reason,
        **extra,
    }


def summarize(entries: list[dict[str, Any]]) -> str:
    """`2 pass, 1 fail, 1 review; critical failures: 1` for a reason line."""
    counts: dict[str, int] = {}
    for entry in entries:
        counts[entry["status"]] = counts.get(entry["status"], 0) + 1
    order = ("pass", "fail", "review", "skipped", "error")
    text = ", ".join(f"{counts[s]} {s}" for s in order if counts.get(s))
    critical = sum(1 for e in entries if e["status"] == "fail" and e["severity"] == "critical")
    return f"{text}; critical failures: {critical}" if critical else text
