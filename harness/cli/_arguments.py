"""What every subcommand's parser is built from: the subcommand itself (`subcommand`) and the
arguments several commands take alike (`--config`, RUN, `--host`/`--port`, `--goal`, `--gold`,
`--json FILE`). One declaration each, so a flag reads, defaults and helps the same wherever
it is taken; tests/test_cli_help.py holds every command's `--help` to its snapshot."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = [
    "EPILOG",
    "LOOPBACK",
    "add_config_flag",
    "add_goal_flag",
    "add_gold_flag",
    "add_json_file_flag",
    "add_listen_flags",
    "add_outcome_flags",
    "add_repeatable",
    "add_run_argument",
    "subcommand",
    "subcommand_with_actions",
]

EPILOG = """\
exit codes:
  0  ran, every gate passed
  1  internal error (a bug in tracegrade: please report it with the traceback)
  2  a gate failed: a must-pass grader, a score threshold, a critical rubric check
  3  evaluation incomplete: errored/degraded questions beyond the error budget
     (judge outage, agent crash, capture failure)
  4  invalid input: config, dataset, rubric or CLI usage
  5  nothing to run: the selection matched no question
"""

CONFIG_HELP = "config file (tracegrade.yaml)"
RUN_HELP = "run directory, or run id under runs_dir"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
"""The hosts only this machine reaches: `serve` and `receive` warn when listening elsewhere."""


def subcommand(
    subparsers: Any,
    name: str,
    *,
    help: str,
    description: str | None,
    epilog: str | None = EPILOG,
    formatter_class: type[argparse.HelpFormatter] = argparse.RawDescriptionHelpFormatter,
) -> argparse.ArgumentParser:
    """The parser of subcommand (or action) `name`: its one-line `help` in the list, its
    `description` kept as written, and the exit codes after it."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=help,
        description=description,
        epilog=epilog,
        formatter_class=formatter_class,
    )
    return parser


def subcommand_with_actions(
    subparsers: Any, name: str, *, help: str, description: str, dest: str
) -> tuple[argparse.ArgumentParser, Any]:
    """A subcommand that takes an ACTION (`dataset promote`, `judges validate`): its parser and
    the subparsers its actions are added to (one is required)."""
    parser = subcommand(subparsers, name, help=help, description=description)
    return parser, parser.add_subparsers(dest=dest, metavar="ACTION", required=True)


def add_repeatable(
    parser: Any, flag: str, *, metavar: str | None, help: str | None = None, **options: Any
) -> None:
    """A flag given once per value (`--tag a --tag b`): a list, empty when not given."""
    parser.add_argument(flag, action="append", default=[], metavar=metavar, help=help, **options)


def add_config_flag(parser: Any, *, help: str = CONFIG_HELP) -> None:
    parser.add_argument("--config", type=Path, default=None, help=help)


def add_run_argument(parser: Any, *, help: str = RUN_HELP, dest: str = "run_dir") -> None:
    """The RUN positional: a run directory or a run id."""
    parser.add_argument(dest, metavar="RUN", help=help)


def add_listen_flags(parser: Any, *, port: int, host_help: str) -> None:
    """`--host` (loopback by default) and `--port` of a command that serves HTTP."""
    parser.add_argument("--host", default=LOOPBACK[0], help=host_help)
    parser.add_argument(
        "--port", type=int, default=port, help=f"port (default {port}; 0 picks a free one)"
    )


def add_goal_flag(parser: Any, *, help: str) -> None:
    """`--goal TEXT`: what the goal judge grades against."""
    parser.add_argument("--goal", default=None, metavar="TEXT", help=help)


def add_gold_flag(parser: Any) -> None:
    """`--gold FILE`: people's labels a judge or rubric is measured against."""
    parser.add_argument("--gold", type=Path, required=True, metavar="FILE", help="gold labels")


def add_json_file_flag(parser: Any, *, help: str = "write JSON") -> None:
    parser.add_argument("--json", type=Path, default=None, metavar="FILE", help=help)


def add_outcome_flags(parser: argparse.ArgumentParser) -> None:
    """The report files and CI publishing of a command whose outcome `report_outcome` prints
    (`run`, `grade`, `show`, `merge`, `grade-traces`, `receive`)."""
    from ..ci.publish import add_ci_flags
    from ..reports.flags import add_report_flags

    add_report_flags(parser)
    add_ci_flags(parser)
