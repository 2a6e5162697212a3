"""One stored run, one verdict: `run`, `grade`, `show`, the pytest plugin and the Python API
give the same exit code for the same run (they all return what `tracegrade.rundir.verdict`
decides). Each test here is a disagreement the copies of the gate once had."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.runs_support import write_project
from tracegrade.cli import main
from tracegrade.rundir.store import ResultStore

ROOT = Path(__file__).resolve().parents[1]  # the scripted model the test agent runs on


def _only_run(root: Path) -> Path:
    [run_dir] = [p for p in (root / "runs").iterdir() if (p / "identity.json").is_file()]
    return run_dir


def _lose(run_dir: Path, question_id: str) -> None:
    """What an interruption leaves: the question never committed (no row in any table)."""
    with ResultStore.in_run_dir(run_dir) as store:
        for table in ("questions", "grades", "scores"):
            store._db.execute(f"DELETE FROM {table} WHERE question_id = ?", (question_id,))


def test_show_and_grade_agree_that_an_interrupted_run_is_incomplete(tmp_path, capsys):
    config = write_project(tmp_path, questions=["paris", "pid", "echo"])
    assert main(["run", "--config", str(config), "--quiet"]) == 0
    run_dir = _only_run(tmp_path)
    _lose(run_dir, "echo")  # the last of 3 selected questions has no rows
    capsys.readouterr()
    shown = main(["show", str(run_dir), "--quiet"])
    said = capsys.readouterr().out
    assert shown == 3, said
    assert "1 of 3 selected question(s) have no result" in said
    assert main(["grade", "--config", str(config), str(run_dir), "--quiet"]) == 3
    assert main(["runs", "--config", str(config), "--json"]) == 0
    assert '"exit_code": 3' in capsys.readouterr().out


def test_the_pytest_plugin_exits_with_the_code_tracegrade_run_gives(tmp_path):
    # The test project's agent answers Rome without the lookup its question expects: a
    # regressed answer below the grader's bar, which this gate (no must-pass grader, no pass
    # rate) does not fail on.
    graders = [{"id": "tool_usage_grader", "threshold": 5}]
    config = write_project(tmp_path, questions=["paris", "rome"], target={"graders": graders})
    ran = main(["run", "--config", str(config), "--quiet"])
    plugin = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--tracegrade", str(config)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert "rome did not pass" in plugin.stdout  # the item still says what failed
    assert plugin.returncode == ran, plugin.stdout[-3000:]
