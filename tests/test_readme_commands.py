"""The README's "Using it" commands work as written from the checkout root: each is run through
bash (globs and line continuations as a user's shell has them) in a copy of the checkout's
examples and reference agents, with the `tracegrade` this suite installed first on PATH."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.runs_support import copy_examples

ROOT = Path(__file__).resolve().parents[1]


def using_it_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Using it") :]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "README's 'Using it' has no bash block"
    joined = block.group(1).replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip()]


def test_the_readme_commands_run_from_the_checkout_root(tmp_path):
    commands = using_it_commands()
    assert commands[0].startswith("pip install -e ."), "the block starts with the install"
    copy_examples(tmp_path)
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "tracegrade").exists(), "the suite's venv has the console script"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    run_id = None
    ran = []
    for command in commands[1:]:
        if "<run id>" in command:
            assert run_id, "a command needs a run id before any run was made"
            command = command.replace("<run id>", run_id)
        done = subprocess.run(
            ["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, f"{command}\nexit {done.returncode}\n{done.stderr[-2000:]}"
        found = re.search(r"run dir: (\S+)", done.stderr)
        if found:
            run_id = Path(found.group(1)).name
        ran.append(command.split()[1])
    assert ran == ["validate", "targets", "run", "grade", "runs", "show", "compare", "graders"]
    for report in ("junit.xml", "summary.md", "results.json"):
        assert (tmp_path / "runs" / report).is_file(), report
