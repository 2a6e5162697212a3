"""`tracegrade merge`: make one run of a run's CI shards (`run --shard I/N`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ...ci.publish import report_outcome
from .._arguments import add_config_flag, add_outcome_flags, subcommand

__all__ = ["register", "run"]

DESCRIPTION = """\
Merge the run directories of one run's shards (each made by `tracegrade run --shard I/N` on its
own CI machine) into one run directory: one results store, one trace file per target, one gate
over all questions, and every report, exactly as one unsharded run would have made them.

A question's shard is 1 + (the first 8 bytes of sha256(target NUL question id), big-endian)
mod N: the same on every machine, each question in one shard.

Monitor runs (`tracegrade receive`: several receivers behind a load balancer that routes by
trace id) merge the same way into one monitor run: every run's rows, each question's trials
numbered on run after run, the question runs, lost spans and hourly rollups added up.

Refused (exit 4, naming what differs) when the shards ran different configs, datasets, graders
or tracegrade versions, were cut into different N, or one shard is given twice. A missing shard
is reported, and the merged run is incomplete (exit 3): its questions have no result.
"""


def register(subparsers: Any) -> None:
    parser = subcommand(
        subparsers,
        "merge",
        help="merge CI shards (run --shard I/N) into one run; report and gate it",
        description=DESCRIPTION,
    )
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="shard runs")
    parser.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="the merged run directory (new)"
    )
    add_config_flag(parser, help="config file (HTML trace links, redaction)")
    add_outcome_flags(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ...execution.monitor_merge import merge_any
    from ...execution.run.shards import merged_outcome

    result = merge_any(args.run_dirs, args.out)
    merged = ", ".join(f"{i}/{result.shards}" for i in result.merged)
    print(f"merged shard(s) {merged} into {result.run_dir}", file=sys.stderr)
    for note in result.notes:
        print(f"tracegrade: note: {note}", file=sys.stderr)
    outcome = merged_outcome(result.run_dir, result.notes)
    config = None
    if args.config is not None:
        from ...inputs.config import load_config

        config = load_config(args.config)
    report_outcome(args, outcome, config=config)
    return outcome.exit_code
