"""Cost, tokens and latency as every report words them: a run's totals and per-tool latency
(console, Markdown, JUnit properties, `show`), a question's cells, and a comparison's deltas.

One wording everywhere: `tracegrade.cost.usage.format_cost` ("unpriced" for a model no price covers,
"unknown" when no call reported usage, never "$0").

The HTML report's block of a target (`cost_block`) shows the same lines and a per-tool latency
chart (p50 and p95 bars, the max marked), an accessible SVG (title, description) drawn with
presentation attributes only, so it needs no stylesheet of its own and runs under the page's
Content-Security-Policy.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from typing import Any

from ..cost.usage import (
    QuestionUsage,
    RunTotals,
    format_cost,
    format_seconds,
    format_tokens,
    percentile,
    run_totals,
)

__all__ = [
    "comparison_cost_dict",
    "comparison_cost_lines",
    "cost_block",
    "question_cells",
    "run_cost_lines",
    "run_cost_properties",
    "tool_latency_chart",
    "totals_of",
]


def totals_of(questions: Iterable[Any]) -> RunTotals:
    """The totals of question scores or results (anything with a `usage`)."""
    return run_totals(getattr(q, "usage", None) for q in questions)


def question_cells(usage: QuestionUsage | None) -> tuple[str, str, str]:
    """(tokens, cost, latency) of one question as a table shows them."""
    if usage is None:
        return "-", "-", "-"
    return (
        format_tokens(usage.agent),
        format_cost(usage.agent),
        format_seconds(usage.latency.wall_s),
    )


def run_cost_lines(questions: Sequence[Any] = (), *, totals: RunTotals | None = None) -> list[str]:
    """The run's accounting in a few lines (empty when no question has one); `totals`: the
    questions' already summed (a streamed run's)."""
    totals = totals if totals is not None else totals_of(questions)
    if not totals.questions:
        return []
    agent = totals.agent
    lines = [
        f"cost {format_cost(agent)} over {totals.questions} question run(s) "
        f"({agent.calls} model call(s): {format_tokens(agent)})"
    ]
    if agent.unpriced:
        lines.append(f"unpriced model(s): {', '.join(agent.unpriced)} (add them under pricing:)")
    if totals.judges.calls:
        lines.append(
            f"judges: {format_cost(totals.judges)} ({totals.judges.calls} call(s): "
            f"{format_tokens(totals.judges)})"
        )
    wall = totals.wall
    lines.append(
        f"latency per question p50 {format_seconds(totals.wall_percentile(50))}, "
        f"p95 {format_seconds(totals.wall_percentile(95))}, max {format_seconds(max(wall))}; "
        f"model calls p50 {format_seconds(percentile(totals.model_calls, 50))}, "
        f"p95 {format_seconds(percentile(totals.model_calls, 95))}"
    )
    tools = totals.tool_latency()
    if tools:
        lines.append("tool latency (calls, p50, p95, max):")
        lines += [
            f"  {name}: {t['calls']}, {format_seconds(t['p50'])}, {format_seconds(t['p95'])}, "
            f"{format_seconds(t['max'])}"
            for name, t in tools.items()
        ]
    return lines


def run_cost_properties(questions: Sequence[Any]) -> dict[str, str]:
    """The run's accounting as JUnit properties (`tracegrade.cost`, ...)."""
    totals = totals_of(questions)
    if not totals.questions:
        return {}
    agent = totals.agent
    props = {
        "tracegrade.cost": format_cost(agent),
        "tracegrade.tokens.input": str(agent.input_tokens),
        "tracegrade.tokens.output": str(agent.output_tokens),
        "tracegrade.tokens.cached": str(agent.cached_tokens),
        "tracegrade.model_calls": str(agent.calls),
        "tracegrade.model_calls.unknown": str(agent.unknown_calls),
        "tracegrade.latency.p50_s": f"{totals.wall_percentile(50):.3f}",
        "tracegrade.latency.p95_s": f"{totals.wall_percentile(95):.3f}",
    }
    if totals.judges.calls:
        props["tracegrade.judges.cost"] = format_cost(totals.judges)
    if agent.unpriced:
        props["tracegrade.unpriced"] = ", ".join(agent.unpriced)
    return props


def _interval(figure: str, f: Any, show: Any) -> str:
    b = f.interval
    if b is None:
        return ""
    lo, hi = (_signed(figure, b.low, show), _signed(figure, b.high, show))
    return (
        f"; per question {_signed(figure, b.mean, show)}, {b.confidence:.0%} paired bootstrap "
        f"interval [{lo}, {hi}] over {b.n}"
    )


def _signed(figure: str, value: float, show: Any) -> str:
    text = show(figure, abs(value))
    return ("-" if value < 0 else "+") + text


def _percent(value: float | None) -> str:
    if value is None:
        return ""
    return " (+inf%)" if math.isinf(value) else f" ({value * 100:+.0f}%)"


