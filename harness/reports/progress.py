"""Terminal progress for a run: questions done/total, errors, ETA, on stderr.

Quiet when stderr is not a TTY (CI logs stay clean) or when asked (`--quiet`).
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

__all__ = ["Progress"]


class Progress:
    """A one-line progress display, redrawn in place at most every `interval_s`."""

    def __init__(
        self, *, stream: TextIO | None = None, quiet: bool = False, interval_s: float = 0.1
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = not quiet and bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval_s = interval_s
        self.total = 0
        self.done = 0
        self.errors = 0
        self._started = time.monotonic()
        self._last_draw = 0.0

    def start(self, run_dir: Any, total: int) -> None:
        """Called once the run directory exists and the number of questions is known."""
        self.total = total
        self._started = time.monotonic()
        self._draw(force=True)

    def advance(self, question: Any) -> None:
        """Called after each committed question (a `QuestionScore`)."""
        self.done += 1
        if getattr(question, "degraded", False):
            self.errors += 1
        self._draw(force=self.done == self.total)

    def line(self) -> str:
        elapsed = time.monotonic() - self._started
        eta = ""
        if 0 < self.done < self.total:
            remaining = elapsed / self.done * (self.total - self.done)
            eta = f", ETA {remaining:.0f}s"
        return f"{self.done}/{self.total} questions, {self.errors} error(s){eta}"

    def _draw(self, *, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last_draw < self.interval_s:
            return
        self._last_draw = now
        # the line holds only numbers: its own erase-line code goes to the terminal as is
        stream = getattr(self.stream, "unescaped", self.stream)
        stream.write("\r\x1b[2K" + self.line())
        stream.flush()

    def close(self) -> None:
        if self.enabled and self.total:
            self.stream.write("\n")
            self.stream.flush()
