"""The HTML report: one self-contained page per run that a person reads (`--html FILE`).

Inline CSS and script, no network request of any kind (a Content-Security-Policy forbids
every fetch), so it opens from disk or from a CI artifact. The summary (gate verdict and its
reasons, identity, per-target grader tables and SVG charts, the worst questions) is plain HTML,
readable with scripts off. The question list and each question's view are drawn by a small
script from the run's data, embedded as JSON in `<script type="application/json">` elements
after the script: a header, then blocks of rows, worst first, which the script takes in as the
browser reads them, so the first page of the list shows before the rest is read (and, from
`tracegrade serve`, before the rest is built). The list is paginated, so a run of thousands of
questions stays quick.

Sources: the run outcome (scores, verdicts, identity), the store's question rows (input
messages, answer) and the run's trace file (the tool calls); see `tracegrade.reports.html_data`.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..redaction import DEFAULT_POLICY, RedactionPolicy, secret_env_values
from ..rundir.manifest import RunManifest
from .common import fmt, fmt_score, question_reasons, worst_questions
from .compare_report import comparison_section
from .costs import cost_block
from .escaping import html_text as _e
from .html_assets import CSS, SCRIPT
from .html_data import (
    VERDICTS,
    build_question,
    gc_paused,
    load_records,
    load_sources,
    question_verdict,
    trace_link,
)

__all__ = [
    "build_page_data",
    "json_for_script",
    "page_header",
    "page_parts",
    "page_rows",
    "page_title",
    "render_html",
    "render_page",
    "report_body",
    "row_blocks",
    "rows_element",
    "rows_of",
    "write_html",
]

_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; form-action 'none'; base-uri 'none'"
)
_EXIT_WORDS = {
    0: "passed",
    1: "internal error",
    2: "gate failed",
    3: "evaluation incomplete",
    4: "invalid input",
    5: "nothing to run",
}


_T = TypeVar("_T")
_HEX32 = re.compile("[0-9a-fA-F]{32}")

FIRST_ROWS = 100
"""Questions in the first block of rows: one page of the list (the script's PAGE), so the
first screen is drawn from it while the rest still comes."""
ROWS_PER_BLOCK = 500
"""Questions per later block of rows."""


def _ordered(outcome: Any) -> list[tuple[int, Any, Any]]:
    """Every question as (run-order index, target, question), worst first as the list sorts
    by default (verdict, then composite, then run order): the first block of rows is the
    first page a person sees."""
    rank = {v: i for i, v in enumerate(VERDICTS)}
    found = [
        (i, t, q) for i, (t, q) in enumerate((t, q) for t in outcome.targets for q in t.questions)
    ]
    found.sort(
        key=lambda x: (
            rank[question_verdict(x[2])],
            6 if x[2].composite is None else x[2].composite,
            x[0],
        )
    )
    return found


def page_header(outcome: Any, *, links: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What the page's script reads before any question: the run, its targets and how many
    questions the blocks of rows (`page_rows`) will bring."""
    header: dict[str, Any] = {
        "run_id": outcome.run_id,
        "targets": [t.target for t in outcome.targets],
        "total": sum(len(t.questions) for t in outcome.targets),
    }
    if links:
        header["links"] = dict(links)
    return header


def page_rows(
    outcome: Any,
    *,
    runs: Mapping[str, Mapping[tuple[str, int], Any]],
    records: Mapping[str, Mapping[tuple[str, int], Any]],
    trace_url: str | None = None,
    project: str | None = None,
    redaction: RedactionPolicy = DEFAULT_POLICY,
) -> Iterator[list[dict[str, Any]]]:
    """Every question as the page's script reads it, in blocks, worst first; each carries
    `i`, its place in run order. A block is built only when asked for, so a page that
    streams them (`tracegrade serve`) shows its first rows before the rest are built."""

    def entry(index: int, t: Any, q: Any) -> dict[str, Any]:
        link = trace_link(
            trace_url,
            trace_id=q.trace_id,
            project=project or "default",
            target=t.target,
            run_id=outcome.run_id,
        )
        built = build_question(
            q,
            stored=runs.get(t.target, {}).get((q.id, q.trial)),
            record=records.get(t.target, {}).get((q.id, q.trial)),
            trace_url=link,
            redaction=redaction,
        )
        built["i"] = index
        return built

    ordered = _ordered(outcome)
    start, size = 0, FIRST_ROWS
    while start < len(ordered):
        with gc_paused():  # a block at a time: never held while a slow reader takes one
            block = [entry(*found) for found in ordered[start : start + size]]
        yield block
        start, size = start + size, ROWS_PER_BLOCK


def build_page_data(outcome: Any, **sources: Any) -> dict[str, Any]:
    """The page's header and every question of every target, in run order (`sources` as for
    `page_rows`)."""
    questions = [q for block in page_rows(outcome, **sources) for q in block]
    questions.sort(key=lambda q: q["i"])
    return {**page_header(outcome), "questions": questions}


def rows_element(block: Sequence[Mapping[str, Any]]) -> str:
    """One block of rows as the page carries it: a JSON element the script takes in when the
    browser has read it (none is executed: the Content-Security-Policy holds)."""
    return rows_of([json_for_script(q) for q in block])


def rows_of(texts: Sequence[str]) -> str:
    """`rows_element` of rows each already encoded (`json_for_script`): the same text."""
    # the comment after it: the script takes a block in once a node follows it (read whole)
    return f'<script type="application/json" class="tg-rows">[{",".join(texts)}]</script><!---->'


ROWS_END = '<script type="application/json" id="tg-end">{}</script>'
"""After the last block of rows: the script knows the block before it is whole."""


def json_for_script(data: Any) -> str:
    """JSON safe inside a <script> element: no `</script>`, no `<!--`."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


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
        from ..verdicts.plan import plan_lines

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


def _blocks(questions: Sequence[_T]) -> Iterator[Sequence[_T]]:
    yield questions[:FIRST_ROWS]
    for at in range(FIRST_ROWS, len(questions), ROWS_PER_BLOCK):
        yield questions[at : at + ROWS_PER_BLOCK]


def page_parts(
    outcome: Any,
    data: Mapping[str, Any],
    rows: Iterable[str] | None = None,
) -> Iterator[str]:
    """The whole self-contained document in parts: the report body with its CSS and script
    inlined, then the blocks of rows (`row_blocks`; else from `data["questions"]`) after the
    script, which draws the first rows as soon as the browser has read them."""
    header = {k: v for k, v in data.items() if k != "questions"}
    if rows is None:
        rows = (rows_element(b) for b in _blocks(list(data.get("questions") or [])) if b)
    yield "\n".join(
        [
            "<!doctype html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{_e(page_title(outcome))}</title>",
            f"<style>{CSS}</style></head><body>",
            report_body(outcome, header),
            f"<script>{SCRIPT}</script>",
        ]
    )
    yield from rows
    yield ROWS_END + "</body></html>\n"


def render_page(outcome: Any, data: Mapping[str, Any]) -> str:
    """The whole self-contained document for `outcome` and the page data from
    `build_page_data`."""
    return "".join(page_parts(outcome, data))


def render_html(
    outcome: Any,
    *,
    trace_url: str | None = None,
    project: str | None = None,
    redaction: RedactionPolicy = DEFAULT_POLICY,
) -> str:
    """The page for a run outcome, reading its store and trace files from `outcome.run_dir`;
    `trace_url`/`project` from the config's `report:` block, `redaction` its policy."""
    rows = row_blocks(outcome, trace_url=trace_url, project=project, redaction=redaction)
    return "".join(page_parts(outcome, page_header(outcome), rows))


_ROW_CODE = (
    ".html",
    ".html_data",
    ".common",
    ".costs",
    "..graders.tool_usage",
    "..graders.nodes",
    "..redaction",
    "..capture.tracefile",
    "..verdicts.result",
    "..verdicts.scoring",
    "..rundir.store",
    "..rundir.annotations",
)
"""The modules whose code shapes a row: a change to any (released or not) builds rows anew."""


@functools.cache
def _row_code() -> str | None:
    from .._version import __version__

    digest = hashlib.sha256(__version__.encode())
    for name in _ROW_CODE:
        try:
            digest.update(
                Path(str(importlib.import_module(name, __package__).__file__)).read_bytes()
            )
        except OSError:  # no source to read: nothing says the rows are this code's
            return None
    return digest.hexdigest()


def row_blocks(
    outcome: Any,
    *,
    trace_url: str | None = None,
    project: str | None = None,
    redaction: RedactionPolicy = DEFAULT_POLICY,
) -> Iterator[str]:
    """The page's blocks of rows (`rows_element`), worst first, for `outcome.run_dir`'s run:
    read back from the rows kept in the run directory when they were built from the same
    files, grading, options and code (`tracegrade.rundir.kept_rows`); else built from the
    store and the trace file (`page_rows`), each row encoded once, and kept for the next
    page. Nothing is read before the first block is asked for."""
    from ..rundir.directory import RunDirectory
    from ..rundir.kept_rows import content_stamp, keep_rows, read_rows

    # in run order (the order `_ordered` numbers them), the verdicts sorted by only when read
    keys = [json.dumps([t.target, q.id, q.trial]) for t in outcome.targets for q in t.questions]
    run, names = RunDirectory(outcome.run_dir), [t.target for t in outcome.targets]
    code, stamp = _row_code(), None
    if code is not None and run.has_store():
        options = [str(outcome.grading_id), repr(redaction), trace_url or "", project or ""]
        stamp = content_stamp(run, names, code, *options)
        kept = read_rows(run, stamp)
        if kept is not None and [k for k, _ in kept] == keys and _masked(kept, redaction):
            texts = [kept[i][1] for i, _, _ in _ordered(outcome)]
            yield from (rows_of(b) for b in _blocks(texts) if b)
            return
    runs, records = _first_records(outcome, names)
    built = [""] * len(keys)
    for block in page_rows(
        outcome,
        runs=runs,
        records=records,
        trace_url=trace_url,
        project=project,
        redaction=redaction,
    ):
        texts = [json_for_script(q) for q in block]
        for q, text in zip(block, texts, strict=True):
            built[q["i"]] = text
        yield rows_of(texts)
    if stamp is not None:
        keep_rows(run, stamp, list(zip(keys, built, strict=True)))


def _first_records(outcome: Any, names: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The store's answers, and the records of the first block's questions read from the trace
    file's lines naming their trace ids; any other record reads the file whole, once (the
    profile: reading it whole was most of the wait for the first rows)."""
    first = _ordered(outcome)[:FIRST_ROWS]
    # only an id written as itself (32 hex digits) is found by name in a line
    traces = frozenset(
        q.trace_id.lower() for _, _, q in first if q.trace_id and _HEX32.fullmatch(q.trace_id)
    )
    narrowed = {
        (t.target, q.id, q.trial)
        for _, t, q in first
        if q.trace_id and q.trace_id.lower() in traces
    }
    runs, some = load_sources(Path(outcome.run_dir), names, traces=traces)
    whole: list[dict[str, Any]] = []

    def record(target: str, key: tuple[str, int]) -> Any:
        # a first-block record read from its trace's lines is what the whole read gives; any
        # other (none found there, or not among them) may still be in the file
        if (target, *key) in narrowed and key in some.get(target, {}):
            return some[target][key]
        if not whole:
            whole.append(load_records(Path(outcome.run_dir), names))
        return whole[0].get(target, {}).get(key)

    return runs, {t: _Records(t, record) for t in names}


class _Records(Mapping[tuple[str, int], Any]):
    """One target's records as `page_rows` asks for them, each from `record(target, key)`."""

    def __init__(self, target: str, record: Any) -> None:
        self.target, self.record = target, record

    def get(self, key: Any, default: Any = None) -> Any:
        found = self.record(self.target, key)
        return default if found is None else found

    def __getitem__(self, key: tuple[str, int]) -> Any:
        found = self.record(self.target, key)
        if found is None:
            raise KeyError(key)
        return found

    def __iter__(self) -> Iterator[tuple[str, int]]:
        raise TypeError("the records are found one by one")

    def __len__(self) -> int:
        raise TypeError("the records are found one by one")


def _masked(kept: Sequence[tuple[str, str]], redaction: RedactionPolicy) -> bool:
    """No value the policy masks from the environment (`redaction.env`, secret-named
    variables) is in the kept rows: those values are read when the page is made and are no
    part of the stamp (a secret's digest written down could be guessed back)."""
    values = [v for v in secret_env_values(os.environ, redaction.env) if v not in redaction.allow]
    if not values:
        return True
    text = "\n".join(t for _, t in kept)
    forms = {f for v in values for f in (v, json.dumps(v)[1:-1], json_for_script(v)[1:-1])}
    return not any(f in text for f in forms)


def write_html(outcome: Any, path: Path | str, **options: Any) -> Path:
    """Write the page (`options` as for `render_html`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(outcome, **options), encoding="utf-8")
    return path