def comparison_cost_lines(c: Any) -> list[str]:
    """The cost, token and latency deltas of a comparison, and the questions that moved most."""
    costs = getattr(c, "costs", None)
    if costs is None or not costs.available:
        return []
    lines = []
    titles = {"cost": "cost", "tokens": "tokens", "latency": "mean question latency"}
    for figure, f in costs.figures.items():
        if f.unknown:
            lines.append(f"{titles[figure]}: unknown ({f.unknown})")
            continue
        lines.append(
            f"{titles[figure]} {costs.show(figure, f.base)} -> {costs.show(figure, f.cand)}"
            f"{_percent(f.relative)}{_interval(figure, f, costs.show)}"
        )
    for figure in ("cost", "latency"):
        moved = costs.most_changed(figure, 3)
        if moved and not costs.figures[figure].unknown:
            lines.append(
                f"{figure} changed most: "
                + ", ".join(
                    f"{q.question_id} {costs.show(figure, q.base[figure])} -> "
                    f"{costs.show(figure, q.cand[figure])}"
                    for q in moved
                )
            )
    return lines


def comparison_cost_dict(c: Any) -> dict[str, Any] | None:
    """The deltas as the comparison's JSON writes them (`costs`)."""
    costs = getattr(c, "costs", None)
    if costs is None:
        return None
    out: dict[str, Any] = {"currency": costs.currency, "thresholds": dict(costs.thresholds)}
    for figure, f in costs.figures.items():
        b = f.interval
        out[figure] = {
            "base": f.base,
            "cand": f.cand,
            "relative": None if f.relative is None or math.isinf(f.relative) else f.relative,
            "unknown": f.unknown,
            "interval": None if b is None else b.as_dict(),
        }
    out["questions"] = [
        {"target": q.target, "id": q.question_id, "base": q.base, "cand": q.cand}
        for q in costs.questions
    ]
    return out


_P50, _P95, _MAX = "#54aeff", "#0550ae", "#cf222e"


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def tool_latency_chart(target: str, tools: dict[str, dict[str, Any]], slug: str) -> str:
    """p50 and p95 seconds per tool as horizontal bars on one scale, the max as a tick."""
    if not tools:
        return ""
    row, label_w, w = 26, 150, 372
    span = w - label_w - 76
    top = max((t["max"] or 0.0) for t in tools.values()) or 1.0
    h = row * len(tools) + 30
    desc = "; ".join(
        f"{name}: {t['calls']} call(s), p50 {format_seconds(t['p50'])}, p95 "
        f"{format_seconds(t['p95'])}, max {format_seconds(t['max'])}"
        for name, t in tools.items()
    )
    parts = [
        f'<svg class="chart tool-latency" id="tool-latency-{slug}" viewBox="0 0 {w} {h}" '
        f'role="img" aria-labelledby="lat-{slug}-t lat-{slug}-d">',
        f'<title id="lat-{slug}-t">Tool call latency per tool, {_e(target)}</title>',
        f'<desc id="lat-{slug}-d">{_e(desc)}</desc>',
    ]
    for i, (name, t) in enumerate(tools.items()):
        y = 4 + i * row
        p50, p95, peak = (t["p50"] or 0.0) / top, (t["p95"] or 0.0) / top, (t["max"] or 0.0) / top
        parts.append(f'<text x="0" y="{y + 14}" class="name">{_e(name[:22])}</text>')
        parts.append(
            f'<rect x="{label_w}" y="{y + 2}" width="{span * p95:.1f}" height="16" '
            f'fill="{_P95}" data-tool="{_e(name)}"><title>{_e(name)} p95 '
            f"{format_seconds(t['p95'])}</title></rect>"
        )
        parts.append(
            f'<rect x="{label_w}" y="{y + 6}" width="{span * p50:.1f}" height="8" '
            f'fill="{_P50}"><title>{_e(name)} p50 {format_seconds(t["p50"])}</title></rect>'
        )
        x = label_w + span * peak
        parts.append(
            f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 20}" stroke="{_MAX}" '
            f'stroke-width="2"><title>{_e(name)} max {format_seconds(t["max"])}</title></line>'
        )
        parts.append(
            f'<text x="{label_w + span + 6}" y="{y + 14}" class="num-l">'
            f"{format_seconds(t['p95'])}</text>"
        )
    legend = h - 10
    parts.append(
        f'<rect x="{label_w}" y="{legend - 9}" width="10" height="10" fill="{_P50}"/>'
        f'<text x="{label_w + 14}" y="{legend}" class="name">p50</text>'
        f'<rect x="{label_w + 50}" y="{legend - 9}" width="10" height="10" fill="{_P95}"/>'
        f'<text x="{label_w + 64}" y="{legend}" class="name">p95</text>'
        f'<line x1="{label_w + 106}" y1="{legend - 10}" x2="{label_w + 106}" y2="{legend + 1}" '
        f'stroke="{_MAX}" stroke-width="2"/>'
        f'<text x="{label_w + 112}" y="{legend}" class="name">max</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def cost_block(target: str, questions: Sequence[Any], slug: str) -> str:
    """The target's cost and latency paragraph and its per-tool latency chart (empty for a run
    without an accounting)."""
    lines = [line for line in run_cost_lines(questions) if not line.startswith(("  ", "tool "))]
    if not lines:
        return ""
    out = [
        f'<h3 id="{slug}-cost">Cost and latency</h3>',
        f'<ul class="cost" id="{slug}-cost-lines">'
        + "".join(f"<li>{_e(line)}</li>" for line in lines)
        + "</ul>",
    ]
    chart = tool_latency_chart(target, totals_of(questions).tool_latency(), slug)
    if chart:
        out.append(f'<div class="charts">{chart}</div>')
    return "\n".join(out)
