"""A grader's verdict as the HTML report's row shows it (`grader_row`), and the rows already
built for a page by content (`GraderRows`): most graders give the same verdict, in the same
words, to many questions, and the profile of a 5,000-question page put building every
question's six grader rows at a third of its build."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...redaction import Scrubber
from ...verdicts.scoring import can_fail
from .texts import shown_text as _text

__all__ = ["GraderRows", "grader_row", "judge_line"]


class GraderRows:
    """One question's grader rows for a page, each read from `seen` (the page's rows by
    content, under one policy) or built. A row built by a `DeferredScan` is kept in `seen`
    only once the scan says the question was clean (`keep`): what the policy itself builds."""

    __slots__ = ("built", "graders", "seen")

    def __init__(self, graders: Sequence[Any], seen: dict[Any, dict[str, Any]] | None) -> None:
        self.graders, self.seen = graders, seen
        self.built: dict[Any, dict[str, Any]] = {}

    def shown(self, policy: Scrubber) -> list[dict[str, Any]]:
        if self.seen is None:
            return [grader_row(g, policy) for g in self.graders]
        out = []
        for g in self.graders:
            key = _content(g)
            row = self.seen.get(key)
            if row is None:
                row = self.built[key] = grader_row(g, policy)
            out.append(row)
        return out

    def keep(self) -> None:
        if self.seen is not None:
            self.seen.update(self.built)


def _content(g: Any) -> tuple[Any, ...]:
    """Everything `grader_row` reads of `g`, as a key. The repr tells 5 from 5.0 and True
    from 1, which compare equal and would be written apart."""
    spec = g.spec
    fields = (g.grader_id, g.score, g.min_score, g.max_score, g.binary, g.error, g.reason)
    return (
        repr((*fields, g.checks, spec.must_pass, spec.threshold)),
        spec,
        judge_line(g.details),
    )


def grader_row(g: Any, policy: Scrubber) -> dict[str, Any]:
    return {
        "id": g.grader_id,
        "score": g.score,
        "min": g.min_score,
        "max": g.max_score,
        "passed": g.passed,
        "bar": g.pass_bar,  # the verdict's own spec: none built again per grader
        "can_fail": can_fail(
            binary=g.binary, threshold=g.threshold, min_score=g.min_score, max_score=g.max_score
        ),
        "must": g.must_pass,
        "err": g.error,
        "reason": _text(g.reason, policy),
        "checks": [_check(c, policy) for c in g.checks],
        "judge": _text(judge_line(g.details), policy) or None,
    }


def judge_line(details: Mapping[str, Any]) -> str:
    """Which judge produced a verdict, in one line: model, template hash, answer path, file,
    and a panel's members with their scores (empty for graders that are not judges)."""
    judge = details.get("judge") if isinstance(details, Mapping) else None
    if not isinstance(judge, Mapping):
        return ""
    parts = []
    if judge.get("model"):
        parts.append(f"model {judge['model']}")
    if judge.get("template_sha256"):
        parts.append(f"template {str(judge['template_sha256'])[:12]}")
    if judge.get("answer_format"):
        parts.append(f"answer {judge['answer_format']}")
    if judge.get("judge_file"):
        parts.append(f"file {Path(str(judge['judge_file'])).name}")
    panel = details.get("panel")
    if isinstance(panel, list) and isinstance(judge.get("panel"), Mapping):
        scores = ", ".join(
            f"{m.get('judge')}={'error' if m.get('score') is None else format(m['score'], 'g')}"
            for m in panel
            if isinstance(m, Mapping)
        )
        parts.append(f"panel ({judge['panel'].get('aggregate')}): {scores}")
    return " · ".join(parts)


def _check(c: Mapping[str, Any], policy: Scrubber) -> dict[str, Any]:
    keep = ("id", "version", "kind", "status", "severity", "required", "outcome", "decided_by")
    out = {k: c[k] for k in keep if c.get(k) is not None}
    for key in ("probabilities", "rule", "evidence", "reason"):
        if c.get(key) not in (None, "", [], {}):
            out[key] = c[key] if key == "probabilities" else _text(c[key], policy)
    return out
