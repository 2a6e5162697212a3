"""Top-level CLI options users asked for: `--version`, `--id` selection."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

import pytest

from tracegrade.cli import main


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"tracegrade {version('tracegrade')}"


def test_version_from_the_real_command() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tracegrade", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("tracegrade ")
