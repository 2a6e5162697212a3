"""`tracegrade run`: run targets over their datasets, grade, report, exit per the gate."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.cli import EPILOG

__all__ = ["add_report_flags", "register", "run", "write_reports"]

DESCRIPTION = """\
Run each selected target's agent over its dataset (bounded concurrency, a per-question timeout),
record every tool call as an OpenTelemetry span, grade each answer, commit each finished
question to runs/<run id>/results.sqlite, print the report and exit per the gate.
An interrupted run keeps every finished question: `--resume RUN_ID` asks only what is missing.
"""


def add_report_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the JSON results report")
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML")
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="write a Markdown summary")
    parser.add_argument("--quiet", action="store_true", help="no progress line")
    parser.add_argument(
        "--no-cache", action="store_true", help="do not read or write the judge cache"
    )


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run targets, grade, report; exit 0/2/3/4/5",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", type=Path, default=None, help="config file (tracegrade.yaml)")
    parser.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="NAME",
        help="target to run (repeatable; default all)",
    )
    parser.add_argument("--split", default=None, help="only questions of this split")
    parser.add_argument(
        "--bundle", action="append", default=[], metavar="B", help="only this bundle (repeatable)"
    )
    parser.add_argument(
        "--tag",
        action="append",
        default=[],
        metavar="T",
        help="only questions with this tag (repeatable)",
    )
    parser.add_argument(
        "--limit", type=int, default=None, metavar="N", help="at most N questions per target"
    )
    parser.add_argument(
        "--resume", default=None, metavar="RUN_ID", help="finish an interrupted run"
    )
    add_report_flags(parser)
    parser.set_defaults(handler=run)


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


def run(args: argparse.Namespace) -> int:
    from harness.inputs.config import load_config
    from harness.reports.progress import Progress
    from harness.runs.lifecycle import Selection, resume_run, start_run

    config = load_config(args.config)
    progress = Progress(quiet=args.quiet)

    started: list[Path] = []

    def on_start(run_dir: Path, total: int) -> None:
        started.append(run_dir)
        print(f"run dir: {run_dir}", file=sys.stderr)
        progress.start(run_dir, total)

    try:
        if args.resume:
            outcome = resume_run(
                config,
                args.resume,
                use_cache=not args.no_cache,
                on_start=on_start,
                on_done=progress.advance,
            )
        else:
            selection = Selection(
                targets=tuple(args.target),
                split=args.split,
                bundles=tuple(args.bundle),
                tags=tuple(args.tag),
                limit=args.limit,
            )
            outcome = start_run(
                config,
                selection,
                use_cache=not args.no_cache,
                on_start=on_start,
                on_done=progress.advance,
            )
    except KeyboardInterrupt:
        if started:  # every finished question is committed: say how to finish the rest
            print(
                f"\ntracegrade: interrupted; finish with `tracegrade run --resume {started[0].name}`",
                file=sys.stderr,
            )
        raise
    finally:
        progress.close()
    write_reports(args, outcome)
    return outcome.exit_code
