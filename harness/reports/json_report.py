"""The JSON results report: a versioned, documented format (`docs/running.md`, "JSON report").

```
{"format": "tracegrade.results", "version": 1, "run_id", "grading_id", "target", "targets",
 "identity", "questions": [{"target", "id", "trial", "split", "bundle", "tags", "composite",
 "objective", "degraded", "error", "error_type", "trace_id", "passed", "content_sha256",
 "rubrics", "tool_calls": [{"name", "args", "outcome"}] | null, "graders": [{"id", "score",
 "min", "max", "mapped", "reason", "error", "skipped", "binary", "passed", "must_pass",
 "weight", "threshold", "pass_bar", "samples", "spread", "details"}], "checks": [{"grader",
 "id", "version", "rubric", "rubric_version", "rubric_ref", "kind", "status", "severity",
 "required", "reason", ...}]}],
 "summary": {"<target>": {..., "totals"}}, "totals", "gate": {"exit_code", "passed", "targets": {"<target>": {...}}}}
```
Version 1 only ever gains keys; a removed or renamed key is version 2. A question entry is a
`tracegrade.QuestionResult` (every field documented there; its `answer` is not written).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .costs import totals_of
from .escaping import to_json_text
from .variants import injection_kinds, variant_groups

__all__ = ["FORMAT", "VERSION", "build_json_report", "write_json_report"]

FORMAT = "tracegrade.results"
VERSION = 1


def _questions(outcome) -> list[dict[str, Any]]:
    """Each question result as `QuestionResult` writes it, with the calls from the trace file
    (arguments as exported: redacted), so `compare` can diff tool calls from this file alone."""
    from ..rundir.history import tool_calls_of

    out = []
    for t in outcome.targets:
        calls = tool_calls_of(Path(outcome.run_dir), t.target)
        for q in t.questions:
            found = calls.get((q.id, q.trial))
            result = q.model_copy(update={"tool_calls": found})
            out.append(result.model_dump(mode="json", exclude={"answer"}))
    return out


def _trials(questions) -> list[dict[str, Any]] | None:
    """Per question over its trials (targets with repeats): passed, pass@k, pass^k, each
    grader's mean and spread. None when every question ran once."""
    if not any(q.trial for q in questions):
        return None
    from dataclasses import asdict

    from ..verdicts.trials import summarise_trials

    return [asdict(s) for s in summarise_trials(questions)]


def build_json_report(outcome) -> dict[str, Any]:
    """The report as a plain mapping (`outcome` is a `tracegrade.execution.run.lifecycle.RunOutcome`)."""
    names = [t.target for t in outcome.targets]
    plans = {t.target: t.plan for t in outcome.targets if t.plan is not None}
    return {
        "format": FORMAT,
        "version": VERSION,
        "run_id": outcome.run_id,
        "grading_id": outcome.grading_id,
        "target": ",".join(names),
        "targets": names,
        "identity": outcome.manifest.to_json() if outcome.manifest is not None else {},
        "questions": _questions(outcome),
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
                "pass_rate": t.verdict.pass_rate,
                "trials": _trials(t.questions),
                "totals": totals_of(t.questions).as_dict(),
                "injections": [k.as_dict() for k in injection_kinds(t.questions)],
            }
            for t in outcome.targets
        },
        "gate": {
            "exit_code": outcome.exit_code,
            "passed": outcome.exit_code == 0,
            "targets": {t.target: t.verdict.to_dict() for t in outcome.targets},
        },
        "totals": totals_of(q for t in outcome.targets for q in t.questions).as_dict(),
        "variants": {
            base: [row.as_dict() for row in rows] for base, rows in variant_groups(outcome).items()
        },
        "notes": list(outcome.notes),
        "comparison": _comparison(outcome),
        **({"monitor": outcome.monitor} if getattr(outcome, "monitor", None) else {}),
        # each target's check plan, as the run recorded it (a run from before plans has none)
        **({"plan": plans} if plans else {}),
    }


def _comparison(outcome) -> dict[str, Any] | None:
    comparison = getattr(outcome, "comparison", None)
    if comparison is None:
        return None
    from .compare_report import comparison_to_dict

    return comparison_to_dict(comparison)


def write_json_report(outcome, path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = to_json_text(build_json_report(outcome))
    path.write_text(text + "\n", encoding="utf-8")
    return path
