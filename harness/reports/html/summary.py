"""The HTML report's summary, plain HTML readable with scripts off: the gate verdict and its
reasons, identity, each target's grader table and SVG charts, the questions to look at first,
the comparison, and the roots the script draws the question list into."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...rundir.manifest import RunManifest
from ..common import fmt, fmt_score, question_reasons, worst_questions
from ..compare_report import comparison_section
from ..costs import cost_block
from ..escaping import html_text as _e
from .blocks import json_for_script

__all__ = ["page_title", "report_body"]

_EXIT_WORDS = {
    0: "passed",
    1: "internal error",
    2: "gate failed",
    3: "evaluation incomplete",
    4: "invalid input",
    5: "nothing to run",
}


def _gate_word(verdict: Any) -> tuple[str, str]:
    if verdict.incomplete:
        return "incomplete", "evaluation incomplete (exit 3)"
    if verdict.passed:
        return "passed", "passed"
    return "failed", "failed (exit 2)"


def _identity(outcome: Any) -> str:
    manifest: RunManifest | None = outcome.manifest
    rows = [
        ("run id", outcome.run_id),
        ("grading id", outcome.grading_id),
        ("created", manifest.created if manifest else None),
        ("config", manifest.config_path if manifest else None),
        ("git commit", (manifest.git_commit if manifest else None) or "not a git checkout"),
    ]
    judge = manifest.judge if manifest else None
    if judge:
        knobs = judge.get("pinned_knobs") or {}
        described = ", ".join(f"{k}={v}" for k, v in judge.items() if k != "pinned_knobs")
        rows.append(("judge", described))
        rows.append(("judge pinned knobs", ", ".join(f"{k}={v}" for k, v in knobs.items())))
    else:
        rows.append(("judge", "none configured"))
    packages = manifest.packages if manifest else {}
    rows.append(("packages", ", ".join(f"{k} {v}" for k, v in packages.items())))
    out = ['<dl class="kv">']
    out += [f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in rows]
    out.append("</dl>")
    for name, t in (manifest.targets if manifest else {}).items():
        out.append(f"<h3>{_e(name)}</h3>")
        out.append('<dl class="kv">')
        out.append(f"<dt>dataset</dt><dd>{_e(t.dataset.path)}</dd>")
        out.append(f"<dt>dataset sha256</dt><dd><code>{_e(t.dataset.sha256)}</code></dd>")
        module = t.grading_module
        if module:
            out.append(f"<dt>grading module sha256</dt><dd><code>{_e(module.sha256)}</code></dd>")
        out.append("</dl>")
        out.append(
            '<table class="grid"><caption>Graders and their code</caption><thead><tr>'
            '<th scope="col">grader</th><th scope="col">source</th><th scope="col">scale</th>'
            '<th scope="col">must pass</th><th scope="col">code sha256</th></tr></thead><tbody>'
        )
        for g in t.graders:
            out.append(
                f"<tr><td><code>{_e(g.id)}</code></td><td>{_e(g.source)}</td>"
                f"<td>{_e(fmt(g.min_score))}–{_e(fmt(g.max_score))}</td>"
                f"<td>{'yes' if g.must_pass else 'no'}</td>"
                f"<td><code>{_e((g.code_sha256 or '-')[:16])}</code></td></tr>"
            )
        out.append("</tbody></table>")
    return "\n".join(out)


def _histogram(target: str, questions: Sequence[Any], slug: str) -> str:
    """Composite scores in ten bins of 0.5 (the last closed), plus questions without one."""
    bins = [0] * 10
    none = 0
    for q in questions:
        if q.composite is None:
            none += 1
        else:
            bins[min(int(q.composite * 2), 9)] += 1
    top = max([*bins, 1])
    w, h, pad = 372, 150, 24
    bar = (w - pad - 12) / 10
    parts = [
        f'<svg class="chart" viewBox="0 0 {w} {h + 36}" role="img" '
        f'aria-labelledby="hist-{slug}-t hist-{slug}-d">',
        f'<title id="hist-{slug}-t">Composite score distribution, {_e(target)}</title>',
        f'<desc id="hist-{slug}-d">'
        + _e(
            "; ".join(f"{i / 2:g}–{(i + 1) / 2:g}: {n}" for i, n in enumerate(bins) if n)
            + (f"; no composite: {none}" if none else "")
        )
        + "</desc>",
        f'<line x1="{pad}" y1="{h}" x2="{w}" y2="{h}" class="axis"/>',
    ]
    for i, n in enumerate(bins):
        bh = (h - 24) * n / top
        x = pad + i * bar
        parts.append(
            f'<rect x="{x + 2:.1f}" y="{h - bh:.1f}" width="{bar - 4:.1f}" height="{bh:.1f}" '
            f'class="bar hist"><title>{i / 2:g}–{(i + 1) / 2:g}: {n}'
            "</title></rect>"
        )
        if n:
            parts.append(f'<text x="{x + bar / 2:.1f}" y="{h - bh - 3:.1f}" class="num">{n}</text>')
    for s in range(6):
        parts.append(f'<text x="{pad + s * 2 * bar:.1f}" y="{h + 14}" class="tick">{s}</text>')
    parts.append(f'<text x="{w / 2:.1f}" y="{h + 30}" class="label">composite (0–5)</text>')
    parts.append("</svg>")
    return "".join(parts)


def _pass_rates(target: str, graders: Sequence[Any], slug: str) -> str:
    row, label_w, w = 22, 150, 360
    h = row * max(len(graders), 1) + 8
    parts = [
        f'<svg class="chart" viewBox="0 0 {w} {h}" role="img" '
        f'aria-labelledby="rate-{slug}-t rate-{slug}-d">',
        f'<title id="rate-{slug}-t">Pass rate per grader, {_e(target)}</title>',
    ]
    desc = []
    for i, g in enumerate(graders):
        decided = g.passed + g.failed
        rate = g.passed / decided if decided else None
        text = f"{g.passed}/{decided}" if decided else "none decided"
        if g.errored:
            text += f", {g.errored} errored"
        desc.append(f"{g.grader_id}: {text}")
        y = 4 + i * row
        span = w - label_w - 70
        parts.append(f'<text x="0" y="{y + 14}" class="name">{_e(g.grader_id[:22])}</text>')
        parts.append(f'<rect x="{label_w}" y="{y + 3}" width="{span}" height="14" class="track"/>')
        if rate:
            parts.append(
                f'<rect x="{label_w}" y="{y + 3}" width="{span * rate:.1f}" height="14" '
                f'class="bar{" low" if rate < 1 else ""}"/>'
            )
        parts.append(f'<text x="{label_w + span + 6}" y="{y + 14}" class="num-l">{text}</text>')
    parts.insert(2, f'<desc id="rate-{slug}-d">{_e("; ".join(desc))}</desc>')
    parts.append("</svg>")
    return "".join(parts)


def _target_section(t: Any, index: int) -> str:
    v = t.verdict
    state, words = _gate_word(v)
    slug = f"t{index}"
    out = [
        f'<section class="target" aria-labelledby="{slug}-h">',
        f'<h2 id="{slug}-h">{_e(t.target)} <span class="mode">({_e(t.mode)})</span> '
        f'<span class="badge v-{state}">gate {_e(words)}</span></h2>',
        f'<p class="muted">dataset {_e(t.dataset)}</p>',
    ]
    if v.rule:
        out.append(f'<p class="gate-rule">gate: {_e(v.rule)}</p>')
    for advisory in t.advisories:
        out.append(f'<p class="advisory" role="note">{_e(advisory)}</p>')
    out.append(
        f'<p class="figures">composite <strong>{_e(fmt_score(v.mean_composite, 5))}</strong> '
        f"over {v.questions - v.degraded} non-degraded question(s) · objective "
        f"<strong>{_e(fmt(v.mean_objective))}</strong> · errored {v.errored}, degraded "
        f"{v.degraded} of {v.questions} (error budget {v.max_errored}) · critical failures "
        f"{v.critical_failures}</p>"
    )
    if v.reasons:
        out.append('<ul class="reasons">' + "".join(f"<li>{_e(r)}</li>" for r in v.reasons))
        out.append("</ul>")
    out.append(
        f'<table class="grid"><caption>Graders of {_e(t.target)} (means on each grader\'s own '
        'scale)</caption><thead><tr><th scope="col">grader</th><th scope="col">mean</th>'
        '<th scope="col">pass bar</th><th scope="col">scored</th><th scope="col">skipped</th>'
        '<th scope="col">errored</th><th scope="col">passed</th></tr></thead><tbody>'
    )
    for g in t.graders:
        must = " (must pass)" if g.must_pass else ""
        out.append(
            f"<tr><td><code>{_e(g.grader_id)}</code>{must}</td>"
            f"<td>{_e(fmt_score(g.mean, g.max_score))}</td><td>{_e(g.pass_bar)}</td>"
            f"<td>{g.scored}</td>"
            f"<td>{g.skipped}</td><td>{g.errored}</td><td>{g.passed}/{g.passed + g.failed}</td>"
            "</tr>"
        )
    out.append("</tbody></table>")
    out.append('<div class="charts">')
    out.append(_histogram(t.target, t.questions, slug))
    out.append(_pass_rates(t.target, t.graders, slug))
    out.append("</div>")
    costs = cost_block(t.target, t.questions, slug)
    if costs:
        out.append(costs)
    flagged = worst_questions(t.questions, 10)
    if flagged:
        out.append(f'<h3 id="{slug}-worst">Questions to look at first</h3><ul class="worst">')
        for q in flagged:
            why = "; ".join(question_reasons(q))
            out.append(
                f'<li><a href="#q={_e(_question_hash(t.target, q))}">'
                f"<code>{_e(q.id)}</code></a> composite {_e(fmt(q.composite))}: "
                f"{_e(why)}</li>"
            )
        out.append("</ul>")
    out.append("</section>")
    return "\n".join(out)


def _question_hash(target: str, q: Any) -> str:
    """`<target>/<id>`, `/<trial>` after it for a repeat: what the page's script routes on."""
    from urllib.parse import quote

    key = f"{quote(target, safe='')}/{quote(q.id, safe='')}"
    return f"{key}/{q.trial}" if q.trial else key


