"""What users asked for while trying tracegrade, end to end through the CLI: a `@grader`
returning None is a skip, questions selected by id, agent errors that say where, graders
from an automatic grading module labelled (and a target that opts out)."""

from __future__ import annotations

import json
from pathlib import Path

from harness.cli import main
from tests.runs_support import write_project

NONE_GRADER = """
from graders.code import grader


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
