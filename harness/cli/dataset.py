"""`tracegrade dataset`: the writable dataset store (promote, export, list, show)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.cli import EPILOG

__all__ = ["register", "run"]

DESCRIPTION = """\
The writable dataset store: named datasets of questions in one SQLite file (the config's
`dataset_store:`, default datasets.sqlite beside the config). A target reads one with
`dataset: store:NAME`; a YAML file is `dataset: path.yaml` (or `file:path.yaml`).

  promote RUN --id Q [--to NAME] [--as ID]  copy a question of a run into dataset NAME; when it
                                            has no expected_tools, the agent's actual tool calls
                                            become a draft marked for review
  export NAME                               print dataset NAME as YAML (> file.yaml)
  list                                      the datasets and their sizes
  show NAME                                 a dataset's questions, drafts marked

Every question is validated against the dataset schema when written, and the whole dataset
again when a run reads it.
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dataset",
        help="the writable dataset store: promote, export, list, show",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    promote = actions.add_parser("promote", help="copy a run's question into a stored dataset")
    promote.add_argument("run_dir", metavar="RUN", help="run directory, or run id under runs_dir")
    promote.add_argument("--id", dest="question", required=True, metavar="Q", help="question id")
    promote.add_argument("--to", default=None, metavar="NAME", help="dataset (default: the run's)")
    promote.add_argument("--as", dest="as_id", default=None, metavar="ID", help="store it as ID")
    promote.add_argument("--target", default=None, help="the target, when several ran it")
    promote.add_argument("--trial", type=int, default=0, help="which trial (with repeats)")
    export = actions.add_parser("export", help="print a stored dataset as YAML")
    export.add_argument("name", metavar="NAME")
    actions.add_parser("list", help="the stored datasets")
    show = actions.add_parser("show", help="a stored dataset's questions")
    show.add_argument("name", metavar="NAME")
    for sub in actions.choices.values():
        sub.add_argument("--config", type=Path, default=None, help="config file (tracegrade.yaml)")
    parser.set_defaults(handler=run)


def _store_path(config_path: Path | None) -> Path:
    from harness.inputs.config import load_config

    return load_config(config_path).dataset_store


def run(args: argparse.Namespace) -> int:
    from harness.inputs.datastore import DatasetStore

    store_path = _store_path(args.config)
    if args.action == "promote":
        from harness.runs.history import resolve_run
        from harness.runs.promote import promote_question

        run_dir = resolve_run(args.run_dir, config_path=args.config)
        name, row, review = promote_question(
            run_dir,
            store_path,
            question_id=args.question,
            to=args.to,
            as_id=args.as_id,
            target=args.target,
            trial=args.trial,
        )
        print(f"tracegrade: promoted {args.question} into dataset {name!r} as {row['id']!r}")
        if review:
            tools = ", ".join(e["tool"] for e in row["expected_tools"])
            print(
                f"  draft expected_tools from the agent's actual calls ({tools}): marked for "
                "review (metadata.needs_review); check them before relying on them"
            )
        return 0
    if not store_path.is_file():
        from harness.errors import InputError

        raise InputError(
            f"no dataset store at {store_path}",
            hint="tracegrade dataset promote RUN --id Q --to NAME creates it",
        )
    with DatasetStore(store_path) as store:
        if args.action == "export":
            sys.stdout.write(store.export_yaml(args.name))
        elif args.action == "list":
            for name, count in store.names():
                print(f"{name}\t{count} question(s)")
        else:
            for q in store.questions(args.name):
                flags = f"  [review: {', '.join(q.needs_review)}]" if q.needs_review else ""
                text = q.row["input"] if isinstance(q.row["input"], str) else "(conversation)"
                print(f"{q.id}\t{text[:70]}{flags}")
                if q.origin:
                    print(f"\tfrom {q.origin}")
    return 0
