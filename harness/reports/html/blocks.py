"""The HTML report's rows as the page carries them: JSON elements after the script, in blocks
(the first one page of the list, so the first screen is drawn from it while the rest still
comes), each safe inside a `<script>` element."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar

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
    """JSON safe inside a <script> element: no `</script>`, no `<!--`."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def in_blocks(questions: Sequence[_T]) -> Iterator[Sequence[_T]]:
    """The list's blocks: `FIRST_ROWS` first, then `ROWS_PER_BLOCK` each."""
    yield questions[:FIRST_ROWS]
    for at in range(FIRST_ROWS, len(questions), ROWS_PER_BLOCK):
        yield questions[at : at + ROWS_PER_BLOCK]
