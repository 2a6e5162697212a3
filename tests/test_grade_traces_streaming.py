"""grade-traces holds a bounded number of results whatever the archive's size: the verdict and
the console report are folded from the store a page at a time (counted, never timed)."""

from __future__ import annotations

import gc
import json
import secrets
from pathlib import Path

import pytest

from tests.runs_support import QUESTIONS, write_project
from tracegrade import QuestionResult
from tracegrade.cli import main

TRAJECTORY = {
    "paris": {"calls": [{"tool": "lookup", "args": {"city": "Paris"}}]},
    "rome": {"calls": [{"tool": "lookup"}]},
    "cancel": {"calls": [{"tool": "cancel", "args": {"booking_id": "B100"}}]},
}
COPIES = 100  # of each of the run's 3 traces: 300 graded traces


def _project(root: Path) -> Path:
    rows = []
    for qid in ("paris", "rome", "cancel"):
        row = dict(QUESTIONS[qid])
        row["trajectory"] = TRAJECTORY[qid]
        rows.append(row)
    graders = ["tool_usage_grader", {"id": "trajectory_grader", "must_pass": True}]
    return write_project(
        root, questions=[], extra_questions=rows, target={"graders": graders, "concurrency": 1}
    )


def _archive(trace_file: Path, out: Path, copies: int) -> None:
    """The run's traces copied under fresh trace ids (tracegrade's own spans: each pairs by
    its question id)."""
    by_trace: dict[str, list[str]] = {}
    for line in trace_file.read_text().splitlines():
        spans = json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]
        by_trace.setdefault(spans[0]["traceId"], []).append(line)
    with out.open("w") as f:
        for _ in range(copies):
            for trace, lines in by_trace.items():
                fresh = secrets.token_hex(16)
                f.writelines(line.replace(trace, fresh) + "\n" for line in lines)


class _Live:
    """How many question results exist at once, at most: counted among the live objects each
    time a few more were made."""

    def __init__(self) -> None:
        self.most = self.made = 0

    def born(self) -> None:
        self.made += 1
        if self.made % 4 == 0:
            live = sum(1 for o in gc.get_objects() if type(o) is QuestionResult)
            self.most = max(self.most, live)


@pytest.fixture
def live(monkeypatch):
    counter = _Live()
    init = QuestionResult.__init__

    def counted_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        counter.born()

    monkeypatch.setattr(QuestionResult, "__init__", counted_init)
    return counter


def test_grading_an_archive_holds_a_bounded_number_of_results(tmp_path, monkeypatch, capsys, live):
    config = _project(tmp_path / "proj")
    ran = tmp_path / "ran.json"
    assert main(["run", "--config", str(config), "--quiet", "--json", str(ran)]) == 2
    run_id = json.loads(ran.read_text())["run_id"]
    archive = tmp_path / "archive.jsonl"
    _archive(tmp_path / "proj" / "runs" / run_id / "traces" / "t.jsonl", archive, COPIES)
    # small bounds, so that a bound held is told from everything held: 300 results
    monkeypatch.setattr("tracegrade.traces.grade.COMMIT_BATCH", 8)
    monkeypatch.setattr("tracegrade.rundir.store.SCORE_PAGE", 20)
    monkeypatch.setattr("tracegrade.reports.console.KEPT", 5)
    capsys.readouterr()
    live.most = live.made = 0
    argv = ["grade-traces", str(archive), "--config", str(config), "--target", "t", "--quiet"]
    assert main(argv) == 2  # rome never calls lookup: its must-pass grader fails
    out = capsys.readouterr().out
    assert live.made >= 2 * 3 * COPIES  # each graded, then read back for the verdict
    # at most a commit batch, a page, the worst and costliest kept, a witness per grader
    assert live.most <= 8 + 20 + 2 * (2 * 5 + 1) + 3 * 3, live.most
    # the report still says what it did and what it found, over every trace
    assert f"paired {3 * COPIES} trace(s) with 3 of 3 question(s)" in out
    assert f"{2 * COPIES} must-pass failure(s)" in out
    assert f"trials (k = {COPIES})" in out
    assert "rome: 0/100 passed" in out
    assert "worst questions:" in out


def test_the_reports_that_list_every_question_read_them_all_from_the_store(tmp_path):
    config = _project(tmp_path / "proj")
    ran = tmp_path / "ran.json"
    assert main(["run", "--config", str(config), "--quiet", "--json", str(ran)]) == 2
    run_id = json.loads(ran.read_text())["run_id"]
    archive = tmp_path / "archive.jsonl"
    _archive(tmp_path / "proj" / "runs" / run_id / "traces" / "t.jsonl", archive, 4)
    report, markdown = tmp_path / "graded.json", tmp_path / "graded.md"
    argv = ["grade-traces", str(archive), "--config", str(config), "--target", "t", "--quiet"]
    assert main([*argv, "--json", str(report), "--markdown", str(markdown)]) == 2
    graded = json.loads(report.read_text())
    assert sorted((q["id"], q["trial"]) for q in graded["questions"]) == sorted(
        (qid, trial) for qid in ("paris", "rome", "cancel") for trial in range(4)
    )
    assert graded["summary"]["t"]["questions"] == 12
    assert "rome" in markdown.read_text()
