"""`tracegrade run` and `tracegrade targets` through the real CLI entry point: exit codes,
report files, advisories."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from tests.runs_support import write_project
from tracegrade.cli import main


def test_passing_run_exits_0_and_writes_the_reports_asked_for(tmp_path, capsys):
    path = write_project(tmp_path, questions=["paris"])
    out = tmp_path / "out"
    code = main(
        [
            "run",
            "--config",
            str(path),
            "--json",
            str(out / "r.json"),
            "--junit",
            str(out / "r.xml"),
            "--markdown",
            str(out / "r.md"),
        ]
    )
    captured = capsys.readouterr()
    assert code == 0
    assert "gate: PASSED" in captured.out
    assert "run dir: " in captured.err
    assert "questions," not in captured.err  # no progress line: stderr is not a TTY
    data = json.loads((out / "r.json").read_text())
    assert data["questions"][0]["id"] == "paris" and data["gate"]["exit_code"] == 0
    assert data["identity"]["targets"]["t"]["dataset"]["sha256"]
    assert ET.parse(out / "r.xml").getroot().get("tests") == "1"
    assert (out / "r.md").read_text().startswith("## tracegrade run")


def test_no_report_file_unless_asked(tmp_path, capsys):
    path = write_project(tmp_path, questions=["paris"])
    assert main(["run", "--config", str(path), "--quiet"]) == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "identity.json",
        "results.sqlite",
        "traces",
    ]
    assert not list(tmp_path.glob("*.xml")) and not list(tmp_path.glob("*.json"))


def test_gate_failure_exits_2_and_names_the_failures(tmp_path, capsys):
    graders = [{"id": "tool_usage_grader", "must_pass": True, "threshold": 5}]
    path = write_project(tmp_path, target={"graders": graders})
    code = main(["run", "--config", str(path), "--quiet"])
    out = capsys.readouterr().out
    assert code == 2
    assert "1 must-pass failure(s) (rome: tool_usage_grader)" in out
    assert "rome: composite 0" in out


def test_invalid_config_exits_4_naming_file_line_and_key(tmp_path, capsys):
    path = write_project(tmp_path, target={"timeout": 3})
    code = main(["run", "--config", str(path)])
    err = capsys.readouterr().err
    assert code == 4
    assert f"{path}:" in err and "/targets/t/timeout" in err and "did you mean 'timeout_s'" in err


def test_unknown_grader_is_exit_4(tmp_path, capsys):
    path = write_project(tmp_path, target={"graders": ["tool_usage_gradr"]})
    assert main(["run", "--config", str(path)]) == 4
    assert "did you mean 'tool_usage_grader'" in capsys.readouterr().err


def test_empty_selection_exits_5(tmp_path, capsys):
    path = write_project(tmp_path)
    assert main(["run", "--config", str(path), "--tag", "nothing-has-this"]) == 5
    assert "matched no question" in capsys.readouterr().err


def test_limit_and_target_selection(tmp_path, capsys):
    path = write_project(tmp_path, questions=["paris", "rome"])
    assert main(["run", "--config", str(path), "--target", "t", "--limit", "1", "--quiet"]) == 0
    assert "over 1 question(s)" in capsys.readouterr().out
    assert main(["run", "--config", str(path), "--target", "nope"]) == 4


def test_targets_lists_graders_and_marks_text_only(tmp_path, capsys):
    path = write_project(tmp_path, target={"graders": ["format_grader"]}, grading_module=True)
    assert main(["targets", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "t (agent)  [Text only]" in out
    assert (
        "- format_grader: Format (0-5)" in out
        and "- says_sunny: says_sunny (0-1) (from the automatic grading module)" in out
    )


def test_run_prints_the_text_only_advisory(tmp_path, capsys):
    # expected_tools left unchecked: else the check plan attaches tool_usage_grader
    target = {"graders": ["format_grader"], "unchecked": ["expected_tools"]}
    path = write_project(tmp_path, questions=["paris"], target=target)
    assert main(["run", "--config", str(path), "--quiet"]) == 0
    assert "! Text only" in capsys.readouterr().out


def test_action_grader_that_skips_everything_is_noted(tmp_path, capsys):
    path = write_project(
        tmp_path, questions=["echo"], target={"graders": ["tool_usage_grader", "format_grader"]}
    )
    main(["run", "--config", str(path), "--quiet"])
    out = capsys.readouterr().out
    assert "tool_usage_grader" in out and "skipped every question" in out


class _Tty:
    def __init__(self):
        self.text = ""

    def isatty(self):
        return True

    def write(self, text):
        self.text += text

    def flush(self):
        pass


def test_progress_draws_on_a_tty_and_is_quiet_otherwise():
    from types import SimpleNamespace

    from tracegrade.reports.console import Progress

    tty = _Tty()
    progress = Progress(stream=tty, interval_s=0)
    progress.start(None, 3)
    progress.advance(SimpleNamespace(degraded=False))
    progress.advance(SimpleNamespace(degraded=True))
    assert "2/3 questions, 1 error(s), ETA" in tty.text
    quiet = _Tty()
    Progress(stream=quiet, quiet=True).start(None, 3)
    assert quiet.text == ""
