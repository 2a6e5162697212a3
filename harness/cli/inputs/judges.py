"""`tracegrade judges validate RUN --gold FILE`: how far each LLM judge agrees with people."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys
from pathlib import Path
from typing import Any

from .._arguments import (
    add_config_flag,
    add_gold_flag,
    add_json_file_flag,
    add_run_argument,
    subcommand,
    subcommand_with_actions,
)

__all__ = ["register", "render_validation", "run_validate", "validation_dict"]

DESCRIPTION = """\
Measure each LLM judge against gold labels: people's verdicts on a run's questions, keyed by
the judge's dimension (relevance, accuracy, groundedness, ... or your own judge's). For each
dimension: exact agreement, Cohen's kappa (quadratic-weighted when the labels are scores on the
judge's scale, unweighted for pass/fail labels), mean absolute error, the confusion matrix and
the questions that disagree most. No judge is called: the run's stored scores are compared.

With a floor (--min-kappa, or judge_validation: {min_kappa: ...} in the config) the command
exits 2 when a dimension's kappa is under it (or undefined), so a judge prompt change is gated
like an agent change.

gold file (YAML or JSON):
  labels:
    - {question: book_consultation, dimension: relevance, score: 5}
    - {question: cancel_booking, dimension: groundedness, pass: false, by: ana}
"""


def register(subparsers: Any) -> None:
    _, actions = subcommand_with_actions(
        subparsers,
        "judges",
        help="judge tools: validate judges against gold labels",
        description="Tools for LLM judges.",
        dest="judges_command",
    )
    validate = subcommand(
        actions,
        "validate",
        help="agreement of each judge dimension with gold labels; exit 2 under the floor",
        description=DESCRIPTION,
    )
    add_run_argument(validate, help="run directory, run id, or --json results file", dest="run")
    add_gold_flag(validate)
    add_config_flag(validate)
    validate.add_argument(
        "--min-kappa",
        type=float,
        default=None,
        metavar="K",
        help="agreement floor (overrides config)",
    )
    add_json_file_flag(validate)
    validate.set_defaults(handler=run_validate)


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def render_validation(result: Any, *, source: str, gold: str) -> str:
    lines = [f"judge validation: {source}, gold labels {gold}"]
    rows = [("dimension", "graders", "kind", "n", "exact", "kappa", "MAE", "verdict")]
    for d in result.dimensions:
        a = d.agreement
        verdict = "-" if d.passed is None else ("ok" if d.passed else f"FAIL: {d.reason}")
        rows.append(
            (
                d.dimension,
                ", ".join(d.graders) or "-",
                d.kind,
                str(a.n),
                _fmt(a.exact),
                _fmt(a.kappa, 3),
                _fmt(a.mae),
                verdict,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        lines.append(
            "  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1]
        )
    for d in result.dimensions:
        a = d.agreement
        lines.append(f"\n  {d.dimension}: confusion matrix (rows: person, columns: judge)")
        names = [str(c).lower() if isinstance(c, bool) else str(c) for c in a.categories]
        width = max([len(n) for n in names] + [3])
        lines.append("    " + " " * width + " " + " ".join(n.rjust(width) for n in names))
        for name, row in zip(names, a.matrix, strict=True):
            lines.append(
                "    " + name.rjust(width) + " " + " ".join(str(v).rjust(width) for v in row)
            )
        if d.disagreements:
            worst = ", ".join(
                f"{x.target}:{x.question} (person {_label(x.gold)}, judge {_label(x.judged)})"
                for x in d.disagreements
            )
            lines.append(f"    most disagreement: {worst}")
        if d.unmatched:
            lines.append(f"    labelled but not scored by the judge: {', '.join(d.unmatched)}")
    if result.min_kappa is not None:
        verdict = "FAILED" if result.exit_code else "PASSED"
        lines.append(f"\njudge validation: {verdict} (floor kappa {result.min_kappa:g})")
    return "\n".join(lines) + "\n"


def _label(value: Any) -> str:
    return ("pass" if value else "fail") if isinstance(value, bool) else str(value)


def validation_dict(result: Any, *, source: str, gold: str) -> dict[str, Any]:
    return {
        "format": "tracegrade.judge_validation",
        "version": 1,
        "source": source,
        "gold": gold,
        "min_kappa": result.min_kappa,
        "exit_code": result.exit_code,
        "dimensions": [
            {
                "dimension": d.dimension,
                "graders": d.graders,
                "kind": d.kind,
                "labels": d.labels,
                "n": d.agreement.n,
                "exact": d.agreement.exact,
                "kappa": d.agreement.kappa,
                "weights": "quadratic" if d.agreement.ordinal else None,
                "mae": d.agreement.mae,
                "categories": d.agreement.categories,
                "confusion_matrix": d.agreement.matrix,
                "disagreements": [
                    {"target": x.target, "question": x.question, "gold": x.gold, "judge": x.judged}
                    for x in d.disagreements
                ],
                "unmatched": d.unmatched,
                "passed": d.passed,
                "reason": d.reason or None,
            }
            for d in result.dimensions
        ],
    }


@functools.cache
def _registry() -> Any:
    from ...graders.registry import load_registry

    return load_registry()


def _dimension_of(grader_id: str) -> str | None:
    """The dimension an LLM judge declares; None for any other grader."""
    registry = _registry()
    if grader_id not in registry:
        return None
    cls = registry.get(grader_id)
    return getattr(cls, "dimension", None) or None if getattr(cls, "llm", False) else None


def _floor(args: argparse.Namespace) -> float | None:
    if args.min_kappa is not None:
        return args.min_kappa
    config_path = args.config or (
        Path("tracegrade.yaml") if Path("tracegrade.yaml").is_file() else None
    )
    if config_path is None:
        return None
    from ...inputs.config import load_config

    section = load_config(config_path).data.get("judge_validation") or {}
    return section.get("min_kappa")


def run_validate(args: argparse.Namespace) -> int:
    from ...curation.judge_validation import validate_judges, with_panel_members
    from ...inputs.gold import load_gold
    from ...rundir.history import load_comparable

    gold = load_gold(args.gold)
    stored = load_comparable(args.run, config_path=args.config)
    label = f"run {stored.run_id} (grading {stored.grading_id})"
    questions = [q.model_dump(mode="json") for q in stored.questions]
    # What each result recorded (a judge from a grading module or a file is in no registry),
    # else what the installed grader declares (runs made before results carried it).
    stored_dimensions = {
        g["id"]: judge["dimension"]
        for q in questions
        for g in q.get("graders", ())
        if isinstance(judge := (g.get("details") or {}).get("judge"), dict)
        and judge.get("dimension")
    }

    def dimension_of(grader_id: str) -> str | None:
        return stored_dimensions.get(grader_id) or _dimension_of(grader_id)

    # A panel's members are validated one by one beside the panel (not gated: the panel is
    # what the run used), so a team sees whether the panel beats its best single judge.
    questions, gold, of, members = with_panel_members(questions, gold, dimension_of)
    result = validate_judges(questions, gold, dimension_of=of, min_kappa=_floor(args))
    if members:
        result = dataclasses.replace(
            result,
            dimensions=[
                dataclasses.replace(d, passed=None, reason="panel member (not gated)")
                if d.dimension in members
                else d
                for d in result.dimensions
            ],
        )
    sys.stdout.write(render_validation(result, source=label, gold=str(args.gold)))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        data = validation_dict(result, source=label, gold=str(args.gold))
        args.json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return result.exit_code
