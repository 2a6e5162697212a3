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

__all__ = ["phoenix"]

ROOT = Path(__file__).resolve().parents[1]


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


@pytest.fixture(scope="module")
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
    try:
        deadline = time.monotonic() + 240  # a cold start on a loaded 2-core machine
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
