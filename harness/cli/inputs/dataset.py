"""`tracegrade dataset`: the writable dataset store (promote, export, list, show)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .._arguments import add_config_flag, add_repeatable, add_run_argument, subcommand_with_actions

__all__ = ["register", "run"]

DESCRIPTION = """\
The writable dataset store: named datasets of questions in one SQLite file (the config's
`dataset_store:`, default datasets.sqlite beside the config). A target reads one with
`dataset: store:NAME`; a YAML file is `dataset: path.yaml` (or `file:path.yaml`).

  promote RUN --id Q [--to NAME] [--as ID]  copy a question of a run into dataset NAME; when it
                                            has no expected_tools, the agent's actual tool calls
                                            become a draft marked for review
  promote RUN --id Q --into-file [--as ID]  append it to the dataset file its target reads
                                            instead (YAML, JSON or JSONL), keeping the file's
                                            comments and order
  export NAME                               print dataset NAME as YAML (> file.yaml)
  list                                      the datasets and their sizes
  show NAME                                 a dataset's questions, drafts marked
  generate --to NAME --count N [--dimension D ...] [--examples FILE]
                                            ask the judge model to draft N questions; each
                                            draft is validated (an invalid one is rejected with
                                            the reason, never stored) and lands disabled,
                                            marked as a draft
  review NAME [--accept ID ...] [--drop ID ...] [--accept-all]
                                            accept drafts (they then count) or drop them
  inject DATASET --out NEW [--forbid TOOL] [--kind K ...] [--into TOOL] [--text T]
                                            write NEW: DATASET's questions and adversarial
                                            variants of them, an instruction planted in a tool
                                            result (forbidden_tool: call TOOL, checked by the
                                            trajectory's forbid; skip_step: skip a required
                                            step, checked by expected_tools); a run's report
                                            says per kind which variants were resisted

