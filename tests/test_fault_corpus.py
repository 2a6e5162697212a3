"""A corpus of faults that once ended in a false green, an internal error (exit 1 with a
traceback) or hostile text in a report: misbehaving graders, incomplete and partial runs,
changed inputs under `--resume` and `grade`, damaged run directories, files that are not
files, catastrophic patterns, deep and huge answers, control characters in ids and answers.
Every case runs through the CLI and gives its documented exit code and a message naming what
failed (the file, the key, the grader or the question); several also run as the real command in
a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.runs_support import QUESTIONS, write_project
from tracegrade.cli import main
from tracegrade.reports.escaping import md_code, md_text, printable

REPO = Path(__file__).resolve().parents[1]
MUST_PASS_TOOLS = [{"id": "tool_usage_grader", "must_pass": True, "threshold": 5}]


@dataclass
class Case:
    name: str
    setup: Callable[[Path], list[str]]
    """Writes the project under the directory and returns the command's arguments."""
    code: int
    where: str | tuple[str, ...]
    """Text the output must hold (each of them): the file, key, grader or question named."""
    check: Callable[[Path, str], None] | None = None
    """Further assertions on the project directory and the command's output."""
    real: bool = False
    """Also run as the real command in a child process."""


def _run(root: Path, *argv: str) -> int:
    try:
        return main(["run", "--config", str(root / "tracegrade.yaml"), "--quiet", *argv])
    except SystemExit as exc:  # pragma: no cover - argparse usage errors
        return int(exc.code or 0)


def _run_dirs(root: Path) -> list[Path]:
    runs = root / "runs"
    return sorted(p for p in runs.iterdir() if (p / "identity.json").is_file())


def _grading_module(text: str, **project) -> Callable[[Path], list[str]]:
    def setup(root: Path) -> list[str]:
        graders = [{"id": "contains", "match_on": ["expected", "keyword"]}]  # passes both
        write_project(root, **{"target": {"graders": graders}, **project})
        (root / "data" / "graders.py").write_text(text, encoding="utf-8")
        return ["run", "--json", "report.json"]

    return setup


def _strict_json(root: Path, _out: str) -> None:
    def refuse(name: str) -> None:
        raise AssertionError(f"report.json holds a bare {name}")

    json.loads((root / "report.json").read_text(encoding="utf-8"), parse_constant=refuse)


GRADE_RESULT = """
from tracegrade.graders.code import grader
from tracegrade.records import GradeResult


@grader(name="{name}", must_pass=True)
def {name}(output):
    return GradeResult(grader_id="{name}", score={score}, reason="my own number")
"""

FLAT_SCALE = """
from tracegrade.graders.base import Grader


class Flat(Grader):
    id = "flat"
    label = "Flat"
    min_score = 1.0
    max_score = 1.0

    def grade(self, input, response, context):
        return self.result(1.0, "always")


GRADERS = [Flat]
"""


# -- hostile text ---------------------------------------------------------------------------
TERMINAL_ID = "rome\x1b[2J\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07\u202eevil"
HTML_ID = "<script>alert(1)</script>\n## pwned <img src=x onerror=alert(1)>"


def _hostile_ids(root: Path) -> list[str]:
    write_project(
        root,
        questions=[],
        target={"graders": MUST_PASS_TOOLS},
        extra_questions=[
            dict(QUESTIONS["rome"], id=TERMINAL_ID),
            dict(QUESTIONS["rome"], id=HTML_ID),
        ],
    )
    return ["run", "--markdown", "summary.md"]


def _console_escaped(root: Path, out: str) -> None:
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in out, repr(raw)
    assert "rome\\x1b[2J\\x1b]0;pwned\\x07" in out and "\\u202eevil" in out


def _markdown_escaped(root: Path, out: str) -> None:
    summary = (root / "summary.md").read_text(encoding="utf-8")
    assert "<script>" not in summary.replace("`<script>", "")  # only inside a code span
    assert not any(line.startswith("## pwned") for line in summary.splitlines())
    assert "\x1b" not in summary and "\u202e" not in summary
    row = next(line for line in summary.splitlines() if "alert(1)</script>" in line)
    assert row.startswith("| `<script>alert(1)</script> ## pwned <img"), row


CASES = [
    # -- false greens: a grader's own number --------------------------------------------------
    Case(
        "grader-nan-score",
        _grading_module(GRADE_RESULT.format(name="nanny", score='float("nan")')),
        3,
        ("nanny", "not a finite number"),
        check=_strict_json,
    ),
    Case(
        "grader-inf-score",
        _grading_module(GRADE_RESULT.format(name="infinite", score='float("inf")')),
        3,
        ("infinite", "not a finite number"),
        check=_strict_json,
    ),
    Case(
        "grader-score-off-scale",
        _grading_module(GRADE_RESULT.format(name="huge", score="1e6")),
        3,
        ("huge", "outside its declared scale 0-5"),
        check=_strict_json,
        real=True,
    ),
    Case("grader-flat-scale", _grading_module(FLAT_SCALE), 4, ("graders.py", "flat", "max_score")),
    # -- hostile text in reports ----------------------------------------------------------------
    Case(
        "console-control-characters",
        _hostile_ids,
        2,
        "worst questions",
        check=_console_escaped,
        real=True,
    ),
    Case("markdown-html-and-headings", _hostile_ids, 2, "must-pass", check=_markdown_escaped),
]


def _prepare(case: Case, root: Path) -> list[str]:
    root.mkdir(parents=True, exist_ok=True)
    return case.setup(root)


def _expect(case: Case, root: Path, code: int, out: str) -> None:
    assert code == case.code, out
    for where in (case.where,) if isinstance(case.where, str) else case.where:
        assert where in out, f"{where!r} not in:\n{out}"
    assert "Traceback" not in out, out
    if case.check is not None:
        case.check(root, out)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_fault(case: Case, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    argv = _prepare(case, tmp_path)
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    _expect(case, tmp_path, code, out + err)


@pytest.mark.parametrize("case", [c for c in CASES if c.real], ids=lambda c: c.name)
def test_fault_real_command(case: Case, tmp_path: Path) -> None:
    argv = _prepare(case, tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "tracegrade", *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )
    _expect(case, tmp_path, proc.returncode, proc.stdout + proc.stderr)


def test_corpus_names_every_case_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


UNSAFE = ["\x1b", "\x07", "\x00", "\x9b", "\u202e", "\u2066", "\u200f"]


@given(st.text())
def test_printable_leaves_no_control_or_bidi_character(text: str) -> None:
    shown = printable(text)
    assert not any(c in shown for c in UNSAFE)
    assert shown.count("\n") == text.count("\n")


@given(st.text())
def test_markdown_text_and_code_stay_on_one_line_without_markup(text: str) -> None:
    for shown in (md_text(text), md_code(text)):
        assert "\n" not in shown and "\r" not in shown
        assert not any(c in shown for c in UNSAFE)
        assert shown.replace("\\|", "").count("|") == 0  # never splits a table cell
    assert "<" not in md_text(text)
    code = md_code(text)
    fence = code[: len(code) - len(code.lstrip("`"))]
    inner = code[len(fence) : len(code) - len(fence)]
    assert code.endswith(fence) and fence not in inner  # nothing inside ends the span
