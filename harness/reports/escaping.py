"""Text from answers, ids and reasons made safe for where it is shown or written.

An answer, a question id or a grader's reason is written by the agent or the dataset's author,
never by tracegrade: on a terminal its control characters would clear the screen, set the
window title (OSC 0) or write the clipboard (OSC 52), and a bidi override (U+202E) would show
text in another order than it is stored; in Markdown a `<script>` or a newline followed by `##`
would become markup. `printable` shows such characters as escapes (`\\x1b`, `\\u202e`);
`md_text` and `md_code` escape for Markdown (backslash and entity escapes, one line).
`to_json_text` writes standard JSON for every report file (the run's JSON report, `compare
--json`): a NaN or an infinity is written as null, never as a bare `NaN` a parser rejects.
"""

from __future__ import annotations

import html
import json
import math
import re
from typing import Any, TextIO

__all__ = [
    "PrintableStream",
    "html_text",
    "md_code",
    "md_text",
    "one_line",
    "printable",
    "to_json_text",
]

# C0 controls but tab and newline, DEL, C1 controls, and the bidi embeddings, overrides,
# isolates and marks (a terminal that honours them shows text out of its stored order).
_UNPRINTABLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]"
)
_LINE_BREAKS = re.compile("[\n\r\u2028\u2029\x0b\x0c\x85]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    # \u form above ASCII: also a valid escape inside a JSON or YAML string printed to stdout
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with control and bidi characters shown as escapes; tab and newline kept."""
    return _UNPRINTABLE.sub(_escape, text)


def one_line(text: Any) -> str:
    """`printable`, with line breaks shown as escapes too (an id or a value inside a line)."""
    return printable(_LINE_BREAKS.sub(lambda m: "\\n" if m.group() == "\n" else "\\r", str(text)))


class PrintableStream:
    """A text stream that writes everything through `printable` (the CLI wraps stdout and
    stderr in it). Writers of their own terminal codes (the progress line) use `.unescaped`."""

    def __init__(self, stream: TextIO) -> None:
        self.unescaped = stream

    def write(self, text: str) -> int:
        self.unescaped.write(printable(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.unescaped, name)


# What can make markup of plain text: code, links and images, tables, headings in a quote.
_MD_PUNCTUATION = re.compile(r"([\\`\[\]!|#])")
_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def md_text(text: Any) -> str:
    """Plain text for a Markdown line or table cell: markup characters escaped, HTML as
    entities, on one line (a newline in an id or a reason never starts a heading)."""
    out = _LINE_BREAKS.sub(" ", printable(str(text)))
    out = "".join(_MD_ENTITIES.get(c, c) for c in out)
    return _MD_PUNCTUATION.sub(r"\\\1", out)


def md_code(text: Any) -> str:
    """An id as an inline code span that nothing inside it can end: fenced by more backticks
    than its longest run of them, `|` escaped for tables, on one line. Inside a code span `<`,
    `*` and `#` are literal text."""
    out = _LINE_BREAKS.sub(" ", printable(str(text)))
    if "\\|" in out:
        # A table splits its row before reading code spans, at every pipe whose backslash is
        # not itself escaped: `\\|` would end the cell inside the span and leave the rest of
        # the id as markup. No code span can hold it; escaped plain text can.
        return md_text(text)
    out = out.replace("|", "\\|")
    longest = max((len(run) for run in re.findall("`+", out)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if out.startswith(("`", " ")) or out.endswith(("`", " ")) else ""
    return f"{fence}{pad}{out}{pad}{fence}"


def _finite(value: Any) -> Any:
    """`value` with NaN and infinities as null: JSON has no such numbers, and a parser that
    follows the standard rejects a file holding a bare `NaN`."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def to_json_text(data: Any) -> str:
    """Standard JSON, always: non-finite numbers written as null."""
    try:
        return json.dumps(data, indent=2, sort_keys=False, default=str, allow_nan=False)
    except ValueError:  # a NaN or an infinity somewhere
        return json.dumps(_finite(data), indent=2, sort_keys=False, default=str)


def html_text(value: Any) -> str:
    """`value` as HTML text or an attribute's value (None: empty)."""
    return html.escape("" if value is None else str(value))
