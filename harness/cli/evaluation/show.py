"""`tracegrade show RUN`: print a stored grading with the usual report flags; nothing re-graded,
no provider called."""

from __future__ import annotations

import argparse
from typing import Any

from ...ci.publish import report_outcome
from .._arguments import add_config_flag, add_outcome_flags, add_run_argument, subcommand

__all__ = ["register", "run"]

DESCRIPTION = """\
Print a stored grading of a run (the latest by default) as `run` printed it: the console
report, and the report files the flags ask for. Nothing runs, nothing is re-graded, no judge is
called; the gate is decided again from the stored scores and the run's own gate settings, and
the exit code is that gate's. A run from an older release is read without changing its files.
"""


def register(subparsers: Any) -> None:
    parser = subcommand(
        subparsers,
        "show",
        help="print a stored run's report (no re-grade)",
        description=DESCRIPTION,
    )
    add_run_argument(parser)
    add_config_flag(parser)
    parser.add_argument(
        "--grading", type=int, default=None, metavar="N", help="which grading (default latest)"
    )
    add_outcome_flags(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ...inputs.config import load_config
    from ...rundir.directory import RunDirectory
    from ...rundir.history import load_outcome

    run = RunDirectory.resolve(args.run_dir, config_path=args.config)
    outcome = load_outcome(run, grading=args.grading)
    # With a config, the HTML page gets its trace links and redaction policy.
    config = load_config(args.config) if args.config is not None else None
    report_outcome(args, outcome, config=config)
    return outcome.exit_code
