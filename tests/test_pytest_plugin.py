"""The pytest plugin (`pytest --tracegrade CONFIG`), run as a user runs it: pytest in a
subprocess, in a copy of the examples and reference agents. One item per question per target
failing with the graders' reasons, selection by -k and markers, the gate in the terminal
summary, one run directory also under pytest-xdist, and inert without --tracegrade."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runs_support import copy_examples
from tracegrade import load_dataset, read_records

ROOT = Path(__file__).resolve().parents[1]
PLANTED = {"book_consultation", "book_without_check", "cancel_booking", "refund_over_limit"}


@pytest.fixture
def project(tmp_path):
    copy_examples(tmp_path)
    return tmp_path


def pytest_in(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


def outcomes(out: str) -> dict[str, str]:
    """nodeid -> PASSED/FAILED, from the -rA short summary."""
    found = re.findall(r"^(PASSED|FAILED|ERROR) (\S+::\S+::\S+)", out, re.M)
    return {nodeid: status for status, nodeid in found}


TARGETS = ["--tracegrade-target", "support_desk", "--tracegrade-target", "support_desk_regressed"]


def run_dirs(project: Path) -> list[Path]:
    return [p for p in (project / "runs").iterdir() if (p / "identity.json").is_file()]


def test_one_item_per_question_per_target_failing_with_the_graders_reasons(project):
    done = pytest_in(project, "--tracegrade", "examples/tracegrade.yaml", *TARGETS)
    assert done.returncode == 2, done.stdout[-3000:]  # the verdict `run` gives
    result = outcomes(done.stdout)
    assert len(result) == 18
    prefix = "examples/tracegrade.yaml::"
    for nodeid, status in result.items():
        target, question = nodeid.removeprefix(prefix).split("::")
        bad = target == "support_desk_regressed" and question in PLANTED
        assert status == ("FAILED" if bad else "PASSED"), nodeid
    # The failure says why, in the graders' words, with the trace id.
    assert "support_desk_regressed::cancel_booking did not pass" in done.stdout
    assert "says 'cancelled' but the record has no cancel_booking call" in done.stdout
    assert re.search(r"trace id: [0-9a-f]{32}", done.stdout)
    # The gate's verdict in the terminal summary.
    assert re.search(r"support_desk: 9 question\(s\).*gate passed", done.stdout)
    assert re.search(
        r"support_desk_regressed: 9 question\(s\).*gate FAILED \(exit 2\)", done.stdout
    )
    assert "verdict: exit 2 (a gate failed)" in done.stdout
    # One run directory, as `tracegrade run` makes, which `tracegrade grade` re-grades.
    [run_dir] = run_dirs(project)
    with sqlite3.connect(run_dir / "results.sqlite") as db:
        assert db.execute("SELECT count(*) FROM questions").fetchone() == (18,)
    regrade = subprocess.run(
        [
            sys.executable,
            "-m",
            "tracegrade",
            "grade",
            "--config",
            "examples/tracegrade.yaml",
            str(run_dir),
            "--quiet",
        ],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert regrade.returncode == 2, regrade.stderr


def test_k_and_markers_select_by_target_id_split_bundle_and_tags(project):
    questions = load_dataset(project / "examples/datasets/support_desk.yaml").questions
    tagged = {str(q.id) for q in questions if "booking" in (q.tags or [])}
    bundled = {str(q.id) for q in questions if q.bundle == "refunds"}
    assert tagged and bundled

    def collected(*args: str) -> list[str]:
        done = pytest_in(
            project,
            "--tracegrade",
            "examples/tracegrade.yaml",
            *TARGETS,
            "--collect-only",
            "-q",
            *args,
        )
        assert done.returncode == 0, done.stdout[-3000:]
        return re.findall(r"^examples/tracegrade.yaml::(\w+::\w+)$", done.stdout, re.M)

    assert set(collected("-m", "tag_booking", "-k", "regressed")) == {
        f"support_desk_regressed::{q}" for q in tagged
    }
    assert set(collected("-m", "bundle_refunds and not tag_booking", "-k", "not regressed")) == {
        f"support_desk::{q}" for q in bundled
    }
    assert set(collected("-k", "support_desk_regressed and refunds")) == {
        f"support_desk_regressed::{q}" for q in bundled
    }
    assert len(collected("-m", "tracegrade")) == 18
    assert not (project / "runs").exists()  # collecting runs nothing and creates no run


def test_under_xdist_the_workers_share_one_run_directory(project):
    pytest.importorskip("xdist")
    done = pytest_in(project, "--tracegrade", "examples/tracegrade.yaml", *TARGETS, "-n", "2")
    assert done.returncode == 2, done.stdout[-3000:]  # the verdict `run` gives
    result = outcomes(done.stdout)
    assert sorted(n.split("::")[-1] for n, s in result.items() if s == "FAILED") == sorted(PLANTED)
    assert sum(s == "PASSED" for s in result.values()) == 14
    assert "verdict: exit 2 (a gate failed)" in done.stdout
    [run_dir] = run_dirs(project)
    with sqlite3.connect(run_dir / "results.sqlite") as db:
        assert db.execute("SELECT count(*) FROM questions").fetchone() == (18,)
    traces = sorted(p.name for p in (run_dir / "traces").iterdir())
    assert traces == ["support_desk.jsonl", "support_desk_regressed.jsonl"]  # merged
    records = read_records(run_dir / "traces" / "support_desk.jsonl")
    assert len(records) == 9 and all(r.complete for r in records.values())


def test_an_invalid_config_is_a_usage_error(project):
    bad = project / "examples" / "broken.yaml"
    bad.write_text("version: 1\ntargets: {a: {agent: x.py:y, dataset: nope.yaml, grader: []}}\n")
    done = pytest_in(project, "--tracegrade", str(bad))
    assert done.returncode == 4
    assert "tracegrade:" in done.stderr and "broken.yaml" in done.stderr


def test_without_the_option_the_plugin_is_inert(project):
    # Installed through the pytest11 entry point, the plugin must neither act nor import the
    # harness's machinery in a suite that does not ask for it.
    (project / "test_plain.py").write_text(
        "import sys\n"
        "def test_plain(pytestconfig):\n"
        "    assert pytestconfig.pluginmanager.hasplugin('tracegrade')\n"
        "    assert pytestconfig.pluginmanager.get_plugin('tracegrade-session') is None\n"
        "    heavy = [m for m in sys.modules if m.startswith(('tracegrade.execution', 'tracegrade.rundir', 'tracegrade.graders',\n"
        "             'tracegrade.inputs', 'langgraph'))]\n"
        "    assert heavy == []\n"
    )
    done = pytest_in(project, "test_plain.py")
    assert done.returncode == 0, done.stdout[-3000:]
    assert "1 passed" in done.stdout and not (project / "runs").exists()


def test_with_repeats_every_trial_of_a_question_must_pass(project):
    config = project / "examples" / "tracegrade.yaml"
    text = config.read_text()
    anchor = "  support_desk_regressed:\n"
    config.write_text(text.replace(anchor, anchor + "    repeats: 2\n", 1))
    done = pytest_in(
        project,
        "--tracegrade",
        str(config),
        "--tracegrade-target",
        "support_desk_regressed",
        "-k",
        "cancel_booking or book_consultation",
    )
    assert done.returncode == 2, done.stdout[-3000:]  # the verdict `run` gives
    result = outcomes(done.stdout)
    assert sorted(n.split("::")[-1] for n in result) == ["book_consultation", "cancel_booking"]
    assert set(result.values()) == {"FAILED"}
    assert "trial 0: " in done.stdout and "trial 1: " in done.stdout
    [run_dir] = run_dirs(project)
    with sqlite3.connect(run_dir / "results.sqlite") as db:
        assert db.execute("SELECT count(*) FROM questions").fetchone() == (4,)  # 2 x 2 trials


def test_the_pytest_extra_brings_pytest_into_the_same_environment():
    # `pip install 'tracegrade[pytest]'` (docs/api.md): a pytest from elsewhere cannot see the
    # plugin and answers "unrecognized arguments: --tracegrade".
    from importlib.metadata import metadata

    meta = metadata("tracegrade")
    assert "pytest" in (meta.get_all("Provides-Extra") or [])
    wanted = [r for r in meta.get_all("Requires-Dist") or [] if 'extra == "pytest"' in r]
    assert any(r.startswith("pytest>=") for r in wanted), wanted
    assert any(r.startswith("pytest-xdist") for r in wanted), wanted
    docs = (Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text()
    assert "pip install 'tracegrade[pytest]'" in docs and "python -m pytest --tracegrade" in docs
