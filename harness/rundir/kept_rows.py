"""The HTML report's rows of a run, kept in its directory (`page-rows.cache`): each question's
page data is built (redaction, tool-usage marks, the trace file's calls) and encoded once, and
every later page of the same run (`tracegrade serve`'s run page, `--html`, `show --html`)
reads it back instead of building it again.

The rows are kept under a stamp: a sha256 over the contents of every file they were built
from (the manifest, the store and its write-ahead log, each target's trace file) and whatever
else shaped them, which the caller names (the grading shown, the report options, the code).
Labelling or re-grading a run writes its store, so its stamp changes and the rows are built
again. A stamp is over contents, not times: a copied run keeps its rows, and a write within
the file system's clock tick is still seen.

The file is a cache: losing it costs one build, a run directory that cannot be written is
served without it, and nothing else reads it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Iterable, Sequence

from .directory import RunDirectory

__all__ = ["KEPT_FILE", "content_stamp", "keep_rows", "read_rows"]

KEPT_FILE = "page-rows.cache"
_FORMAT = 1


def content_stamp(run: RunDirectory, targets: Iterable[str], *shaped_by: str) -> str:
    """The stamp of the rows of `targets`: what the run's files hold and `shaped_by`."""
    stamp = hashlib.sha256(json.dumps([_FORMAT, *shaped_by]).encode())
    wal = run.store_file.with_name(run.store_file.name + "-wal")
    files = [run.manifest_file, run.store_file, wal, *(run.trace_file(t) for t in targets)]
    for path in files:
        stamp.update(b"\0" + path.name.encode() + b"\0")
        try:
            with open(path, "rb") as f:
                # an empty file is none: reading the store leaves an empty write-ahead log
                if os.fstat(f.fileno()).st_size:
                    stamp.update(hashlib.file_digest(f, "sha256").digest())
                    continue
        except OSError:
            pass
        stamp.update(b"absent")
    return stamp.hexdigest()


def _header(stamp: str) -> str:
    return json.dumps({"format": _FORMAT, "stamp": stamp})


def read_rows(run: RunDirectory, stamp: str) -> list[tuple[str, str]] | None:
    """The kept rows as (key, text), in the order they were kept, when they carry `stamp`;
    None when there are none, or others."""
    try:
        # newline="": a row is one line of JSON text, and a row's text is returned as it was
        with open(run.path / KEPT_FILE, encoding="utf-8", newline="") as f:
            if f.readline() != _header(stamp) + "\n":
                return None
            body = f.read()
    except (OSError, UnicodeDecodeError):
        return None
    if body and not body.endswith("\n"):  # cut short (it is written whole, by a rename)
        return None
    rows = []
    for line in body.split("\n")[:-1]:
        key, tab, text = line.partition("\t")
        if not tab:
            return None
        rows.append((key, text))
    return rows


def keep_rows(run: RunDirectory, stamp: str, rows: Sequence[tuple[str, str]]) -> None:
    """Keep `rows` (key, text: one line each, neither holding a tab in its key nor a newline)
    under `stamp`, replacing what was kept; a directory that cannot be written keeps none."""
    path = run.path / KEPT_FILE
    part = path.with_name(f"{KEPT_FILE}.{os.getpid()}-{threading.get_ident()}.part")
    try:
        with open(part, "w", encoding="utf-8", newline="") as f:
            f.write(_header(stamp) + "\n")
            f.writelines(f"{key}\t{text}\n" for key, text in rows)
        os.replace(part, path)  # whole or not at all, for a reader at the same time
    except OSError:
        with contextlib.suppress(OSError):
            part.unlink()
