"""`tracegrade serve`: the local review app (runs, comparisons, the Review queue, datasets)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._arguments import LOOPBACK, add_config_flag, add_listen_flags, subcommand

__all__ = ["register", "run"]

DESCRIPTION = """\
Serve a local web app over the config's runs directory and dataset store, on 127.0.0.1 by
default: the runs (newest first, filters, trends, live progress), each run's report, a
comparison of any two runs, the Review queue (rubric checks left in Review and unanswered
checklist items, decided with the keyboard: a decision is what `tracegrade label` stores),
promotion of a question into a dataset, and the datasets themselves (add, edit, reorder,
disable, delete, export).

It prints its URL with a token: open that URL once; every change the app makes needs the
token (another site's page cannot make one). Ctrl-C stops it.
"""


def register(subparsers: Any) -> None:
    parser = subcommand(
        subparsers,
        "serve",
        help="a local web app for runs, reviews and datasets",
        description=DESCRIPTION,
    )
    add_config_flag(parser)
    add_listen_flags(parser, port=8765, host_help="address to listen on (default 127.0.0.1)")
    parser.add_argument(
        "--by", default=None, metavar="NAME", help="who decisions are recorded as (default $USER)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..app.server import AppState, serve
    from ..inputs.config import load_config

    config = load_config(args.config)
    state = AppState(
        runs_dir=config.runs_dir,
        store_path=config.dataset_store,
        config=config,
        author=args.by or "",
    )
    if args.host not in LOOPBACK:
        print(
            f"tracegrade: listening on {args.host}: anyone who can reach it can read the runs",
            file=sys.stderr,
        )

    def announce(url: str) -> None:
        print(f"tracegrade serve: {url}", flush=True)

    serve(state, host=args.host, port=args.port, announce=announce)
    return 0
