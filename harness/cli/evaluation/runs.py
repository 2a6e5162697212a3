"""`tracegrade runs`: past runs, newest first, read from their stores (nothing re-graded)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .._arguments import add_config_flag, subcommand

__all__ = ["register", "run"]

DESCRIPTION = """\
List the runs under the config's runs_dir, newest first: id, start time, targets, questions
(trials counted), the gate's verdict and exit code for the latest grading, mean composite,
git commit and dataset sha256 (short). Reads each run's store without changing it.
"""


def register(subparsers: Any) -> None:
    parser = subcommand(
        subparsers,
        "runs",
        help="list past runs, newest first",
        description=DESCRIPTION,
    )
    add_config_flag(parser)
    parser.add_argument(
        "--runs-dir", type=Path, default=None, metavar="DIR", help="runs directory (over config)"
    )
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="newest N runs only")
    parser.add_argument("--json", action="store_true", help="print JSON lines, one per run")
    parser.set_defaults(handler=run)


_VERDICT = {0: "passed", 2: "failed", 3: "incomplete", None: "ungraded"}


def _row(r: Any) -> list[str]:
    from ...reports.common import fmt

    return [
        r.run_id,
        r.created.replace("+00:00", "Z"),
        ",".join(r.targets),
        str(r.questions),
        f"{_VERDICT.get(r.exit_code, 'exit')} ({r.exit_code if r.exit_code is not None else '-'})"
        + "".join(f"; grading {g} interrupted" for g in r.interrupted),
        fmt(r.mean_composite),
        (r.git_commit or "-")[:12],
        ",".join(sha[:12] for sha in r.dataset_sha256),
    ]


def run(args: argparse.Namespace) -> int:
    from ...rundir.history import list_runs, runs_dir_of

    runs_dir = runs_dir_of(args.config, args.runs_dir)
    runs, problems = list_runs(runs_dir, limit=args.limit)
    for problem in problems:
        print(f"tracegrade: skipped {problem}", file=sys.stderr)
    if args.json:
        for r in runs:
            record = {
                "run_id": r.run_id,
                "run_dir": str(r.run_dir),
                "created": r.created,
                "targets": r.targets,
                "questions": r.questions,
                "exit_code": r.exit_code,
                "mean_composite": r.mean_composite,
                "git_commit": r.git_commit,
                "dataset_sha256": r.dataset_sha256,
                "grading_id": r.grading_id,
                "interrupted_gradings": r.interrupted,
            }
            print(json.dumps(record))
        return 0
    if not runs:
        print(f"no runs under {runs_dir}")
        return 0
    rows = [["run", "started", "targets", "questions", "gate", "composite", "commit", "dataset"]]
    rows += [_row(r) for r in runs]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return 0
