"""What users asked for while trying tracegrade, end to end through the CLI: a `@grader`
returning None is a skip, questions selected by id, agent errors that say where, graders
from an automatic grading module labelled (and a target that opts out)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from tests.runs_support import write_project

NONE_GRADER = '''
from graders.code import grader


@grader(name="only_when_tagged")
def only_when_tagged(question, output):
    if "tagged" not in (question.get("tags") or []):
        return None  # not applicable here
    return "sunny" in output
'''


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
