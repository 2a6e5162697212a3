"""A Markdown summary for a CI job page (e.g. `$GITHUB_STEP_SUMMARY`)."""

from __future__ import annotations

from pathlib import Path

from ..cost.usage import format_seconds
from .common import (
    annotation_lines,
    fmt,
    fmt_score,
    question_label,
    question_reasons,
    rubric_findings,
    unscored_line,
    worst_questions,
)
from .costs import question_cells, run_cost_lines, totals_of
from .escaping import md_code, md_text
from .variants import injection_lines, variant_lines

__all__ = ["render_markdown", "write_markdown"]

_EXIT_WORDS = {
    0: "passed",
    2: "gate failed (exit 2)",
    3: "evaluation incomplete (exit 3)",
}


def render_markdown(outcome, *, worst: int = 5) -> str:
    """The summary (`outcome` is a `tracegrade.execution.run.lifecycle.RunOutcome`)."""
    code = outcome.exit_code
    lines = [
        f"## tracegrade run {md_code(outcome.run_id)}: {_EXIT_WORDS.get(code, f'exit {code}')}",
        "",
    ]
    for note in outcome.notes:
        lines.append(f"> {md_text(note)}")
    for t in outcome.targets:
        v = t.verdict
        state = "incomplete" if v.incomplete else "passed" if v.passed else "failed"
        lines += ["", f"### {md_text(t.target)} ({t.mode}): gate {state}", ""]
        if v.rule:
            lines += [f"Gate: {md_text(v.rule)}.", ""]
        for advisory in t.advisories:
            lines.append(f"> **{md_text(advisory)}**")
        if t.advisories:
            lines.append("")
        lines += [
            "| grader | mean | pass bar | scored | skipped | errors | passed |",
            "|---|---|---|---|---|---|---|",
        ]
        for g in t.graders:
            must = " (must pass)" if g.must_pass else ""
            lines.append(
                f"| {md_code(g.grader_id)}{must} | {fmt_score(g.mean, g.max_score)} | {g.pass_bar} "
                f"| {g.scored} | {g.skipped} "
                f"| {g.errored} | {g.passed}/{g.passed + g.failed} |"
            )
        lines += [
            "",
            f"**Composite** {fmt_score(v.mean_composite, 5)} · **Objective** {fmt(v.mean_objective)}"
            f" · **Errored/degraded** {v.degraded} of {v.questions} (budget {v.max_errored})"
            f" · **Critical failures** {v.critical_failures}",
        ]
        if v.unscored:
            lines += ["", f"> {unscored_line(v.unscored, md_code)}"]
        lines += _cost_section(t.questions)
        injected = injection_lines(t.questions, md_code)
        if injected:  # ids are code spans already; the rest is our own words
            lines += ["", f"**{injected[0].rstrip(':')}**", ""]
            lines += [f"{'  ' if x.startswith('    ') else ''}- {x.strip()}" for x in injected[1:]]
        if v.reasons:
            lines.append("")
            lines += [f"- {md_text(r)}" for r in v.reasons]
        findings = rubric_findings(t.questions)
        if findings:
            lines += ["", "**Rubric checks to look at**", ""]
            lines += [f"- {md_text(f)}" for f in findings]
        labelled = annotation_lines(t.questions)
        if labelled:
            lines += ["", "**Labels (answered by people)**", ""]
            lines += [f"- {md_text(line)}" for line in labelled]
        flagged = worst_questions(t.questions, worst)
        if flagged:
            lines += ["", "<details><summary>Worst questions</summary>", ""]
            lines += ["| question | composite | why | trace |", "|---|---|---|---|"]
            for q in flagged:
                why = "; ".join(question_reasons(q))
                lines.append(
                    f"| {md_code(question_label(q))} | {fmt(q.composite)} | {md_text(why)} "
                    f"| {md_code(q.trace_id or '-')} |"
                )
            lines += ["", "</details>"]
    side_by_side = variant_lines(outcome)
    if side_by_side:  # a fixed-width table: ids and figures only, no Markdown in it
        lines += ["", "```", *side_by_side, "```"]
    comparison = getattr(outcome, "comparison", None)
    if comparison is not None:
        from .compare_report import render_comparison_markdown

        lines += ["", *render_comparison_markdown(comparison).rstrip("\n").split("\n")]
    return "\n".join(lines) + "\n"


def _cost_section(questions) -> list[str]:
    """The run's cost, tokens and latency, and each question's in a folded table."""
    summary = run_cost_lines(questions)
    if not summary:
        return []
    lines = [""]
    lines += [f"{md_text(line)}  " for line in summary if not line.startswith(("  ", "tool "))]
    totals = totals_of(questions)
    tools = totals.tool_latency()
    if tools:
        lines += ["", "| tool | calls | p50 | p95 | max |", "|---|---|---|---|---|"]
        lines += [
            f"| {md_code(name)} | {t['calls']} | {format_seconds(t['p50'])} | "
            f"{format_seconds(t['p95'])} | {format_seconds(t['max'])} |"
            for name, t in tools.items()
        ]
    lines += ["", "<details><summary>Cost and latency per question</summary>", ""]
    lines += ["| question | tokens | cost | latency |", "|---|---|---|---|"]
    for q in questions:
        tokens, cost, latency = question_cells(q.usage)
        lines.append(f"| {md_code(question_label(q))} | {tokens} | {cost} | {latency} |")
    lines += ["", "</details>"]
    return lines


def write_markdown(outcome, path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_markdown(outcome), encoding="utf-8")
    return path
