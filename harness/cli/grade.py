"""`tracegrade grade RUN`: re-score a stored run without re-running the agent."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..reports.flags import add_report_flags, write_reports
from . import EPILOG, add_id_flag

__all__ = ["register", "run"]

DESCRIPTION = """\
Re-score a run's stored answers and tool-call records (read back from the run's trace file)
without running the agent. By default with the graders stored in the run (the grader ids and
options it used, and its copy of the grading module), so an edit never silently changes what an
old run scores; with --current, with the graders the config names now, matched by question id.
With --goal TEXT, with the goal judge alone against that text (it cannot be combined with
--current: the config's graders bring their own criteria). Judge answers come from the judge cache. Each re-grade is stored under a new grading id.
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "grade",
        help="re-score a stored run (no agent runs)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_dir", metavar="RUN", help="run directory (or run id under runs_dir)")
    parser.add_argument("--config", type=Path, default=None, help="config file (tracegrade.yaml)")
    parser.add_argument(
        "--current", action="store_true", help="grade with the config's graders now"
    )
    add_id_flag(parser)
    parser.add_argument(
        "--goal",
        default=None,
        metavar="TEXT",
        help="grade every question with the goal judge against TEXT alone (a question with its "
        "own `goal` keeps it); not with --current",
    )
    add_report_flags(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..execution.regrade import regrade_run
    from ..inputs.config import load_config
    from . import handle_stop_signals

    config = load_config(args.config)
    try:
        with handle_stop_signals():  # a CI cancel (SIGTERM) ends it as Ctrl-C does
            outcome = regrade_run(
                config,
                args.run_dir,
                current=args.current,
                use_cache=not args.no_cache,
                ids=tuple(args.ids),
                goal=args.goal,
            )
    except KeyboardInterrupt:
        # the unfinished grading never becomes the run's latest: say how to grade it whole
        print(
            f"\ntracegrade: interrupted; the partial grading is not the run's latest: grade it "
            f"again with `tracegrade grade {args.run_dir}`",
            file=sys.stderr,
        )
        raise
    write_reports(args, outcome, config=config)
    return outcome.exit_code
