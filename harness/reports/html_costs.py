"""The HTML report's cost and latency block of a target: the run's cost, tokens and latency
in words (the same lines as the console) and a per-tool latency chart (p50 and p95 bars, the
max marked), an accessible SVG (title, description) drawn with presentation attributes only,
so it needs no stylesheet of its own and runs under the page's Content-Security-Policy."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from ..usage import format_seconds
from .costs import run_cost_lines, totals_of

__all__ = ["cost_block", "tool_latency_chart"]

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
