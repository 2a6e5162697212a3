"""One process at a time per run directory: the lock `run` and `run --resume` hold.

An advisory `flock` on the run's `identity.json`. The kernel drops it when its holder ends,
however it ends (kill -9 included), so a lock left by a dead process never blocks. Who holds
it is written beside, in `results.sqlite`'s meta table, for the refusal message.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from ..errors import InputError

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: no lock, as before
    fcntl = None  # type: ignore[assignment]

__all__ = ["holder_text", "run_lock"]


def holder_text() -> str:
    """This process, as the lock names its holder."""
    return (
        f"pid {os.getpid()} on {socket.gethostname()} since "
        f"{datetime.now(UTC).isoformat(timespec='seconds')}"
    )


@contextlib.contextmanager
def run_lock(
    run_dir: Path,
    *,
    holder: str | None = None,
    read_holder: Callable[[], str | None] | None = None,
) -> Iterator[None]:
    """Hold the run directory's lock for the block; `InputError` (exit 4) naming the holder
    when another live process has it. `read_holder()` returns the recorded holder, if any."""
    path = Path(run_dir) / "identity.json"
    if fcntl is None or not path.is_file():
        yield
        return
    handle = path.open("rb")
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            who = (read_holder() if read_holder is not None else None) or "another process"
            raise InputError(
                f"run {Path(run_dir).name} is in use by {who}",
                key="RUN",
                hint="wait for it to finish; two processes on one run would both ask the "
                "missing questions and overwrite each other's rows",
            ) from None
        yield
    finally:
        handle.close()  # releases the flock
