"""The HTML report's data and its CLI entry points (the page's behaviour in a browser is
tested in test_html_browser.py): what each question carries, redaction, trace links, the
`expected_tools` marks on each call, sub-agent nesting, and `tracegrade report RUN`."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from tests.runs_support import write_project
from tracegrade import Outcome, QuestionAnswer, QuestionResult, RunOutcome, ToolCall, ToolRecord
from tracegrade.cli import main
from tracegrade.inputs.config import GateConfig
from tracegrade.redaction import RedactionPolicy
from tracegrade.reports.html import build_page_data, render_page
from tracegrade.reports.html.data import RESULT_CHARS, build_question, question_verdict, trace_link
from tracegrade.rundir.outcome import TargetResult
from tracegrade.verdicts.gate import evaluate_gate
from tracegrade.verdicts.scoring import GraderVerdict, score_question


def page_data(html: str) -> dict:
    """The JSON the page embeds for its script: its header, and every block of rows taken in
    (in run order, as each row's `i` says)."""
    found = re.search(r'<script type="application/json" id="tg-data">(.*?)</script>', html, re.S)
    assert found, "no embedded data"
    data = json.loads(found.group(1))
    blocks = re.findall(r'<script type="application/json" class="tg-rows">(.*?)</script>', html)
    rows = [q for block in blocks for q in json.loads(block)]
    assert len(rows) == data["total"] and sorted(q["i"] for q in rows) == list(range(len(rows)))
    return {**data, "questions": sorted(rows, key=lambda q: q["i"])}


def call(seq: int, name: str, args: dict, *, outcome=Outcome.OK, agent="desk", depth=0, **kw):
    return ToolCall(
        seq=seq,
        name=name,
        qualified_id=f"{agent}:{name}",
        call_id=f"c{seq}",
        arguments=args,
        outcome=outcome,
        agent=agent,
        depth=depth,
        model_turn=kw.pop("turn", seq),
        index_in_turn=0,
        start_ns=kw.pop("start", 100 * (seq + 1)),
        end_ns=kw.pop("end", 100 * (seq + 1) + 50),
        **kw,
    )


def stored(qid: str, row: dict, **kw) -> QuestionAnswer:
    """What the store kept of question `qid`'s answer (the page reads it beside the result)."""
    return QuestionAnswer(row=row, has_record=True, **kw)


def question(qid: str, *graders: GraderVerdict, error=None) -> QuestionResult:
    return score_question(QuestionResult(id=qid, target="t", graders=list(graders), error=error))


def grader(gid: str, score, *, must=False, error=False, checks=()) -> GraderVerdict:
    return GraderVerdict(
        grader_id=gid,
        score=score,
        min_score=0.0,
        max_score=5.0,
        reason=f"{gid} says so",
        error=error,
        binary=True,
        must_pass=must,
        checks=list(checks),
    )


EXPECTED = [
    {"tool": "lookup", "should_run": True, "args": {"email": "a@example.com"}},
    {"tool": "book", "should_run": True, "args": {"date": "2026-12-03"}, "after": "lookup"},
    {"tool": "refund", "should_run": False},
    {"tool": "cancel", "should_run": True},
]


def test_each_call_shows_the_expected_tools_entry_it_met_or_broke():
    record = ToolRecord(
        [
            call(0, "lookup", {"email": "a@example.com"}),
            call(1, "book", {"date": "2026-12-04"}),
            call(2, "refund", {"amount": 450}),
        ]
    )
    q = build_question(
        question("q", grader("tool_usage_grader", 1.25, must=True)),
        stored=stored("q", {"expected_tools": EXPECTED}),
        record=record,
    )
    marks = {c["n"]: c["m"] for c in q["calls"]}
    assert marks["lookup"] == [{"i": 0, "ok": True, "why": ""}]
    assert marks["book"] == [
        {
            "i": 1,
            "ok": False,
            "why": "wrong arguments: date: expected '2026-12-03', got '2026-12-04'",
        }
    ]
    assert marks["refund"] == [{"i": 2, "ok": False, "why": "expected not to run"}]
    # Beside the timeline: every entry with the grader's own verdict; the never-called one unmet.
    met = [(e["label"], e["met"]) for e in q["expected"]]
    assert met == [
        ("lookup with email='a@example.com'", True),
        ("book with date='2026-12-03' after lookup", False),
        ("refund", False),
        ("cancel", False),
    ]
    assert q["expected"][3]["why"] == "expected to run, never called"
    assert q["verdict"] == "failed"


def test_the_expectations_shown_are_the_graders_stored_verdict_when_it_checked_the_record():
    from tracegrade.graders import ToolUsageGrader

    record = ToolRecord(
        [call(0, "lookup", {"email": "a@example.com"}), call(1, "book", {"date": "2026-12-03"})]
    )
    graded = ToolUsageGrader().grade("", "", {"expected_tools": EXPECTED, "tool_calls": record})
    as_run = grader("tool_usage_grader", 2.5).model_copy(update={"details": graded.details})
    row = stored("q", {"expected_tools": EXPECTED})
    shown = build_question(question("q", as_run), stored=row, record=record)
    again = build_question(question("q"), stored=row, record=record)  # not attached: graded here
    assert shown["expected"] == again["expected"] and shown["calls"] == again["calls"]
    assert [e["met"] for e in shown["expected"]] == [True, True, True, False]
    # what the run stored is what the page says (a re-grade here could differ from the run's)
    stored_details = {
        "source": "record",
        "expectations": [
            {**e, "why": "as the run graded it"} if i == 3 else e
            for i, e in enumerate(graded.details["expectations"])
        ],
    }
    as_stored = as_run.model_copy(update={"details": stored_details})
    shown = build_question(question("q", as_stored), stored=row, record=record)
    assert shown["expected"][3]["why"] == "as the run graded it"
    # a verdict on other expectations (the text fallback, another list) is not used
    for details in (
        {**stored_details, "source": "response_text"},
        {"source": "record", "expectations": stored_details["expectations"][:2]},
    ):
        other = as_run.model_copy(update={"details": details})
        shown = build_question(question("q", other), stored=row, record=record)
        assert shown["expected"] == again["expected"]


def test_sub_agent_calls_nest_under_the_call_that_ran_the_sub_agent():
    record = ToolRecord(
        [
            call(0, "lookup", {}, start=100, end=150),
            call(1, "research", {"topic": "x"}, start=200, end=900),
            call(2, "search", {}, agent="researcher", depth=1, start=300, end=350),
            call(3, "read", {}, agent="researcher", depth=1, start=400, end=450),
            call(4, "publish", {}, start=1000, end=1100),
        ]
    )
    q = build_question(question("q"), stored=stored("q", {}), record=record)
    assert [c["p"] for c in q["calls"]] == [None, None, 1, 1, None]
    assert [c["a"] for c in q["calls"]][2:4] == ["researcher", "researcher"]


def test_arguments_and_text_are_redacted_and_results_cut():
    secret = "sk-" + "a" * 40
    args = {"city": "Paris", "api_token": "s3cr3t-value"}
    record = ToolRecord([call(0, "lookup", args, result="x" * (RESULT_CHARS * 3))])
    q = build_question(
        question("q"),
        stored=stored(
            "q",
            {},
            messages=[{"role": "user", "content": f"my key is {secret}"}],
            response=f"used {secret}",
        ),
        record=record,
    )
    text = json.dumps(q)
    assert "s3cr3t-value" not in text and secret not in text
    assert q["calls"][0]["args"]["city"] == "Paris"
    assert (
        len(q["calls"][0]["r"]) <= RESULT_CHARS + 100
        and "[cut: 1,200 characters" in q["calls"][0]["r"]
    )


def test_the_configs_redaction_policy_applies_to_everything_shown():
    policy = RedactionPolicy(patterns=(r"B1\d\d",), names=("booking",))
    record = ToolRecord([call(0, "cancel", {"booking_ref": "B100", "note": "B100 please"})])
    record = ToolRecord([replace(record[0], result='{"cancelled": "B100"}')])
    q = build_question(
        question("q", grader("g", 0)),
        stored=stored(
            "q", {}, messages=[{"role": "user", "content": "cancel B100"}], response="B100 done"
        ),
        record=record,
        redaction=policy,
    )
    assert "B100" not in json.dumps(q)
    assert q["calls"][0]["args"] == {"booking_ref": "(redacted)", "note": "(redacted) please"}


def test_an_absent_record_is_not_an_empty_one():
    absent = build_question(question("q"), stored=QuestionAnswer(), record=None)
    empty = build_question(question("q"), stored=stored("q", {}), record=ToolRecord([]))
    lost = build_question(question("q"), stored=stored("q", {}), record=None)
    assert (absent["record"], empty["record"], lost["record"]) == ("absent", "present", "missing")
    assert absent["calls"] == empty["calls"] == []


@pytest.mark.parametrize(
    ("graders", "error", "verdict"),
    [
        ((grader("g", 5),), None, "passed"),
        ((grader("g", 0),), None, "failed"),
        ((grader("g", None, error=True),), None, "degraded"),
        ((grader("g", 5),), "boom", "errored"),
        (
            (grader("g", 5, checks=[{"id": "c", "status": "review", "required": True}]),),
            None,
            "review",
        ),
        (
            (grader("g", 5, checks=[{"id": "c", "status": "fail", "severity": "critical"}]),),
            None,
            "failed",
        ),
    ],
)
def test_question_verdicts(graders, error, verdict):
    assert question_verdict(question("q", *graders, error=error)) == verdict


def test_trace_links_from_a_template_else_none():
    tid = "ab" * 16
    assert trace_link("http://localhost:16686/trace/{trace_id}", trace_id=tid) == (
        f"http://localhost:16686/trace/{tid}"
    )
    phoenix = "http://localhost:6006/projects/{project}/traces/{trace_id}"
    assert trace_link(phoenix, trace_id=tid, project="desk") == (
        f"http://localhost:6006/projects/desk/traces/{tid}"
    )
    assert trace_link(None, trace_id=tid) is None
    assert trace_link(phoenix, trace_id=None, project="p") is None
    assert trace_link("javascript:alert('{trace_id}')", trace_id=tid) is None
    assert trace_link("http://x/{nope}/{trace_id}", trace_id=tid) is None


def test_markup_in_run_data_cannot_close_the_data_script():
    q = question("q", grader("g", 5))
    outcome = RunOutcome(
        run_id="r1",
        run_dir=Path("."),
        targets=[
            TargetResult(
                target="t",
                mode="agent",
                dataset="d.yaml",
                questions=[q],
                verdict=evaluate_gate([q], GateConfig()),
                graders=[],
            )
        ],
        manifest=None,
        grading_id=1,
    )
    evil = "</script><script>window.pwned=1</script><!--"
    runs = {"t": {("q", 0): stored("q", {}, response=evil)}}
    html = render_page(outcome, build_page_data(outcome, runs=runs, records={}))
    assert evil not in html
    assert page_data(html)["questions"][0]["response"] == evil


# -- the CLI -----------------------------------------------------------------------------------
def test_run_and_show_write_the_page_and_show_exits_with_the_stored_verdict(tmp_path):
    gate = [{"id": "tool_usage_grader", "must_pass": True, "threshold": 5}]
    config = write_project(
        tmp_path,
        target={"graders": gate},
        config={"report": {"trace_url": "http://localhost:16686/trace/{trace_id}"}},
    )
    page = tmp_path / "run.html"
    assert main(["run", "--config", str(config), "--quiet", "--html", str(page)]) == 2
    (run_dir,) = (tmp_path / "runs").iterdir()
    again = tmp_path / "again.html"
    assert main(["show", run_dir.name, "--config", str(config), "--html", str(again)]) == 2
    first, second = page_data(page.read_text()), page_data(again.read_text())
    assert (
        [q["id"] for q in second["questions"]]
        == ["paris", "rome"]
        == [q["id"] for q in first["questions"]]
    )
    paris = second["questions"][0]
    assert paris["trace_url"] == f"http://localhost:16686/trace/{paris['trace_id']}"
    assert paris["calls"][0]["args"]["api_token"] != "s3cr3t-arg-value"
    assert "s3cr3t-arg-value" not in again.read_text()
    assert second["questions"][1]["verdict"] == "failed"


def test_show_writes_the_page_of_a_run_without_a_config(tmp_path):
    config = write_project(tmp_path, questions=["paris"])
    assert main(["run", "--config", str(config), "--quiet"]) == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    before = {p.name: p.stat().st_mtime_ns for p in run_dir.rglob("*") if p.is_file()}
    page = tmp_path / "page.html"
    assert main(["show", str(run_dir), "--html", str(page)]) == 0
    (paris,) = page_data(page.read_text())["questions"]
    assert paris["trace_url"] is None and len(paris["trace_id"]) == 32
    assert [c["n"] for c in paris["calls"]] == ["lookup"]
    after = {p.name: p.stat().st_mtime_ns for p in run_dir.rglob("*") if p.is_file()}
    # Reading a run for its page changes none of its files (SQLite may add its -shm/-wal).
    assert {name: after[name] for name in before} == before


def test_a_trace_url_without_trace_id_is_invalid_config(tmp_path, capsys):
    config = write_project(tmp_path, config={"report": {"trace_url": "http://x/traces"}})
    assert main(["validate", str(config)]) == 4
    assert "/report/trace_url" in capsys.readouterr().err


def test_every_report_command_offers_html(capsys):
    for command in ("run", "grade", "show"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "--html FILE" in capsys.readouterr().out


def test_each_trial_of_a_repeated_question_shows_its_own_calls():
    trials = [question("q", grader("g", 5)).model_copy(update={"trial": k}) for k in (0, 1)]
    outcome = RunOutcome(
        run_id="r1",
        run_dir=Path("."),
        targets=[
            TargetResult("t", "agent", "d.yaml", trials, evaluate_gate(trials, GateConfig()), [])
        ],
        manifest=None,
        grading_id=1,
    )
    runs = {"t": {("q", k): stored("q", {}) for k in (0, 1)}}
    records = {
        "t": {("q", 0): ToolRecord([call(0, "a", {})]), ("q", 1): ToolRecord([call(0, "b", {})])}
    }
    data = build_page_data(outcome, runs=runs, records=records)
    assert [(q["trial"], [c["n"] for c in q["calls"]]) for q in data["questions"]] == [
        (0, ["a"]),
        (1, ["b"]),
    ]
