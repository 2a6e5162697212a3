"""An interrupted run loses at most the questions in flight; `--resume` finishes only the rest."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.runs_support import QUESTIONS, write_project
from tracegrade import load_config, resume_run, start_run
from tracegrade.rundir.store import ResultStore

REPO = Path(__file__).resolve().parents[1]


def _paris(n: int) -> list[dict]:
    return [{**QUESTIONS["paris"], "id": f"p{i}"} for i in range(n)]


class Interrupt(Exception):  # stands in for Ctrl-C: propagates out of the run the same way
    pass


def test_cancelled_run_keeps_committed_questions_and_resume_runs_only_the_missing(tmp_path):
    path = write_project(
        tmp_path, questions=[], extra_questions=_paris(6), target={"concurrency": 1}, latency_s=0.01
    )
    config = load_config(path)
    seen = []
    run_dirs = []

    def interrupt_after_two(question):
        seen.append(question.id)
        if len(seen) == 2:
            raise Interrupt

    with pytest.raises(Interrupt):
        start_run(config, on_start=lambda d, n: run_dirs.append(d), on_done=interrupt_after_two)
    (run_dir,) = run_dirs
    with ResultStore.in_run_dir(run_dir) as store:
        before = {r.id: r.trace_id for r in store.load_runs()}
    assert set(before) == {"p0", "p1"}

    resumed = []
    outcome = resume_run(config, run_dir.name, on_done=lambda q: resumed.append(q.id))
    assert sorted(resumed) == ["p2", "p3", "p4", "p5"]  # only the missing ones ran
    assert "t: resumed 4 of 6 question(s)" in outcome.notes
    with ResultStore.in_run_dir(run_dir) as store:
        after = {r.id: r.trace_id for r in store.load_runs()}
    assert len(after) == 6
    assert {k: after[k] for k in before} == before  # committed rows untouched
    assert [q.id for q in outcome.targets[0].questions] == [f"p{i}" for i in range(6)]
    assert outcome.exit_code == 0


def test_killed_process_resumed_from_the_cli(tmp_path):
    path = write_project(
        tmp_path, questions=[], extra_questions=_paris(8), target={"concurrency": 1}, latency_s=0.15
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tracegrade", "run", "--config", str(path), "--quiet"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    runs = tmp_path / "runs"
    deadline = time.monotonic() + 300  # generous: the run's start-up stretches with the load
    committed = 0
    while time.monotonic() < deadline and committed < 2:
        time.sleep(0.05)
        dbs = list(runs.glob("*/results.sqlite"))
        if dbs:
            try:
                with sqlite3.connect(dbs[0]) as conn:
                    committed = conn.execute("SELECT COUNT(*) FROM questions").fetchone()[0]
            except sqlite3.OperationalError:
                committed = 0
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 2 <= committed < 8
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    with ResultStore.in_run_dir(run_dir) as store:
        kept = len(store.load_runs())
    assert kept >= committed and kept < 8

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tracegrade",
            "run",
            "--config",
            str(path),
            "--resume",
            run_dir.name,
            "--quiet",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert f"resumed {8 - kept} of 8 question(s)" in done.stdout
    with ResultStore.in_run_dir(run_dir) as store:
        assert len(store.load_runs()) == 8
