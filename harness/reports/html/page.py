"""The HTML report as one self-contained document: the summary (`summary`), the stylesheet and
script inlined (`assets`), then the blocks of rows (`rows`, `blocks`); written to a file for
`--html`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ...redaction import DEFAULT_POLICY, RedactionPolicy
from ..escaping import html_text as _e
from .assets import CSS, SCRIPT
from .blocks import ROWS_END, in_blocks, rows_element
from .rows import page_header, row_blocks
from .summary import page_title, report_body

__all__ = ["page_parts", "render_html", "render_page", "write_html"]

_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; form-action 'none'; base-uri 'none'"
)


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
        rows = (rows_element(b) for b in in_blocks(list(data.get("questions") or [])) if b)
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
    rows = row_blocks(
        outcome, trace_url=trace_url, project=project, redaction=redaction, streamed=False
    )
    return "".join(page_parts(outcome, page_header(outcome), rows))


def write_html(outcome: Any, path: Path | str, **options: Any) -> Path:
    """Write the page (`options` as for `render_html`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(outcome, **options), encoding="utf-8")
    return path
