"""The report flags shared by every command that prints a run's results (`run`, `grade`), and
writing the reports they ask for."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_report_flags", "write_reports"]


def add_report_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the JSON results report")
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML")
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="write a Markdown summary")
    parser.add_argument("--quiet", action="store_true", help="no progress line")
    parser.add_argument(
        "--no-cache", action="store_true", help="do not read or write the judge cache"
    )


def write_reports(args: argparse.Namespace, outcome: Any) -> None:
    """Print the console report and write the report files the flags ask for."""
    from harness.reports.console import render_console
    from harness.reports.json_report import write_json_report
    from harness.reports.junit import write_junit
    from harness.reports.markdown import write_markdown

    sys.stdout.write(render_console(outcome))
    if args.json:
        write_json_report(outcome, args.json)
    if args.junit:
        write_junit(outcome, args.junit)
    if args.markdown:
        write_markdown(outcome, args.markdown)
