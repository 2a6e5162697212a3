"""The Runs page: every run, newest first, filtered by target, verdict, date and tag, with a
trend chart per target (pass rate and mean composite over its runs) and live progress for a
run that is still running."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..reports.common import fmt
from .index import RunEntry
from .layout import e, page, q, url

__all__ = ["VERDICTS", "filter_runs", "render_runs_page", "trend_chart"]

VERDICTS = ("passed", "failed", "incomplete", "ungraded")
SHOWN = 1000
"""Rows drawn at most (the filters narrow the rest)."""


def filter_runs(entries: Sequence[RunEntry], params: Mapping[str, str]) -> list[RunEntry]:
    """The runs matching `target`, `verdict`, `since`/`until` (YYYY-MM-DD, by start date)
    and `tag` (a tag of one of its questions)."""
    target, verdict, tag = params.get("target"), params.get("verdict"), params.get("tag")
    since, until = params.get("since") or "", params.get("until") or ""
    out = []
    for r in entries:
        if target and target not in r.target_names:
            continue
        if verdict and r.verdict != verdict:
            continue
        if tag and tag not in r.tags:
            continue
        day = r.created[:10]
        if (since and day < since) or (until and day > until):
            continue
        out.append(r)
    return out


def trend_chart(target: str, runs: Sequence[RunEntry], slug: str) -> str:
    """Pass rate (0-100 %) and mean composite (0-5) of `target` over its runs, oldest left:
    two lines on one SVG with a title and a text description for screen readers."""
    points = []
    for r in reversed(runs):  # oldest first
        t = next((t for t in r.targets if t.target == target and t.questions), None)
        if t is not None:
            points.append((r.run_id, t.pass_rate, t.mean_composite))
    points = points[-50:]
    w, h, pad = 420, 110, 40
    n = max(len(points) - 1, 1)

    def x(i: int) -> float:
        return pad + (w - pad - 10) * (i / n if len(points) > 1 else 0.5)

    def y(frac: float) -> float:
        return 10 + (h - 20) * (1 - frac)

    rate = [(x(i), y(p[1])) for i, p in enumerate(points) if p[1] is not None]
    comp = [(x(i), y(p[2] / 5)) for i, p in enumerate(points) if p[2] is not None]
    desc = "; ".join(
        f"{rid}: pass rate {fmt(pr * 100 if pr is not None else None, 0)} %, composite {fmt(mc)}"
        for rid, pr, mc in points
    )
    parts = [
        f'<svg class="chart trend" viewBox="0 0 {w} {h + 34}" role="img" '
        f'aria-labelledby="trend-{slug}-t trend-{slug}-d">',
        f'<title id="trend-{slug}-t">Pass rate and mean composite of {e(target)} over '
        f"{len(points)} run(s)</title>",
        f'<desc id="trend-{slug}-d">{e(desc)}</desc>',
        f'<line x1="{pad}" y1="{y(0)}" x2="{w}" y2="{y(0)}" class="axis"/>',
        f'<line x1="{pad}" y1="{y(1)}" x2="{w}" y2="{y(1)}" class="axis"/>',
        f'<text x="{pad - 4}" y="{y(1) + 4}" class="tick-r">100%</text>',
        f'<text x="{pad - 4}" y="{y(0) + 4}" class="tick-r">0</text>',
    ]
    for cls, line in (("rate", rate), ("comp", comp)):
        if len(line) > 1:
            path = " ".join(f"{'M' if i == 0 else 'L'}{px:.1f},{py:.1f}" for i, (px, py) in
                            enumerate(line))  # fmt: skip
            parts.append(f'<path d="{path}" class="line {cls}"/>')
        for px, py in line:
            parts.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" class="dot {cls}"/>')
    parts.append(
        f'<text x="{pad}" y="{h + 22}" class="legend rate">● pass rate</text>'
        f'<text x="{pad + 110}" y="{h + 22}" class="legend comp">● mean composite (0–5)</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def _select(name: str, label: str, values: Sequence[str], chosen: str) -> str:
    options = ['<option value="">all</option>'] + [
        f'<option value="{e(v)}"{" selected" if v == chosen else ""}>{e(v)}</option>'
        for v in values
    ]
    return f'<label for="f-{name}">{e(label)}<select id="f-{name}" name="{name}">{"".join(options)}</select></label>'


def _row(r: RunEntry) -> str:
    if r.problem is not None:
        return (
            f'<tr data-run="{e(r.run_id)}"><td><code>{e(r.run_id)}</code></td>'
            f'<td colspan="6" class="advisory">could not be read: {e(r.problem)}</td></tr>'
        )
    progress = ""
    if r.running:
        progress = (
            f' <span class="running" data-progress="{e(r.run_id)}">running: '
            f"{r.questions} of {r.selected or '?'} question(s)</span>"
        )
    per_target = "<br>".join(
        f"{e(t.target)}: {t.passed}/{t.questions} passed, composite {e(fmt(t.mean_composite))}"
        for t in r.targets
    )
    return (
        f'<tr data-run="{e(r.run_id)}"{" data-running" if r.running else ""}>'
        f'<td><a href="/runs/{q(r.run_id)}"><code>{e(r.run_id)}</code></a></td>'
        f"<td>{e(r.created.replace('+00:00', 'Z'))}</td>"
        f'<td><span class="badge v-{e(r.verdict.split()[0])}">{e(r.verdict)}</span>'
        f"{progress}</td>"
        f"<td>{per_target or '-'}</td>"
        f'<td class="num">{r.questions}</td>'
        f"<td><code>{e((r.git_commit or '-')[:12])}</code></td>"
        f'<td><a href="{url("/compare", cand=r.run_id)}">compare</a></td></tr>'
    )


def render_runs_page(
    entries: Sequence[RunEntry], params: Mapping[str, str], *, runs_dir: Any
) -> str:
    """The whole Runs page for `entries` (every run) and the request's filters."""
    shown = filter_runs(entries, params)
    targets = sorted({t for r in entries for t in r.target_names})
    tags = sorted({t for r in entries for t in r.tags})
    form = (
        '<form class="controls" method="get" action="/" role="search" aria-label="Filter the runs">'
        + _select("target", "Target", targets, params.get("target", ""))
        + _select("verdict", "Verdict", VERDICTS, params.get("verdict", ""))
        + f'<label for="f-since">From<input type="date" id="f-since" name="since" value="{e(params.get("since", ""))}"></label>'
        + f'<label for="f-until">To<input type="date" id="f-until" name="until" value="{e(params.get("until", ""))}"></label>'
        + _select("tag", "Tag", tags, params.get("tag", ""))
        + '<button type="submit">Filter</button> <a href="/">clear</a></form>'
    )
    charts = []
    for i, target in enumerate(
        t for t in targets if not params.get("target") or t == params["target"]
    ):
        runs = [r for r in shown if target in r.target_names]
        if runs:
            charts.append(
                f'<figure class="trend-box"><figcaption>{e(target)}</figcaption>'
                f"{trend_chart(target, runs, f't{i}')}</figure>"
            )
    rows = "".join(_row(r) for r in shown[:SHOWN])
    more = (
        f'<p class="muted">showing the newest {SHOWN} of {len(shown)}: narrow the filters</p>'
        if len(shown) > SHOWN
        else ""
    )
    body = (
        "<main><h1>Runs</h1>"
        f'<p class="muted">{len(shown)} of {len(entries)} run(s) under <code>{e(runs_dir)}</code>, newest first</p>'
        f"{form}"
        + (
            f'<section aria-label="Trends" class="charts">{"".join(charts)}</section>'
            if charts
            else ""
        )
        + '<table class="grid" id="runs"><thead><tr><th scope="col">run</th><th scope="col">started</th>'
        '<th scope="col">gate</th><th scope="col">targets</th><th scope="col" class="num">questions</th>'
        '<th scope="col">commit</th><th scope="col"></th></tr></thead>'
        f"<tbody>{rows}</tbody></table>{more}</main>"
    )
    return page("Runs", body, active="runs")
