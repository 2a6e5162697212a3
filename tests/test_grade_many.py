"""`tracegrade grade RUN RUN ...` (or a glob): each run re-scored, each run's objective per target
and the mean over all (seed 003's `eval grade`); `-v` lists every question's objective."""

from __future__ import annotations

import re

from tests.runs_support import write_project
from tracegrade.cli import main


def test_grading_several_runs_prints_each_objective_and_the_mean(tmp_path, capsys):
    config = write_project(tmp_path, questions=["paris", "rome"])
    main(["run", "--config", str(config), "--quiet"])
    main(["run", "--config", str(config), "--quiet"])
    runs = sorted(p.name for p in (tmp_path / "runs").iterdir() if p.is_dir())
    assert len(runs) == 2
    capsys.readouterr()
    code = main(["-v", "grade", "--config", str(config), str(tmp_path / "runs" / "*")])
    out = capsys.readouterr().out
    assert "objective by run:" in out
    summary = re.compile(r"\s+\d{8}-\d{6}-\w+\s+t: objective ([\d.]+)")
    lines = [m for m in map(summary.match, out.splitlines()) if m]
    assert [m.group(0).split()[0] for m in lines] == runs
    objectives = [float(m.group(1)) for m in lines]
    mean = re.search(r"mean objective over 2 run\(s\): ([\d.]+)", out)
    assert mean and abs(float(mean.group(1)) - sum(objectives) / 2) < 1e-3
    # -v: every question's objective, per run
    assert out.count("per question:") == 2 and out.count("    paris: objective") == 2
    # the worst of the runs' exit codes (two equal runs: the one run's)
    capsys.readouterr()
    assert code == main(["grade", "--config", str(config), runs[0], "--quiet"])
    # one report file for several runs would be ambiguous: refused
    assert main(["grade", "--config", str(config), *runs, "--json", str(tmp_path / "x.json")]) == 4
    # a glob that matches no run is invalid input, not "nothing graded, exit 0"
    assert main(["grade", "--config", str(config), str(tmp_path / "runs" / "nope*")]) == 4
