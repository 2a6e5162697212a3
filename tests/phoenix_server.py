"""A real Phoenix (the `arize-phoenix` package) on loopback, for the annotation tests.

Phoenix pins its own dependencies, so it lives in its own environment, `.venv-phoenix` in the
checkout (`scripts/test.sh` installs it), or the Python named by `TRACEGRADE_PHOENIX_PYTHON`.
It serves on a free port with its gRPC port moved off 4317, its database in a temporary
folder and its telemetry off: nothing leaves the machine.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

__all__ = ["phoenix", "phoenix_log"]

ROOT = Path(__file__).resolve().parents[1]


_LOGS: dict[str, Path] = {}


def phoenix_log(url: str, chars: int = 3000) -> str:
    """The tail of the log of the Phoenix serving `url` (for a failed test's message)."""
    path = _LOGS.get(url)
    return path.read_text(errors="replace")[-chars:] if path and path.is_file() else ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def phoenix_python() -> Path:
    named = os.environ.get("TRACEGRADE_PHOENIX_PYTHON")
    path = Path(named) if named else ROOT / ".venv-phoenix" / "bin" / "python"
    if not path.is_file():
        pytest.fail(
            f"no Phoenix environment at {path}: ./scripts/test.sh installs arize-phoenix into "
            ".venv-phoenix (or set TRACEGRADE_PHOENIX_PYTHON to a Python that has it)"
        )
    return path


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Phoenix's base URL (`http://127.0.0.1:PORT`), up and answering."""
    python = phoenix_python()
    port = _free_port()
    work = tmp_path_factory.mktemp("phoenix")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_"))},
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (work / "phoenix.log").open("wb")
    process = subprocess.Popen(
        [str(python), "-m", "phoenix.server.main", "serve"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    _LOGS[url] = work / "phoenix.log"
    try:
        # a cold start costs ~17 s of CPU: 70 s at load 15 on 2 cores, 130 s for two at once,
        # past 240 s beside a CPU stress; one per test session (per xdist worker) and a
        # generous bound
        deadline = time.monotonic() + 600
        while True:
            if process.poll() is not None:
                pytest.fail(f"Phoenix exited: {(work / 'phoenix.log').read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "Phoenix did not come up"
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
