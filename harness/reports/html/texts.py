"""A text as the HTML report shows it: through the redaction policy, and cut when long, with a
note saying where the whole is (the page embeds every question, so one 10 MB answer must not
make it too large to open)."""

from __future__ import annotations

import json
from typing import Any

from ...redaction import Scrubber, truncate

__all__ = ["IN_STORE", "IN_TRACE", "TEXT_CHARS", "cut", "shown_text"]

TEXT_CHARS = 20_000
"""An input message or answer longer than this is cut (a page, not an archive)."""
IN_STORE = "the run's store (results.sqlite) keeps it whole"
IN_TRACE = "the run's trace file keeps it whole"


def cut(text: str, limit: int, where: str = IN_STORE) -> str:
    """`text` cut to `limit` characters, with a note saying so and where the whole is."""
    if len(text) <= limit:
        return text
    return f"{truncate(text, limit)} … [cut: {len(text):,} characters in all; {where}]"


def shown_text(value: Any, policy: Scrubber, limit: int = TEXT_CHARS, where: str = IN_STORE) -> str:
    """`value` (JSON text when not a string) redacted by `policy`, then `cut`."""
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False, default=str)
    return cut(policy.text(value), limit, where)
