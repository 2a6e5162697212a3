"""`tracegrade graders`: the grader catalog (seed 000's table), generated from the declarations
of every installed grader, built-in or plugin."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from .._arguments import subcommand

if TYPE_CHECKING:  # the registry loads every grader: imported on use, not for `--help`
    from ...graders.registry import CatalogRow

__all__ = ["format_table", "markdown_table", "register", "run"]

HEADERS = ("Grader id", "Label (scale)", "Kind", "Observes actions", "Sees tool calls", "Needs")


def _yes_no(value: bool | None) -> str:
    return "n/a" if value is None else ("Yes" if value else "No")


def _cells(row: CatalogRow) -> tuple[str, ...]:
    return (
        row.id,
        row.selection_label,
        row.kind,
        _yes_no(row.observes_actions),
        _yes_no(row.sees_tool_calls),
        row.needs or "-",
    )


def markdown_table(rows: Sequence[CatalogRow]) -> str:
    """The catalog as the Markdown table docs/graders.md carries (`tracegrade graders
    --markdown` prints it; a test keeps the docs equal to it)."""
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    for row in rows:
        cells = list(_cells(row))
        cells[0] = f"`{cells[0]}`"
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def format_table(rows: Sequence[CatalogRow]) -> str:
    """The catalog as an aligned plain-text table, one grader per line."""
    cells = [HEADERS] + [_cells(row) for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(HEADERS))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in cells
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def run(args: argparse.Namespace, *, out: TextIO | None = None) -> int:
    from ...graders.registry import load_registry

    out = out if out is not None else sys.stdout
    rows = load_registry().catalog()
    if args.json:
        json.dump([row.as_dict() for row in rows], out, indent=2)
        out.write("\n")
    elif args.markdown:
        out.write(markdown_table(rows) + "\n")
    else:
        out.write(format_table(rows) + "\n")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subcommand(
        subparsers,
        "graders",
        help="list every installed grader (built-in and plugins) with what it sees",
        description=(
            "The grader catalog, generated from each grader's declarations: kind, scale, "
            "whether its verdict rests on what the agent did (observes actions), whether a "
            "judge is shown the tool calls, and what it needs from the question."
        ),
        epilog=None,
        formatter_class=argparse.HelpFormatter,  # the description wrapped to the terminal
    )
    parser.add_argument("--json", action="store_true", help="print the catalog as JSON")
    parser.add_argument(
        "--markdown", action="store_true", help="print the catalog as a Markdown table"
    )
    parser.set_defaults(handler=run)
