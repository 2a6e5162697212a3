"""Reports against golden files (regenerate with UPDATE_GOLDEN=1 after a deliberate change)."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tracegrade import QuestionResult, RunManifest, RunOutcome
from tracegrade.cost.pricing import PriceTable, priced, question_usage
from tracegrade.cost.usage import ModelCall, QuestionUsage
from tracegrade.inputs.config import GateConfig
from tracegrade.reports.console import render_console
from tracegrade.reports.json_report import build_json_report
from tracegrade.reports.junit import render_junit
from tracegrade.reports.markdown import render_markdown
from tracegrade.rundir.outcome import TargetResult
from tracegrade.verdicts.gate import evaluate_gate
from tracegrade.verdicts.scoring import (
    GraderVerdict,
    score_question,
    summarise_graders,
)

GOLDEN = Path(__file__).resolve().parent / "golden"
PRICES = PriceTable.build({"scripted-desk": {"input": 0.4, "output": 1.6}})


def _usage(model: str, calls: int, wall: float, *, judge: int = 0) -> QuestionUsage:
    usage = question_usage(
        [ModelCall(model, 1200, 80, latency_s=0.25)] * calls,
        wall_s=wall,
        tools={"lookup_customer": [0.01 * calls], "book_appointment": [0.02]},
        prices=PRICES,
    )
    usage.judges = priced([ModelCall("gpt-4o-mini", 900, 30)] * judge, PRICES)
    return usage


def _g(gid, score, hi=5.0, **kw):
    return GraderVerdict(
        grader_id=gid, score=score, min_score=0.0, max_score=hi, reason=kw.pop("reason", "ok"), **kw
    )


def outcome() -> RunOutcome:
    questions = [
        QuestionResult(
            id="book",
            target="desk",
            split="test",
            bundle="bookings",
            tags=["booking"],
            trace_id="a" * 32,
            usage=_usage("scripted-desk", 3, 1.5, judge=1),
            graders=[
                _g("tool_usage_grader", 5.0, must_pass=True, threshold=5.0),
                _g("groundedness_grader", 1.0, hi=1.0, binary=True),
            ],
        ),
        QuestionResult(
            id="cancel",
            target="desk",
            split="test",
            bundle="cancellations",
            trace_id="b" * 32,
            usage=_usage("my-local-llama", 2, 0.9),
            graders=[
                _g(
                    "tool_usage_grader",
                    2.5,
                    must_pass=True,
                    threshold=5.0,
                    reason="1 of 2 tool expectations met; unmet: `cancel_booking`: never called",
                ),
                _g("groundedness_grader", 0.0, hi=1.0, binary=True, reason="claims a cancellation"),
            ],
        ),
        QuestionResult(
            id="refund",
            target="desk",
            split="validation",
            trace_id="c" * 32,
            usage=_usage("scripted-desk", 2, 1.1),
            graders=[
                _g("tool_usage_grader", 5.0, must_pass=True, threshold=5.0),
                _g(
                    "groundedness_grader",
                    None,
                    hi=1.0,
                    binary=True,
                    error=True,
                    reason="provider unreachable: HTTP 503 after 4 attempts",
                ),
            ],
        ),
        QuestionResult(
            id="slow",
            target="desk",
            trace_id="d" * 32,
            error="timed out after 30s",
            error_type="TimeoutError",
        ),
    ]
    questions = [score_question(q) for q in questions]
    verdict = evaluate_gate(questions, GateConfig(min_mean_composite=3.5, max_errored=2))
    target = TargetResult(
        target="desk",
        mode="agent",
        dataset="datasets/desk.yaml",
        questions=questions,
        verdict=verdict,
        graders=summarise_graders(questions),
        advisories=[],
    )
    # a manifest of two keys (`model_construct`: no other key is set, so none is written)
    manifest = RunManifest.model_construct(
        run_id="20260101-000000-abcdef", packages={"tracegrade": "0.1.0"}
    )
    return RunOutcome(
        "20260101-000000-abcdef",
        Path("runs/20260101-000000-abcdef"),
        [target],
        manifest,
        1,
        ["desk: resumed 1 of 4 question(s)"],
    )


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_console_report():
    text = render_console(outcome())
    _golden("console.txt", text)
    line = next(x for x in text.splitlines() if x.strip().startswith("groundedness_grader"))
    assert "0.5 / 1" in line and "= 1" in line  # its own denominator, never "/ 5"; pass bar
    assert "gate: FAILED (exit 2)" in text


def test_json_report():
    data = build_json_report(outcome())
    _golden("results.json", json.dumps(data, indent=2) + "\n")
    assert (data["format"], data["version"]) == ("tracegrade.results", 1)
    q = {x["id"]: x for x in data["questions"]}
    assert q["slow"]["error"] == "timed out after 30s" and q["slow"]["composite"] == 0.0
    assert q["refund"]["degraded"] is True
    grader = q["cancel"]["graders"][1]
    assert (grader["score"], grader["min"], grader["max"], grader["mapped"]) == (0.0, 0.0, 1.0, 0.0)
    assert data["gate"]["exit_code"] == 2


def test_junit_report():
    text = render_junit(outcome())
    _golden("junit.xml", text)
    root = ET.fromstring(text)
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert [f.get("type") for f in cases["cancel"].findall("failure")] == [
        "tool_usage_grader",
        "groundedness_grader",
    ]
    assert cases["refund"].find("failure") is None
    assert cases["refund"].find("error").get("type") == "groundedness_grader"
    assert cases["slow"].find("error").get("type") == "TimeoutError"  # an error, not a failure
    props = {p.get("name"): p.get("value") for p in cases["book"].iter("property")}
    assert props["trace_id"] == "a" * 32
    # failed test cases, not failure elements ("cancel" holds two)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "1", "2")
    suite = root.find("testsuite").find("properties")
    suite_props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    # the gate's figures sit on the suite, critical failures counted apart from the average
    assert suite_props["gate"] == "failed" and suite_props["exit_code"] == "2"
    assert suite_props["critical_failures"] == "0" and suite_props["must_pass_failures"] == "1"


def test_markdown_report():
    text = render_markdown(outcome())
    _golden("summary.md", text)
    assert text.startswith("## tracegrade run `20260101-000000-abcdef`: gate failed (exit 2)")


@pytest.mark.parametrize("name", ["console.txt", "results.json", "junit.xml", "summary.md"])
def test_golden_files_exist(name):
    assert (GOLDEN / name).stat().st_size > 0
