"""How an agent's (or a grader's) exception is put into words: bounded in size, naming where in
the agent's own code it was raised, and its traceback without unrelated chained errors.

- `MAX_ERROR_CHARS`: no error message or grader reason grows past it in the store or the
  reports (a 1 MB exception message is cut, saying how much was left out).
- `describe_agent_error(exc)`: `TypeError: ... (at agent.py:12 in build_reply)`, the innermost
  frame of the agent's own code (not the standard library, an installed package or tracegrade).
- `traceback_text(exc)`: the traceback `-v` prints: the exception and the errors it was
  explicitly raised from, not the ones it happened to be raised while handling (a library's
  caught `RuntimeError: no running event loop` says nothing about the agent's bug).
"""

from __future__ import annotations

import os
import sysconfig
import traceback
from pathlib import Path

__all__ = ["MAX_ERROR_CHARS", "bounded", "describe_agent_error", "own_frame", "traceback_text"]

MAX_ERROR_CHARS = 2000
"""Longest error message or grader reason stored or reported."""


def bounded(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """`text` cut to `limit` characters, saying how many were left out."""
    if len(text) <= limit:
        return text
    note = f" ... ({len(text) - limit:,} more characters)"
    return text[: max(0, limit - len(note))] + note


def _not_own() -> tuple[str, ...]:
    """Directories whose code is not the agent's own: the standard library, installed
    packages, and tracegrade itself."""
    paths = sysconfig.get_paths()
    roots = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    package_root = Path(__file__).resolve().parents[2]
    roots |= {str(package_root / "harness"), str(package_root / "graders")}
    return tuple(os.path.realpath(r) + os.sep for r in roots if r)


def own_frame(exc: BaseException) -> traceback.FrameSummary | None:
    """The innermost frame of the agent's own code in `exc`'s traceback (or in what it was
    raised from), None when every frame is a library's."""
    skip = _not_own()
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        frames = traceback.extract_tb(current.__traceback__)
        for frame in reversed(frames):
            path = os.path.realpath(frame.filename)
            if frame.filename.startswith("<") or path.startswith(skip):
                continue
            return frame
        current = current.__cause__ or current.__context__
    return None


def _short_path(filename: str) -> str:
    try:
        relative = os.path.relpath(filename)
    except ValueError:  # another drive (Windows)
        return filename
    return relative if not relative.startswith("..") else filename


def describe_agent_error(exc: BaseException) -> str:
    """`Type: message (at file:line in function)`, bounded; the location is the innermost
    frame of the agent's own code."""
    text = f"{type(exc).__name__}: {exc}"
    frame = own_frame(exc)
    where = f" (at {_short_path(frame.filename)}:{frame.lineno} in {frame.name})" if frame else ""
    return bounded(text, MAX_ERROR_CHARS - len(where)) + where


def traceback_text(exc: BaseException) -> str:
    """The traceback of `exc` and of the exceptions it was explicitly raised from (`raise X
    from Y`), without implicitly chained ones."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__
    parts: list[str] = []
    for item in reversed(chain):
        if parts:
            parts.append(
                "\nThe above exception was the direct cause of the following exception:\n\n"
            )
        parts.extend(traceback.format_exception(type(item), item, item.__traceback__, chain=False))
    return "".join(parts)
