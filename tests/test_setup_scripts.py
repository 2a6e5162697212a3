"""The README's test command sets up what its tests need: `./scripts/test.sh` installs Debian's
chromium for the browser tests when it is missing (and the user can install packages), and
checks for it first, so a machine that cannot have it stops at once with what to do, not
minutes into the run. Run on a copy of the script, with a PATH that holds no apt-get or sudo."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_without_chromium_and_no_way_to_install_it_the_test_command_stops_first(tmp_path):
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "test.sh", tmp_path / "scripts" / "test.sh")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("dirname", "id", "python3"):  # no apt-get, no sudo
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    env = {
        "PATH": str(bin_dir),
        "HOME": str(tmp_path),
        "TRACEGRADE_CHROMIUM": str(tmp_path / "no-chromium-here"),
    }
    done = subprocess.run(
        ["/bin/bash", str(tmp_path / "scripts" / "test.sh")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the browser tests need Debian's chromium" in done.stderr
    assert "sudo apt-get install -y chromium" in done.stderr
    assert not (tmp_path / ".venv").exists()  # stopped before setting anything up


def test_the_test_command_runs_the_suite_on_every_core_by_default():
    script = (ROOT / "scripts" / "test.sh").read_text()
    assert "workers=(-n auto)" in script
    assert os.access(ROOT / "scripts" / "test.sh", os.X_OK)
    # CI calls the same command, and leaves installing chromium to it.
    ci = (ROOT / ".ci" / "run").read_text()
    assert "./scripts/test.sh" in ci and "apt-get" not in ci