Every question is validated against the dataset schema when written, and the whole dataset
again when a run reads it.
"""


def register(subparsers: Any) -> None:
    parser, actions = subcommand_with_actions(
        subparsers,
        "dataset",
        help="the writable dataset store: promote, export, list, show",
        description=DESCRIPTION,
        dest="action",
    )
    promote = actions.add_parser("promote", help="copy a run's question into a stored dataset")
    add_run_argument(promote)
    promote.add_argument("--id", dest="question", required=True, metavar="Q", help="question id")
    promote.add_argument("--to", default=None, metavar="NAME", help="dataset (default: the run's)")
    promote.add_argument("--as", dest="as_id", default=None, metavar="ID", help="store it as ID")
    promote.add_argument("--target", default=None, help="the target, when several ran it")
    promote.add_argument("--trial", type=int, default=0, help="which trial (with repeats)")
    promote.add_argument(
        "--into-file",
        action="store_true",
        help="append it to the dataset file the target reads (comments and order kept)",
    )
    export = actions.add_parser("export", help="print a stored dataset as YAML")
    export.add_argument("name", metavar="NAME")
    actions.add_parser("list", help="the stored datasets")
    show = actions.add_parser("show", help="a stored dataset's questions")
    show.add_argument("name", metavar="NAME")
    generate = actions.add_parser("generate", help="draft synthetic questions with the judge model")
    generate.add_argument("--to", required=True, metavar="NAME", help="the dataset to add them to")
    generate.add_argument("--count", type=int, default=5, metavar="N", help="how many (default 5)")
    add_repeatable(
        generate,
        "--dimension",
        dest="dimensions",
        metavar="D",
        help="what to vary across the questions, e.g. 'topic: refunds, bookings' (repeatable)",
    )
    generate.add_argument(
        "--examples", type=Path, default=None, metavar="FILE", help="seed examples (a dataset file)"
    )
    review = actions.add_parser("review", help="accept or drop generated drafts")
    review.add_argument("name", metavar="NAME")
    add_repeatable(review, "--accept", metavar="ID")
    add_repeatable(review, "--drop", metavar="ID")
    review.add_argument("--accept-all", action="store_true", help="accept every draft")
    inject = actions.add_parser(
        "inject", help="adversarial variants: instructions planted in tool results"
    )
    inject.add_argument("dataset", type=Path, metavar="DATASET", help="a dataset file")
    inject.add_argument("--out", type=Path, required=True, metavar="NEW", help="the file to write")
    add_repeatable(
        inject,
        "--kind",
        dest="kinds",
        metavar=None,
        choices=("forbidden_tool", "skip_step"),
        help="which injections (repeatable; default: both)",
    )
    inject.add_argument(
        "--forbid",
        default=None,
        metavar="TOOL",
        help="the tool a forbidden_tool variant is told to call",
    )
    inject.add_argument(
        "--into",
        default=None,
        metavar="TOOL",
        help="the tool whose result carries the text (default: each question's first required tool)",
    )
    inject.add_argument(
        "--text", default=None, metavar="T", help="the planted text ({tool}: the tool it names)"
    )
    inject.add_argument(
        "--only-variants", action="store_true", help="leave the original questions out of NEW"
    )
    for sub in actions.choices.values():
        add_config_flag(sub)
    parser.set_defaults(handler=run)


def _store_path(config_path: Path | None) -> Path:
    from ...inputs.config import load_config

    return load_config(config_path).dataset_store


def _generate(args: argparse.Namespace) -> int:
    import asyncio

    from ...curation.generate import agenerate_drafts
    from ...errors import InputError
    from ...execution.question.grading import build_services
    from ...inputs.config import load_config
    from ...inputs.dataset import load_dataset

    if args.count < 1:
        raise InputError("--count must be at least 1", key="--count")
    config = load_config(args.config)
    examples = []
    if args.examples is not None:
        examples = [q.row() for q in load_dataset(args.examples).questions][:5]
    services = build_services(
        judge=config.judge,
        judge_panels=config.judge_panels,
        base_dir=config.base_dir,
        runs_dir=config.runs_dir,
        rubrics=None,
        use_cache=False,  # a second ask should draft new questions, not replay the first
        redaction=config.redaction,
    )
    done = asyncio.run(
        agenerate_drafts(
            client=services.client(),
            store_path=config.dataset_store,
            name=args.to,
            count=args.count,
            dimensions=args.dimensions,
            examples=examples,
            model=(config.judge or {}).get("model"),
        )
    )
    for qid, why in done.rejected:
        print(f"rejected {qid}: {why}")
    print(
        f"tracegrade: {len(done.stored)} draft(s) stored in dataset {args.to!r} (disabled until "
        f"reviewed: tracegrade dataset review {args.to}); {len(done.rejected)} rejected"
    )
    return 0


def _inject(args: argparse.Namespace) -> int:
    import yaml

    from ...curation.inject import INJECTION_KINDS, injected_variants
    from ...errors import DatasetError, InputError
    from ...inputs.dataset import load_dataset

    source = load_dataset(args.dataset)  # valid before anything is derived from it
    kinds = tuple(dict.fromkeys(args.kinds)) or INJECTION_KINDS
    if "forbidden_tool" in args.kinds and args.forbid is None:
        raise InputError("inject --kind forbidden_tool needs --forbid TOOL", key="--forbid")
    if args.forbid is None:
        kinds = tuple(k for k in kinds if k != "forbidden_tool")
    rows = [dict(q.row()) for q in source.questions]
    variants, skipped = injected_variants(
        rows, kinds=kinds, forbid=args.forbid, into=args.into, text=args.text
    )
    for s in skipped:
        print(f"  skipped {s.question_id} ({s.kind}): {s.reason}")
    if not variants:
        from ...errors import NothingToRunError

        raise NothingToRunError(f"no question of {args.dataset} could carry an injection")
    questions = variants if args.only_variants else [*rows, *variants]
    args.out.write_text(
        yaml.safe_dump({"questions": questions}, sort_keys=False, allow_unicode=True)
    )
    try:
        load_dataset(args.out)
    except DatasetError as exc:  # a bug here, never a file a run would then refuse
        raise InputError(f"the injected dataset is invalid: {exc}", file=str(args.out)) from exc
    print(f"tracegrade: wrote {len(variants)} injected variant(s) to {args.out}")
    return 0


def _review(args: argparse.Namespace, store_path: Path) -> int:
    from ...curation.generate import DRAFT, review_drafts
    from ...inputs.datastore import DatasetStore

    accept = list(args.accept)
    if args.accept_all:
        with DatasetStore(store_path) as store:
            accept = [q.id for q in store.questions(args.name) if DRAFT in q.needs_review]
    waiting = review_drafts(store_path, args.name, accept=accept, drop=args.drop)
    print(f"tracegrade: accepted {len(accept)}, dropped {len(args.drop)}; {len(waiting)} waiting")
    for qid in waiting:
        print(f"  draft {qid}")
    return 0


def _say_drafted(row: dict[str, Any], review: list[str]) -> None:
    if review:
        tools = ", ".join(e["tool"] for e in row["expected_tools"])
        print(
            f"  draft expected_tools from the agent's actual calls ({tools}): marked for "
            "review (metadata.needs_review); check them before relying on them"
        )


def _promote_into_file(args: argparse.Namespace, run_dir: Path) -> int:
    from ...curation.promote_file import promote_into_file

    path, row, review, line = promote_into_file(
        run_dir, question_id=args.question, as_id=args.as_id, target=args.target, trial=args.trial
    )
    where = f"{path}:{line}" if line else str(path)
    print(f"tracegrade: promoted {args.question} into {where} as {row['id']!r}")
    _say_drafted(row, review)
    return 0


def run(args: argparse.Namespace) -> int:
    from ...inputs.datastore import DatasetStore

    if args.action == "generate":
        return _generate(args)
    if args.action == "inject":
        return _inject(args)
    store_path = _store_path(args.config)
    if args.action == "review":
        return _review(args, store_path)
    if args.action == "promote":
        from ...curation.promote import promote_question
        from ...rundir.directory import RunDirectory

        run_dir = RunDirectory.resolve(args.run_dir, config_path=args.config).path
        if args.into_file:
            if args.to:
                from ...errors import InputError

                raise InputError("--into-file and --to name two places: give one", key="--to")
            return _promote_into_file(args, run_dir)
        name, row, review = promote_question(
            run_dir,
            store_path,
            question_id=args.question,
            to=args.to,
            as_id=args.as_id,
            target=args.target,
            trial=args.trial,
        )
        print(
            f"tracegrade: promoted {args.question} into dataset {name!r} of the store "
            f"{store_path} as {row['id']!r} (a target reads it with dataset: store:{name})"
        )
        _say_drafted(row, review)
        return 0
    if not store_path.is_file():
        from ...errors import InputError

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
                opening = q.row.get("input")
                text = opening if isinstance(opening, str) else "(conversation)"
                print(f"{q.id}\t{text[:70]}{flags}")
                if q.origin:
                    print(f"\tfrom {q.origin}")
    return 0
