"""The Run page (the HTML report's own body, shared with the static page) and the Compare
page (two runs, or a run and the run before it on the same targets, through `compare_runs`
and the report's comparison section)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..errors import TracegradeError
from ..reports.compare_report import comparison_section
from ..reports.html import (
    ROWS_END,
    page_header,
    page_title,
    report_body,
    row_blocks,
)
from .index import RunEntry
from .layout import e, page, q, url

__all__ = ["default_baseline", "render_compare_page", "run_page_parts"]


def run_page_parts(entry: RunEntry, *, report_options: Mapping[str, Any]) -> Iterator[str]:
    """The run's HTML report inside the app: the same body and script as `--html`, with each
    question linked to Promote, in parts: the summary and the script first (nothing read
    but the run's scores), then the blocks of rows worst first: read back from the rows
    kept in the run directory, else each built as it is sent."""
    outcome = entry.outcome
    assert outcome is not None
    links = {
        "Promote to a dataset": f"/promote?run={q(entry.run_id)}&target={{target}}"
        "&question={id}&trial={trial}",
        "Review this question": f"/review?run={q(entry.run_id)}&target={{target}}"
        "&question={id}&trial={trial}",
    }
    # the queue link follows the question being viewed (the app script sets its query)
    actions = (
        f'<p class="actions"><a href="{url("/compare", cand=entry.run_id)}">Compare with its '
        f'baseline</a> · <a href="{url("/review", run=entry.run_id)}" data-review-link>Review '
        "queue of this run</a></p>"
    )
    body = actions + report_body(outcome, page_header(outcome, links=links))
    whole = page(page_title(outcome), body, active="runs", scripts=("report", "app"))
    end = "</body></html>"
    yield whole.removesuffix(end)  # the rows come after the scripts that take them in
    yield from row_blocks(outcome, **report_options)  # kept in the run directory, or built
    yield ROWS_END + end


def default_baseline(entries: Sequence[RunEntry], cand: RunEntry) -> RunEntry | None:
    """The newest readable run older than `cand` that asked one of its targets, else one
    that asked the same dataset (the same file content) under another target."""
    older = [
        r
        for r in entries
        if r.problem is None and (r.created, r.run_id) < (cand.created, cand.run_id)
    ]
    for shares in (
        lambda r: set(cand.target_names) & set(r.target_names),
        lambda r: set(cand.datasets) & set(r.datasets),
    ):
        found = [r for r in older if shares(r)]
        if found:
            return found[0]
    return None


def _run_select(name: str, label: str, entries: Sequence[RunEntry], chosen: str | None) -> str:
    options = ['<option value="">choose a run</option>'] + [
        f'<option value="{e(r.run_id)}"{" selected" if r.run_id == chosen else ""}>'
        f"{e(r.run_id)} · {e(', '.join(r.target_names))} · {e(r.verdict)}</option>"
        for r in entries
        if r.problem is None
    ]
    return (
        f'<label for="c-{name}">{e(label)}<select id="c-{name}" name="{name}">'
        f"{''.join(options)}</select></label>"
    )


def render_compare_page(
    entries: Sequence[RunEntry], base: RunEntry | None, cand: RunEntry | None
) -> str:
    """Two runs side by side: the form to choose them, then the comparison (verdict,
    statistics, newly failing or passing questions with their tool-call differences)."""
    form = (
        '<form class="controls" method="get" action="/compare" aria-label="Choose two runs">'
        + _run_select("base", "Baseline", entries, base.run_id if base else None)
        + _run_select("cand", "Candidate", entries, cand.run_id if cand else None)
        + '<button type="submit">Compare</button></form>'
    )
    out = ["<main><h1>Compare</h1>", form]
    if cand is not None and base is None:
        out.append('<p class="advisory">No older run of the same target(s) to compare with.</p>')
    if base is not None and cand is not None:
        out.append(_side_by_side(base, cand))
        out.append(_comparison(base, cand))
    out.append("</main>")
    return page("Compare", "".join(out), active="compare")


def _side_by_side(base: RunEntry, cand: RunEntry) -> str:
    rows = []
    for label, r in (("baseline", base), ("candidate", cand)):
        per_target = "; ".join(
            f"{t.target}: {t.passed}/{t.questions} passed, composite "
            f"{'-' if t.mean_composite is None else f'{t.mean_composite:.2f}'}"
            for t in r.targets
        )
        rows.append(
            f'<tr><th scope="row">{label}</th><td><a href="/runs/{q(r.run_id)}"><code>'
            f"{e(r.run_id)}</code></a></td><td>{e(r.created)}</td>"
            f'<td><span class="badge v-{e(r.verdict.split()[0])}">{e(r.verdict)}</span></td>'
            f"<td>{e(per_target)}</td></tr>"
        )
    return (
        '<table class="grid" id="compare-runs"><thead><tr><th></th><th scope="col">run</th>'
        '<th scope="col">started</th><th scope="col">gate</th><th scope="col">targets</th>'
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _comparison(base: RunEntry, cand: RunEntry) -> str:
    from ..comparison.compare import compare_runs
    from ..rundir.history import load_stored_run

    try:
        comparison = compare_runs(
            load_stored_run(base.run_dir, label=base.run_id),
            load_stored_run(cand.run_dir, label=cand.run_id),
            allow_drift=True,  # a page lists drifted questions apart instead of refusing
        )
    except TracegradeError as exc:
        return f'<p class="advisory" role="alert">Not comparable: {e(exc)}</p>'
    return comparison_section(comparison)
