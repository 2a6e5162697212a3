"""The JSON results report: a versioned, documented format (`docs/running.md`, "JSON report").

```
{"format": "tracegrade.results", "version": 1, "run_id", "grading_id", "target", "targets",
 "identity", "questions": [{"target", "id", "split", "bundle", "tags", "composite",
 "objective", "degraded", "error", "error_type", "trace_id", "graders": [{"id", "score", "min",
 "max", "mapped", "reason", "error", "skipped", "binary", "passed", "must_pass", "weight",
 "threshold", "samples", "spread"}], "checks": [{"grader", "id", "version", "rubric",
 "rubric_version", "rubric_ref", "kind", "status", "severity", "required", "reason", ...}]}],
 "summary": {"<target>": {...}}, "gate": {"exit_code", "passed", "targets": {"<target>": {...}}}}
```
Version 1 only ever gains keys; a removed or renamed key is version 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.runs.scoring import GraderScore, QuestionScore, pass_bar

__all__ = ["FORMAT", "VERSION", "build_json_report", "write_json_report"]

FORMAT = "tracegrade.results"
VERSION = 1


def _grader(g: GraderScore) -> dict[str, Any]:
    return {
        "id": g.grader_id,
        "score": g.score,
        "min": g.min_score,
        "max": g.max_score,
        "mapped": g.mapped,
        "reason": g.reason,
        "error": g.error,
        "skipped": g.skipped,
        "binary": g.binary,
        "passed": g.passed,
        "must_pass": g.must_pass,
        "weight": g.weight,
        "threshold": g.threshold,
        "pass_bar": pass_bar(
            binary=g.binary, threshold=g.threshold, min_score=g.min_score, max_score=g.max_score
        ),
        "samples": list(g.sample_scores),
        "spread": g.spread,
    }


def _question(q: QuestionScore) -> dict[str, Any]:
    return {
        "target": q.target,
        "id": q.question_id,
        "split": q.split,
        "bundle": q.bundle,
        "tags": list(q.tags),
        "composite": q.composite,
        "objective": q.objective,
        "degraded": q.degraded,
        "error": q.error,
        "error_type": q.error_type,
        "trace_id": q.trace_id,
        "graders": [_grader(g) for g in q.graders],
        # Every rubric check, optional ones and those of errored graders too, with all a
        # grader recorded (outcome, probabilities, confidence, rule, evidence...).
        "checks": [{"grader": g.grader_id, **c} for g in q.graders for c in g.checks],
    }


def build_json_report(outcome) -> dict[str, Any]:
    """The report as a plain mapping (`outcome` is a `harness.runs.lifecycle.RunOutcome`)."""
    names = [t.target for t in outcome.targets]
    return {
        "format": FORMAT,
        "version": VERSION,
        "run_id": outcome.run_id,
        "grading_id": outcome.grading_id,
        "target": ",".join(names),
        "targets": names,
        "identity": outcome.identity,
        "questions": [_question(q) for t in outcome.targets for q in t.questions],
        "summary": {
            t.target: {
                "mode": t.mode,
                "dataset": t.dataset,
                "questions": t.verdict.questions,
                "errored": t.verdict.errored,
                "degraded": t.verdict.degraded,
                "mean_composite": t.verdict.mean_composite,
                "mean_objective": t.verdict.mean_objective,
                "critical_failures": t.verdict.critical_failures,
                "graders": [g.to_dict() for g in t.graders],
                "advisories": list(t.advisories),
            }
            for t in outcome.targets
        },
        "gate": {
            "exit_code": outcome.exit_code,
            "passed": outcome.exit_code == 0,
            "targets": {t.target: t.verdict.to_dict() for t in outcome.targets},
        },
        "notes": list(outcome.notes),
    }


def write_json_report(outcome, path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(build_json_report(outcome), indent=2, sort_keys=False, default=str)
    path.write_text(text + "\n", encoding="utf-8")
    return path
