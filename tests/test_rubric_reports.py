"""Rubric verdicts a person can read: every check in the JSON report, failed critical and
required checks as named JUnit failures, critical failures and Review checks named with their
question on the console and in Markdown."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from tracegrade import QuestionResult, RunOutcome
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


def check(cid: str, status: str, *, severity="major", required=True, reason="", **extra):
    return {
        "id": cid,
        "version": "1.0.0",
        "rubric": "desk",
        "rubric_version": "1.0.0",
        "rubric_ref": "rubric/desk@1.0.0",
        "kind": "tool-claim",
        "status": status,
        "severity": severity,
        "required": required,
        "reason": reason,
        **extra,
    }


CHECKS = [
    check(
        "booking-claim",
        "fail",
        severity="critical",
        reason="claimed; last book_appointment failed",
        outcome="claimed",
        probabilities={"claimed": 0.97, "not_claimed": 0.03},
        confidence=0.91,
        rule="claimed + tool failed -> fail",
        evidence={"fields": ["toolEvents"], "tool_event_ids": ["call_3"]},
    ),
    check("follows-policy", "fail", reason="refund over the limit issued"),
    check("escalation", "review", reason="missing evidence: policy"),
    check("tone", "review", required=False, severity="minor", reason="insufficient context"),
    check("grounded", "pass", required=False, reason="supported"),
    check("no-advice", "skipped", reason="applies only when metadata.topic = 'medical'"),
]


def outcome() -> RunOutcome:
    rubric = GraderVerdict(
        grader_id="rubric_judge",
        score=0.0,
        min_score=0.0,
        max_score=1.0,
        reason="desk@1.0.0: 0 of 2 decided required checks pass",
        checks=[dict(c) for c in CHECKS],
    )
    clean = GraderVerdict(
        grader_id="relevance_grader", score=5.0, min_score=0.0, max_score=5.0, reason="on topic"
    )
    questions = [
        score_question(QuestionResult(id="refund", target="desk", graders=[rubric, clean])),
        score_question(
            QuestionResult(
                id="book",
                target="desk",
                graders=[
                    GraderVerdict(
                        grader_id="relevance_grader",
                        score=5.0,
                        min_score=0.0,
                        max_score=5.0,
                        reason="on topic",
                    )
                ],
            )
        ),
    ]
    verdict = evaluate_gate(questions, GateConfig(zero_critical_failures=True))
    target = TargetResult(
        target="desk",
        mode="agent",
        dataset="d.yaml",
        questions=questions,
        verdict=verdict,
        graders=summarise_graders(questions),
        advisories=[],
    )
    return RunOutcome("run-1", Path("runs/run-1"), [target], None, 1, [])


def test_every_check_is_in_the_json_report_with_all_it_recorded():
    report = json.loads(json.dumps(build_json_report(outcome()), default=str))
    refund = next(q for q in report["questions"] if q["id"] == "refund")
    assert [c["id"] for c in refund["checks"]] == [c["id"] for c in CHECKS]
    claim = refund["checks"][0]
    assert claim["grader"] == "rubric_judge" and claim["status"] == "fail"
    for key in ("outcome", "probabilities", "confidence", "rule", "evidence", "reason"):
        assert claim[key] == CHECKS[0][key]
    optional = {c["id"]: c for c in refund["checks"]}
    assert optional["tone"]["required"] is False and optional["grounded"]["status"] == "pass"
    book = next(q for q in report["questions"] if q["id"] == "book")
    assert book["checks"] == []


def test_failed_critical_and_required_checks_are_named_junit_failures():
    root = ET.fromstring(render_junit(outcome()))
    case = next(c for c in root.iter("testcase") if c.get("name") == "refund")
    messages = [f.get("message") for f in case.findall("failure")]
    assert messages == [
        "critical rubric check failed: booking-claim@1.0.0",
        "required rubric check failed: follows-policy@1.0.0",
    ]
    assert case.findall("failure")[0].text == "claimed; last book_appointment failed"
    assert root.get("failures") == "1"  # JUnit counts failed test cases


def test_console_and_markdown_name_critical_failures_and_review_checks_with_their_question():
    for text in (render_console(outcome()), render_markdown(outcome())):
        assert (
            "refund: rubric check booking-claim@1.0.0 critical failed: "
            "claimed; last book_appointment failed"
        ) in text
        assert "refund: rubric check follows-policy@1.0.0 required failed" in text
        assert (
            "refund: rubric check escalation@1.0.0 required in Review: missing evidence: policy"
        ) in text
        assert "refund: rubric check tone@1.0.0 optional in Review" in text
        assert "grounded@1.0.0" not in text and "no-advice@1.0.0" not in text
