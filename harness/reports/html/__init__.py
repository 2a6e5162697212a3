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
messages, answer) and the run's trace file (the tool calls); see `data`.
"""

from .blocks import ROWS_END, json_for_script, rows_element, rows_of
from .page import page_parts, render_html, render_page, write_html
from .rows import build_page_data, page_header, page_rows, row_blocks
from .summary import page_title, report_body

__all__ = [
    "ROWS_END",
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
