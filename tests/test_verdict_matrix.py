"""The verdict matrix: run states x entry points, each cell the same exit code.

A stored run has one verdict whichever command computes it (`tracegrade.rundir.verdict`). Each
state below is built once per module, on the scripted agent and a tiny dataset, as a shard run
(`--shard 1/1`: every question, and `merge` can take it); every entry point then reads (or,
for `run`, the pytest plugin and the API, produces) that state, and each cell asserts the
state's exit code. `resume`, `grade` and `merge` work on copies, so no cell changes another's
run.

A cell that cannot hold the state is left out, with the reason in `NOT_APPLICABLE`: the pytest
plugin and the API make fresh runs, which are never interrupted and never carry labels, and
the state's own `run` exited before its rows were lost or its labels given.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

import tracegrade
from tests import openai_server as loopback
from tests.runs_support import REVIEW_MODULE, write_project
from tracegrade.cli import main
from tracegrade.rundir.store import ResultStore

ROOT = Path(__file__).resolve().parents[1]  # the scripted model the test agent runs on


CONTAINS = {"id": "contains", "match_on": ["expected", "keyword"]}

EXPECTED = {
    "complete": 0,
    "failing": 2,
    "interrupted": 3,
    "errored_agent": 3,
    "degraded_judge": 3,
    "review_labelled": 0,
    "repeats": 0,
}
ENTRY_POINTS = ("run", "resume", "grade", "show", "merge", "plugin", "api")
NOT_APPLICABLE = {
    ("interrupted", "run"): "the run exited before its last question's rows were lost",
    ("interrupted", "resume"): "resuming finishes the run (the test after the matrix)",
    ("interrupted", "plugin"): "a fresh run is not interrupted",
    ("interrupted", "api"): "a fresh run is not interrupted",
    ("review_labelled", "run"): "the run exited before the person's label was given",
    ("review_labelled", "plugin"): "a fresh run carries no label",
    ("review_labelled", "api"): "a fresh run carries no label",
}


@dataclass(slots=True)
class State:
    config: Path
    run_dir: Path
    run_code: int


def _new_run(config: Path, *args: str) -> tuple[int, Path]:
    runs = config.parent / "runs"

    def run_dirs() -> set[Path]:
        return (
            {p for p in runs.iterdir() if (p / "identity.json").is_file()}
            if runs.is_dir()
            else set()
        )

    before = run_dirs()
    code = main(["run", "--config", str(config), "--quiet", *args])
    [run_dir] = run_dirs() - before
    return code, run_dir


def _build(name: str, root: Path, judge_url: str) -> State:
    config_keys: dict = {}
    target: dict = {"graders": ["tool_usage_grader", CONTAINS]}
    questions = ["paris"]
    if name == "failing":
        target["graders"] = [{"id": "tool_usage_grader", "must_pass": True, "threshold": 5}]
        questions = ["paris", "rome"]
    elif name == "interrupted":
        questions = ["paris", "pid", "echo"]
    elif name == "errored_agent":
        questions = ["paris", "crash"]
    elif name == "degraded_judge":
        target["graders"] = ["tool_usage_grader", "relevance_grader"]
        config_keys["judge"] = {
            "provider": "openai-compatible",
            "base_url": judge_url,
            "model": "m",
            "max_attempts": 1,
            "timeout_s": 5,
        }
    elif name == "review_labelled":
        target["graders"] = ["tool_usage_grader"]
    elif name == "repeats":
        target["repeats"] = 2
    config = write_project(root, questions=questions, target=target, config=config_keys)
    if name == "review_labelled":
        (root / "data" / "graders.py").write_text(textwrap.dedent(REVIEW_MODULE))
    code, run_dir = _new_run(config, "--shard", "1/1")
    if name == "interrupted":  # what an interruption leaves: the last question never committed
        with ResultStore.in_run_dir(run_dir) as store:
            for table in ("questions", "grades", "scores"):
                store._db.execute(f"DELETE FROM {table} WHERE question_id = 'echo'")
    if name == "review_labelled":
        answers = root / "answers.yaml"
        rows = [{"question": "paris", "review": "escalation", "answer": "pass"}]
        answers.write_text(yaml.safe_dump({"by": "ana", "answers": rows}))
        assert main(["label", str(run_dir), "--answers", str(answers)]) == 0
    return State(config, run_dir, code)


@pytest.fixture(scope="module")
def judge_url():
    server = loopback.OpenAIServer().start()
    server.default = loopback.server_error(500)  # the judge is down for the whole module
    try:
        yield server.base_url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def states(tmp_path_factory, judge_url):
    built: dict[str, State] = {}

    def get(name: str) -> State:
        if name not in built:
            built[name] = _build(name, tmp_path_factory.mktemp(name), judge_url)
        return built[name]

    return get


def _copy(state: State, where: Path) -> Path:
    dest = where / state.run_dir.name
    shutil.copytree(state.run_dir, dest)
    return dest


def _cell(entry: str, state: State, scratch: Path) -> int:
    config = str(state.config)
    if entry == "run":
        return state.run_code
    if entry == "resume":
        return main(["run", "--config", config, "--quiet", "--resume", str(_copy(state, scratch))])
    if entry == "grade":
        return main(["grade", "--config", config, str(_copy(state, scratch)), "--quiet"])
    if entry == "show":
        return main(["show", str(state.run_dir), "--quiet"])
    if entry == "merge":
        return main(["merge", str(state.run_dir), "--out", str(scratch / "merged"), "--quiet"])
    if entry == "plugin":
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--tracegrade", config],
            cwd=state.config.parent,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        return done.returncode
    if entry == "api":
        return tracegrade.run(state.config).exit_code
    raise AssertionError(entry)


CELLS = [
    pytest.param(state, entry, id=f"{state}-{entry}")
    for state in EXPECTED
    for entry in ENTRY_POINTS
    if (state, entry) not in NOT_APPLICABLE
]


@pytest.mark.parametrize("state,entry", CELLS)
def test_every_entry_point_gives_the_states_exit_code(states, state, entry, tmp_path):
    assert _cell(entry, states(state), tmp_path) == EXPECTED[state]


def test_resuming_an_interrupted_run_finishes_it_and_show_agrees(states, tmp_path):
    # the one cell whose state the entry point changes: resume asks what has no row
    state = states("interrupted")
    copy = _copy(state, tmp_path)
    resumed = main(["run", "--config", str(state.config), "--quiet", "--resume", str(copy)])
    assert resumed == EXPECTED["complete"]
    assert main(["show", str(copy), "--quiet"]) == resumed


def test_a_repeated_run_missing_one_trial_is_incomplete_everywhere(states, tmp_path):
    # An interruption between a question's trials: every question has a row, one trial has not.
    state = states("repeats")
    copy = _copy(state, tmp_path)
    with ResultStore.in_run_dir(copy) as store:
        for table in ("questions", "grades", "scores"):
            store._db.execute(f"DELETE FROM {table} WHERE question_id = 'paris' AND trial = 1")
    assert main(["show", str(copy), "--quiet"]) == 3
    assert main(["merge", str(copy), "--out", str(tmp_path / "merged"), "--quiet"]) == 3
    assert main(["grade", "--config", str(state.config), str(copy), "--quiet"]) == 3
    assert main(["run", "--config", str(state.config), "--quiet", "--resume", str(copy)]) == 0


def test_a_merged_run_keeps_the_labels_people_gave(states, tmp_path):
    state = states("review_labelled")
    out = tmp_path / "merged"
    assert main(["merge", str(state.run_dir), "--out", str(out), "--quiet"]) == 0
    with ResultStore.open_readonly(out) as store:
        [label] = store.load_annotations()
    assert (label.question_id, label.label, label.answer, label.author) == (
        "paris",
        "review:escalation",
        True,
        "ana",
    )
