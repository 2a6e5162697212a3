"""A target built in code whose agent factory is a lambda, run with worker processes: each
worker gets the target pickled, and a lambda does not pickle. The user gets invalid input
(exit 4) naming the target and the factory, why, and what to do, before any run directory
exists; not a pickling traceback from inside the run."""

from __future__ import annotations

import importlib.util

import pytest

from tests.runs_support import write_project
from tracegrade import ConfigError, ExitCode, load_config, resume_run, start_run
from tracegrade.rundir.store import ResultStore


def _config_with_a_lambda(tmp_path):
    rows = [
        {"id": f"e{i}", "input": "echo system", "expected": {"keyword": "system"}} for i in range(4)
    ]
    config = load_config(
        write_project(tmp_path, questions=[], extra_questions=rows, target={"concurrency": 2})
    )
    spec = importlib.util.spec_from_file_location("lambda_agent", tmp_path / "agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    graph = module.build_graph()
    config.targets["t"].factory = lambda: graph  # a notebook's way to hand over a graph
    return config


def test_a_lambda_factory_with_workers_is_refused_naming_it(tmp_path):
    config = _config_with_a_lambda(tmp_path)
    with pytest.raises(ConfigError) as raised:
        start_run(config, workers=2)
    error = raised.value
    assert error.exit_code == ExitCode.INVALID_INPUT
    shown = error.render()
    assert "target 't'" in shown and "agent factory <function" in shown and "<lambda>" in shown
    assert "worker processes" in shown and "pickle" in shown  # why
    assert "--workers 1" in shown  # what to do
    assert "a module's top level" in shown and "`file.py:name`" in shown
    assert error.key == "targets.t.factory"
    assert not (tmp_path / "runs").exists()  # refused before the run directory


def test_the_same_lambda_runs_in_one_process(tmp_path):
    # the refusal is about sending it: in one process the lambda is the agent as any other
    config = _config_with_a_lambda(tmp_path)
    outcome = start_run(config, workers=1)
    with ResultStore.open_readonly(outcome.run_dir) as store:
        answers = {r.id: r.answer.response for r in store.load_runs()}
    assert sorted(answers) == ["e0", "e1", "e2", "e3"]


def test_a_resume_with_workers_refuses_the_lambda_too(tmp_path):
    config = _config_with_a_lambda(tmp_path)
    outcome = start_run(config, workers=1)
    with pytest.raises(ConfigError) as raised:
        resume_run(config, outcome.run_dir, workers=2)
    assert "target 't'" in str(raised.value) and "--workers 1" in str(raised.value)