def page_title(outcome: Any) -> str:
    """`tracegrade run ID: verdict`, the page's title."""
    code = outcome.exit_code
    return f"tracegrade run {outcome.run_id}: {_EXIT_WORDS.get(code, code)}"


def report_body(outcome: Any, data: Mapping[str, Any]) -> str:
    """The report itself (summary, targets, comparison, the question list's roots and the
    data the script reads): what the static page and `tracegrade serve`'s run page both show,
    each in its own document with its own way of loading CSS and SCRIPT."""
    code = outcome.exit_code
    state = "passed" if code == 0 else "incomplete" if code == 3 else "failed"
    reasons = [f"{t.target}: {r}" for t in outcome.targets for r in t.verdict.reasons]
    head = [
        '<a class="skip" href="#questions">Skip to the questions</a>',
        '<header id="summary" class="summary">',
        f"<h1>tracegrade run <code>{_e(outcome.run_id)}</code></h1>",
        f'<p class="verdict"><span class="badge big v-{state}">'
        f"{_e(_EXIT_WORDS.get(code, 'exit'))}</span> exit code <strong>{code}</strong> · "
        f"targets: {_e(', '.join(t.target for t in outcome.targets))}</p>",
    ]
    if reasons and len(outcome.targets) > 1:  # one target: its section below says them
        head.append('<ul class="reasons">' + "".join(f"<li>{_e(r)}</li>" for r in reasons))
        head.append("</ul>")
    for note in outcome.notes:
        head.append(f'<p class="advisory" role="note">{_e(note)}</p>')
    plans = {t.target: t.plan for t in outcome.targets if getattr(t, "plan", None)}
    if plans:  # which expectation each grader checked, from what: decided before the run
        from ...verdicts.plan import plan_lines

        head.append('<details class="plan" open><summary>Check plan</summary>')
        head.append(f"<pre>{_e(chr(10).join(plan_lines(plans)))}</pre></details>")
    head.append('<details class="identity"><summary>Identity: what produced these scores</summary>')
    head.append(_identity(outcome))
    head.append("</details></header>")
    body = ["<main>"]
    body += [_target_section(t, i) for i, t in enumerate(outcome.targets)]
    if getattr(outcome, "comparison", None) is not None:
        body.append(comparison_section(outcome.comparison))
    body.append(
        '<section id="questions" aria-labelledby="questions-h"><h2 id="questions-h" '
        'tabindex="-1">Questions</h2><noscript><p class="advisory">The question list and '
        "each question's view need scripts; the summary above is complete without them.</p>"
        '</noscript><div id="list-root"></div></section>'
    )
    body.append(
        '<section id="question" aria-labelledby="question-h" hidden><div id="question-root">'
        "</div></section></main>"
    )
    body.append(f'<script type="application/json" id="tg-data">{json_for_script(data)}</script>')
    return "\n".join(head + body)
