"""What users asked for while trying tracegrade, end to end through the CLI: a `@grader`
returning None is a skip, questions selected by id, agent errors that say where, graders
from an automatic grading module labelled (and a target that opts out)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.runs_support import write_project
from tracegrade.cli import main

NONE_GRADER = """
from tracegrade.graders.code import grader


@grader(name="only_when_tagged")
def only_when_tagged(question, output):
    if "tagged" not in (question.get("tags") or []):
        return None  # not applicable here
    return "sunny" in output
"""


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def report(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_a_grader_returning_none_skips_and_does_not_degrade(capsys, tmp_path: Path) -> None:
    config = write_project(tmp_path, questions=["paris"])
    (tmp_path / "data" / "graders.py").write_text(NONE_GRADER, encoding="utf-8")
    out = tmp_path / "r.json"
    code, _, err = run_cli(capsys, "run", "--config", str(config), "--json", str(out))
    assert code == 0, err  # not 3: nothing was degraded
    [question] = report(out)["questions"]
    assert not question["degraded"]
    result = next(g for g in question["graders"] if g["id"] == "only_when_tagged")
    assert result["skipped"] is True and not result["error"]


def asked(path: Path) -> list[str]:
    return sorted(q["id"] for q in report(path)["questions"])


def test_run_selects_questions_by_id_and_glob(capsys, tmp_path: Path) -> None:
    config = write_project(tmp_path, questions=["paris", "rome", "echo", "remember"])
    out = tmp_path / "r.json"
    args = ["run", "--config", str(config), "--json", str(out), "--quiet"]
    code, _, err = run_cli(capsys, *args, "--id", "rome", "--id", "e*")
    assert code in (0, 2), err
    assert asked(out) == ["echo", "rome"]
    run_id = report(out)["run_id"]
    # grade re-scores only the selected questions of the stored run
    code, _, err = run_cli(
        capsys, "grade", run_id, "--config", str(config), "--json", str(out), "--id", "r*"
    )
    assert code in (0, 2), err
    assert asked(out) == ["rome"]


def test_an_id_that_names_no_question_is_a_typo(capsys, tmp_path: Path) -> None:
    config = write_project(tmp_path, questions=["paris", "rome"])
    code, _, err = run_cli(capsys, "run", "--config", str(config), "--id", "pariss")
    assert code == 4
    assert "at --id: no question has id 'pariss' (did you mean 'paris'?)" in err
    assert not (tmp_path / "runs").exists()
    code, _, err = run_cli(capsys, "run", "--config", str(config), "--id", "zz*")
    assert code == 5  # a glob matching nothing: nothing to run
    assert "--id zz*" in err


HUGE = """

def _huge(messages):
    raise RuntimeError("x" * 1_000_000)


SCRIPT["huge please"] = [_huge]
"""


def test_agent_error_names_the_agents_own_frame(capsys, tmp_path: Path) -> None:
    config = write_project(tmp_path, questions=["paris", "crash"])
    agent = (tmp_path / "agent.py").read_text()
    line = next(n for n, text in enumerate(agent.splitlines(), 1) if "model exploded" in text)
    out = tmp_path / "r.json"
    code, stdout, err = run_cli(capsys, "run", "--config", str(config), "--json", str(out))
    assert code == 3
    crash = next(q for q in report(out)["questions"] if q["id"] == "crash")
    assert crash["error"].startswith("RuntimeError: model exploded (at ")
    assert crash["error"].endswith(f"agent.py:{line} in _crash)")
    assert f"agent.py:{line} in _crash" in stdout + err  # the console says where too


def test_verbose_traceback_has_no_unrelated_chained_error(tmp_path: Path) -> None:
    import subprocess
    import sys

    config = write_project(tmp_path, questions=["crash"])
    proc = subprocess.run(
        [sys.executable, "-m", "tracegrade", "-v", "run", "--config", str(config), "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert proc.returncode == 3, proc.stderr
    start = proc.stderr.index("agent raised on question crash:")
    shown = proc.stderr[start:]
    assert 'agent.py", line' in shown and "in _crash" in shown
    assert "RuntimeError: model exploded" in shown
    assert "no running event loop" not in proc.stderr
    assert "During handling of the above exception" not in shown


def test_a_huge_agent_error_is_cut_in_the_store_and_reports(capsys, tmp_path: Path) -> None:
    import sqlite3

    from tracegrade.execution.question.errortext import MAX_ERROR_CHARS

    config = write_project(
        tmp_path, questions=["paris"], extra_questions=[{"id": "huge", "input": "huge please"}]
    )
    with (tmp_path / "agent.py").open("a", encoding="utf-8") as agent:
        agent.write(HUGE)
    out, md = tmp_path / "r.json", tmp_path / "r.md"
    code, stdout, err = run_cli(
        capsys, "run", "--config", str(config), "--json", str(out), "--markdown", str(md)
    )
    assert code == 3
    huge = next(q for q in report(out)["questions"] if q["id"] == "huge")
    assert len(huge["error"]) <= MAX_ERROR_CHARS
    assert "more characters)" in huge["error"] and "in _huge)" in huge["error"]
    run_dir = next(p for p in (tmp_path / "runs").iterdir() if (p / "results.sqlite").is_file())
    with sqlite3.connect(run_dir / "results.sqlite") as db:
        longest = db.execute("SELECT max(length(error)) FROM questions").fetchone()[0]
    assert longest <= MAX_ERROR_CHARS
    assert len(stdout + err) < 100_000
    assert len(md.read_text(encoding="utf-8")) < 100_000


def test_automatic_grading_module_is_labelled_and_can_be_opted_out(capsys, tmp_path: Path) -> None:
    config = write_project(tmp_path, questions=["paris"], grading_module=True)
    code, out, err = run_cli(capsys, "targets", "--config", str(config))
    assert code == 0, err
    assert "(automatic: graders.py beside the dataset; `grading_module: false` opts out)" in out
    assert "says_sunny: says_sunny (0-1) (from the automatic grading module)" in out
    code, out, err = run_cli(capsys, "run", "--config", str(config), "--quiet")
    assert "graders from the automatic grading module" in out + err
    assert "says_sunny; `grading_module: false` on the target opts out" in out + err

    config = write_project(
        tmp_path, questions=["paris"], grading_module=True, target={"grading_module": False}
    )
    code, out, err = run_cli(capsys, "targets", "--config", str(config))
    assert code == 0, err
    assert "says_sunny" not in out and "grading module" not in out
    json_out = tmp_path / "r.json"
    code, out, err = run_cli(capsys, "run", "--config", str(config), "--json", str(json_out))
    [question] = report(json_out)["questions"]
    assert {g["id"] for g in question["graders"]} == {"tool_usage_grader", "contains"}


def test_grading_module_must_be_a_path_or_false(capsys, tmp_path: Path) -> None:
    config = write_project(tmp_path, target={"grading_module": True})
    code, _, err = run_cli(capsys, "validate", str(config))
    assert code == 4
    assert (
        "at /targets/t/grading_module: grading_module must be a path to a Python file, or false"
        in err
    )
