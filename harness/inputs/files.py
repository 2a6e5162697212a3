"""What a path is when it is not a regular file, said in words.

A dataset that is a named pipe would block a read forever, a policy that is `/dev/zero` would
fill memory: neither is read. Each is reported for what it is, not as "file not found".
"""

from __future__ import annotations

import stat
from pathlib import Path

from ..errors import suggest

__all__ = ["missing_file_hint", "not_a_file"]

_KINDS = (
    (stat.S_ISDIR, "is a directory, not a file"),
    (stat.S_ISFIFO, "is a FIFO (a named pipe), not a file"),
    (stat.S_ISCHR, "is a character device, not a file"),
    (stat.S_ISBLK, "is a block device, not a file"),
    (stat.S_ISSOCK, "is a socket, not a file"),
)


def not_a_file(path: Path | str) -> str | None:
    """None for a regular file (a link to one included); else what it is instead: "file not
    found", "is a FIFO (a named pipe), not a file", "is a character device, not a file"..."""
    try:
        mode = Path(path).stat().st_mode
    except FileNotFoundError:
        return "file not found"
    except OSError as exc:
        return f"cannot read file: {exc.strerror or exc}"
    if stat.S_ISREG(mode):
        return None
    for test, words in _KINDS:
        if test(mode):
            return words
    return "is not a regular file"


def missing_file_hint(path: Path | str) -> str | None:
    """For a path that does not exist: "did you mean '<sibling>'?" naming the file of its
    directory (or the directory of its parent) that it most likely misspells; else None."""
    path = Path(path)
    if path.exists() or not path.name:
        return None
    parent = path.parent
    try:
        if not parent.is_dir():  # a misspelt directory: look one level up
            hint = missing_file_hint(parent)
            return hint if hint is None else hint.replace("'?", f"/{path.name}'?")
        names = [child.name for child in parent.iterdir()]
    except OSError:
        return None
    close = suggest(path.name, names)
    if close is None:
        return None
    shown = close if str(parent) == "." else str(parent / close)
    return f"did you mean {shown!r}?"
