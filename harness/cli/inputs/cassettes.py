"""`tracegrade cassettes diff|prune`: the recorded model calls no question uses any more.

A target's cassettes are one file per question of its dataset and trial (`repeats`); a file
for a question the dataset dropped, or for a trial beyond the repeats, is unused. `diff` lists
the unused files and the questions with no cassette yet; `prune` removes the unused ones. The
whole dataset counts, whatever a run selected, so a split run never prunes another split."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .._arguments import add_config_flag, add_repeatable, subcommand

__all__ = ["CassetteDiff", "cassette_diff", "register", "run"]


def register(subparsers: Any) -> None:
    parser = subcommand(
        subparsers,
        "cassettes",
        help="list (diff) or remove (prune) recorded model calls no question uses",
        description=__doc__,
        epilog=None,
    )
    parser.add_argument("action", choices=("diff", "prune"), help="diff: list; prune: remove")
    add_config_flag(parser)
    add_repeatable(parser, "--target", metavar="NAME", help="only this target")
    parser.add_argument(
        "--cassettes", type=Path, default=None, metavar="DIR", help="over the config's dir"
    )
    parser.set_defaults(handler=run)


class CassetteDiff:
    """One target's cassettes against its dataset."""

    def __init__(self, target: str, folder: Path, unused: list[Path], missing: list[str]):
        self.target = target
        self.folder = folder
        self.unused = unused
        """Cassette files no question and trial of the dataset uses."""
        self.missing = missing
        """`question#trial` with no cassette yet."""


def cassette_diff(config: Any, targets: list[str] | tuple[str, ...] = ()) -> list[CassetteDiff]:
    """Each selected target with cassettes, diffed against its whole dataset."""
    from ...capture.cassette import cassette_path
    from ...inputs.dataset import load_dataset

    out = []
    for target in config.select_targets(targets):
        if target.cassettes is None:
            continue
        dataset = load_dataset(target.dataset)
        wanted: dict[Path, str] = {}
        for question in dataset.questions:
            for trial in range(target.repeats):
                path = cassette_path(target.cassettes.dir, target.name, str(question.id), trial)
                wanted[path] = f"{question.id}#{trial}"
        folder = cassette_path(target.cassettes.dir, target.name, "x", 0).parent
        present = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
        unused = [p for p in present if p not in wanted]
        missing = [label for path, label in wanted.items() if not path.is_file()]
        out.append(CassetteDiff(target.name, folder, unused, missing))
    return out


def run(args: argparse.Namespace) -> int:
    from ...errors import ConfigError
    from ...inputs.config import load_config, with_cassettes

    config = with_cassettes(load_config(args.config), directory=args.cassettes)
    diffs = cassette_diff(config, args.target)
    if not diffs:
        raise ConfigError(
            "no target records cassettes: give --cassettes DIR or a target's `cassettes:`",
            key="cassettes",
        )
    for diff in diffs:
        verb = "removed" if args.action == "prune" else "unused"
        print(f"{diff.target}: {diff.folder}")
        for path in diff.unused:
            if args.action == "prune":
                path.unlink()
            print(f"  {verb}: {path.name}")
        for label in diff.missing:
            print(f"  not recorded: {label}")
        if not diff.unused and not diff.missing:
            print("  every question has its cassette, and every cassette its question")
    if args.action == "diff" and any(d.unused for d in diffs):
        print("remove the unused cassettes with `tracegrade cassettes prune`", file=sys.stderr)
    return 0
