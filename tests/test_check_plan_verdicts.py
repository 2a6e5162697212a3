"""The verdict breaks the check plan's rules close, each first reproduced on a new user's agent:

- a target whose only grader is a judge panel: every question in panel Review holds the gate
  (exit 2, never "nothing was scored"), and a person's decision is its score (then 0 or 2);
- a verdict is decided on the current rows: `grade` of an interrupted run then `run --resume`
  leaves `show` and `runs` on the resumed run's verdict, and a `grade` made while the run went
  on does not stay its latest grading;
- promote of a trace graded by the trace policy alone;
- `receive` with an empty window: every report and the exit code say nothing to gate (5).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.openai_server import OpenAIServer, score
from tracegrade.cli import main

AGENT = "../tests/helpdesk_agent.py"
PLAIN = """
questions:
  - {id: reset_password, input: "Reset the password for ana."}
  - {id: wiki_access, input: "Grant ana read access to the wiki.", resume: [{approve: true}]}
"""


@pytest.fixture
def three_judges():
    servers = [OpenAIServer().start() for _ in range(3)]
    try:
        yield servers
    finally:
        for s in servers:
            s.stop()


def _panel_project(root: Path, servers, scores) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "data.yaml").write_text(PLAIN)
    members = []
    for i, (server, value) in enumerate(zip(servers, scores, strict=True)):
        server.default = score(value, f"member {i} says {value}")
        members.append({"base_url": server.base_url, "model": f"judge-{i}"})
    root_agent = Path(__file__).resolve().parent / "helpdesk_agent.py"
    config = {
        "version": 1,
        "runs_dir": "runs",
        "judge": {
            "provider": "openai-compatible",
            "base_url": members[0]["base_url"],
            "model": "x",
            "max_attempts": 1,
        },
        "targets": {
            "desk": {
                "agent": f"{root_agent}:build_graph",
                "environment": f"{root_agent}:make_environment",
                "dataset": "data.yaml",
                "graders": [{"id": "relevance_grader", "judges": members}],
                "grading_module": False,
            }
        },
    }
    path = root / "tracegrade.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _answers(root: Path, verdicts: dict[str, str]) -> Path:
    path = root / "answers.yaml"
    rows = [
        {"question": q, "review": "relevance_grader:panel", "answer": a}
        for q, a in verdicts.items()
    ]
    path.write_text(yaml.safe_dump({"by": "ana", "answers": rows}))
    return path


def test_a_panel_only_target_holds_the_gate_until_a_person_decides(tmp_path, three_judges, capsys):
    config = _panel_project(tmp_path / "p", three_judges, [1, 5, 5])
    out_json = tmp_path / "r.json"
    code = main(["run", "--config", str(config), "--quiet", "--json", str(out_json)])
    out = capsys.readouterr()
    assert code == 2, out.out + out.err  # held in Review, never "nothing was scored" (3)
    report = json.loads(out_json.read_text())
    assert "nothing was scored" not in " ".join(report["gate"]["targets"]["desk"]["reasons"])
    run_id = report["run_id"]
    both = {"reset_password": "pass", "wiki_access": "pass"}
    assert (
        main(["label", run_id, "--config", str(config), "--answers", str(_answers(tmp_path, both))])
        == 0
    )
    capsys.readouterr()
    assert main(["show", run_id, "--config", str(config), "--quiet"]) == 0
    assert main(["grade", run_id, "--config", str(config), "--quiet"]) == 0
    assert main(["show", run_id, "--config", str(config), "--quiet"]) == 0
    one_fails = {"wiki_access": "fail"}
    assert (
        main(
            [
                "label",
                run_id,
                "--config",
                str(config),
                "--answers",
                str(_answers(tmp_path, one_fails)),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["show", run_id, "--config", str(config), "--quiet"]) == 2


# -- a verdict decided on the current rows ------------------------------------------------
HELPDESK = Path(__file__).resolve().parent / "helpdesk_agent.py"


def _helpdesk_project(root: Path) -> Path:
    from tests.helpdesk_agent import DATASET

    root.mkdir(parents=True, exist_ok=True)
    (root / "data.yaml").write_text(DATASET)
    config = {
        "version": 1,
        "runs_dir": "runs",
        "targets": {
            "desk": {
                "agent": f"{HELPDESK}:build_graph",
                "environment": f"{HELPDESK}:make_environment",
                "dataset": "data.yaml",
                "graders": ["tool_usage_grader", "state_grader", "format_grader"],
                "grading_module": False,
            }
        },
    }
    path = root / "tracegrade.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _forget(run_dir: Path, question_id: str) -> None:
    """What a run killed before `question_id` was committed leaves: no row for it."""
    import sqlite3

    with sqlite3.connect(run_dir / "results.sqlite") as db:
        for table in ("questions", "grades", "scores"):
            db.execute(f"DELETE FROM {table} WHERE question_id = ?", (question_id,))


def test_grade_then_resume_leaves_show_and_runs_on_the_resumed_verdict(tmp_path, capsys):
    config = _helpdesk_project(tmp_path / "p")
    report = tmp_path / "r.json"
    assert main(["run", "--config", str(config), "--quiet", "--json", str(report)]) == 0
    run_id = json.loads(report.read_text())["run_id"]
    _forget(tmp_path / "p" / "runs" / run_id, "wiki_access")
    assert main(["grade", run_id, "--config", str(config), "--quiet"]) == 3  # 1 of 3 missing
    assert main(["run", "--resume", run_id, "--config", str(config), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["show", run_id, "--config", str(config), "--quiet"]) == 0
    shown = capsys.readouterr()
    assert "no result" not in shown.out + shown.err
    assert main(["runs", "--config", str(config)]) == 0
    listed = capsys.readouterr().out
    line = next(x for x in listed.splitlines() if run_id in x)
    assert "INCOMPLETE" not in line and "exit 3" not in line, listed


def test_a_grade_made_while_the_run_went_on_is_not_its_verdict(tmp_path, capsys):
    import threading

    from tracegrade import load_config, start_run

    config = _helpdesk_project(tmp_path / "p")
    graded: list[int] = []

    def grade_mid_run(question) -> None:
        if graded:
            return
        run_dir = next((tmp_path / "p" / "runs").iterdir())
        argv = ["grade", str(run_dir), "--config", str(config), "--quiet"]
        worker = threading.Thread(target=lambda: graded.append(main(argv)))
        worker.start()
        worker.join()

    outcome = start_run(load_config(config), on_done=grade_mid_run)
    assert graded and outcome.exit_code == 0
    capsys.readouterr()
    assert main(["show", outcome.run_id, "--config", str(config), "--quiet"]) == 0


# -- promote of a production trace graded only by the trace policy ---------------------------
def test_a_trace_graded_by_the_policy_alone_promotes_with_its_expectations(tmp_path, capsys):
    from tests.test_grade_traces import _project
    from tests.test_trace_policy import _archive, _stranger

    config = _project(tmp_path / "proj")
    archive = _archive(tmp_path, _stranger("2" * 32, ["lookup", "cancel"]))
    report = tmp_path / "r.json"
    argv = ["grade-traces", str(archive), "--config", str(config), "--target", "t", "--quiet"]
    assert main([*argv, "--forbid", "cancel", "--max-calls", "3", "--json", str(report)]) == 2
    run_id = json.loads(report.read_text())["run_id"]
    qid = "trace-" + "2" * 32
    promote = ["dataset", "promote", run_id, "--id", qid, "--to", "prod", "--config", str(config)]
    code = main(promote)
    out = capsys.readouterr()
    assert code == 0, out.err
    assert main(["dataset", "export", "prod", "--config", str(config)]) == 0
    (row,) = yaml.safe_load(capsys.readouterr().out)["questions"]
    # the policy's forbidden tools and limits are the new question's expectations
    assert row["trajectory"] == {"forbid": ["cancel"], "max_calls": 3}
    assert row["input"] == "delete my account" and "goal" not in row


# -- receive with an empty window --------------------------------------------------------
def test_an_empty_receive_window_says_and_exits_nothing_to_gate_everywhere(tmp_path):
    from tests.test_grade_traces import _project
    from tests.test_receive import _start_cli

    config = _project(tmp_path / "proj")
    report = tmp_path / "r.json"
    process, _url = _start_cli(config, "--window", "0.5", "--gate", "--json", str(report))
    out, err = process.communicate(timeout=60)
    assert process.returncode == 5, err
    assert "FAILED" not in out + err and "exit 2" not in out + err
    assert "nothing to gate (exit 5)" in out
    assert json.loads(report.read_text())["gate"]["exit_code"] == 5


# -- grade --current reads the plan too -------------------------------------------------------
def test_grade_current_attaches_the_owner_of_a_key_the_config_no_longer_leaves_unchecked(
    tmp_path, capsys
):
    from tests.test_check_plan import BROKEN, DATASET, _config
    from tests.test_safe_defaults import project

    path = project(
        tmp_path, BROKEN, DATASET, _config(unchecked=["trajectory", "expected_interrupts"])
    )
    report = tmp_path / "r.json"
    assert main(["run", "--config", str(path), "--quiet", "--json", str(report)]) == 0
    run_id = json.loads(report.read_text())["run_id"]
    path.write_text(_config())  # nothing left unchecked now
    regraded = tmp_path / "g.json"
    code = main(
        ["grade", run_id, "--config", str(path), "--current", "--quiet", "--json", str(regraded)]
    )
    assert code == 2, capsys.readouterr()
    failed = {
        q["id"] for q in json.loads(regraded.read_text())["questions"] if q["passed"] is False
    }
    assert failed == {"admin_request", "wiki_access"}
