"""The report flags shared by every command that prints a run's results (`run`, `grade`,
`show`), and writing the reports they ask for."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_report_flags", "report_options", "write_reports"]


def add_report_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the JSON results report")
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML")
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="write a Markdown summary")
    parser.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="write one self-contained HTML page (summary, charts, every question with its "
        "tool calls); opens from disk, makes no network request",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress line")
    parser.add_argument(
        "--no-cache", action="store_true", help="do not read or write the judge cache"
    )


def report_options(config: Any) -> dict[str, Any]:
    """The HTML report's keywords from the config: its `report:` block (`trace_url`,
    `project`) and its redaction policy."""
    raw = (getattr(config, "data", None) or {}).get("report") or {}
    options = {"trace_url": raw.get("trace_url"), "project": raw.get("project")}
    if getattr(config, "redaction", None) is not None:
        options["redaction"] = config.redaction
    return options


def write_reports(args: argparse.Namespace, outcome: Any, *, config: Any = None) -> None:
    """Print the console report and write the report files the flags ask for (`config`, when
    given, supplies the HTML report's trace links)."""
    from .console import render_console
    from .json_report import write_json_report
    from .junit import write_junit
    from .markdown import write_markdown

    sys.stdout.write(render_console(outcome, verbose=bool(getattr(args, "verbose", False))))
    if args.json:
        write_json_report(outcome, args.json)
    if args.junit:
        write_junit(outcome, args.junit)
    if args.markdown:
        write_markdown(outcome, args.markdown)
    if getattr(args, "html", None):
        from .html import write_html

        write_html(outcome, args.html, **report_options(config))
