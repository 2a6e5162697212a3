"""The HTML report's rows as the page carries them: JSON elements after the script, in blocks
(the first one page of the list, so the first screen is drawn from it while the rest still
comes), each safe inside a `<script>` element."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar

import orjson

__all__ = [
    "FIRST_ROWS",
    "ROWS_END",
    "ROWS_PER_BLOCK",
    "in_blocks",
    "json_for_script",
    "rows_element",
    "rows_of",
]

_T = TypeVar("_T")

FIRST_ROWS = 100
"""Questions in the first block of rows: one page of the list (the script's PAGE), so the
first screen is drawn from it while the rest still comes."""
ROWS_PER_BLOCK = 500
"""Questions per later block of rows."""


def rows_element(block: Sequence[Mapping[str, Any]]) -> str:
    """One block of rows as the page carries it: a JSON element the script takes in when the
    browser has read it (none is executed: the Content-Security-Policy holds)."""
    return rows_of([json_for_script(q) for q in block])


def rows_of(texts: Sequence[str]) -> str:
    """`rows_element` of rows each already encoded (`json_for_script`): the same text."""
    # the comment after it: the script takes a block in once a node follows it (read whole)
    return f'<script type="application/json" class="tg-rows">[{",".join(texts)}]</script><!---->'


ROWS_END = '<script type="application/json" id="tg-end">{}</script>'
"""After the last block of rows: the script knows the block before it is whole."""


def json_for_script(data: Any) -> str:
    """JSON safe inside a <script> element: no `</script>`, no `<!--`.

    orjson writes it, five times as fast as the standard library (the profile of a
    5,000-question page: encoding its rows was a sixth of the build), and the same text, but
    for two things, each still the same page to the script that reads it: a float below 1e-4
    in another form of the same number (`0.00001` for `1e-05`), and a NaN or an infinity as
    `null` (the standard library wrote `NaN`, which `JSON.parse` refuses: the block of rows
    holding one was never drawn). Anything orjson would write otherwise than the standard
    library (a subclass of a JSON type, a dataclass, a date, a type it has no form for, a key
    that is not a string, an integer past 64 bits, a lone surrogate) goes to the standard
    library instead, which writes it with `str` as before; but an Enum member that is neither
    a str nor an int is written as its value where `str` gave its name (rows read back from a
    run's store and trace file hold JSON values only: none)."""
    try:
        text = orjson.dumps(data, default=_refused, option=_AS_BEFORE).decode()
    except TypeError:  # orjson.JSONEncodeError is one
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


_AS_BEFORE = (
    orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
)
"""What orjson has a form of its own for, handed to `default` (so to the standard library)."""


def _refused(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__}: written by the standard library")


def in_blocks(questions: Sequence[_T]) -> Iterator[Sequence[_T]]:
    """The list's blocks: `FIRST_ROWS` first, then `ROWS_PER_BLOCK` each."""
    yield questions[:FIRST_ROWS]
    for at in range(FIRST_ROWS, len(questions), ROWS_PER_BLOCK):
        yield questions[at : at + ROWS_PER_BLOCK]
