"""JUnit stays valid XML whatever an agent's exception holds, and counts test cases."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from tracegrade import QuestionResult, RunOutcome
from tracegrade.inputs.config import GateConfig
from tracegrade.reports.junit import render_junit
from tracegrade.rundir.outcome import TargetResult
from tracegrade.verdicts.gate import evaluate_gate
from tracegrade.verdicts.scoring import (
    GraderVerdict,
    score_question,
    summarise_graders,
)


def _g(gid, score, **kw):
    return GraderVerdict(grader_id=gid, score=score, min_score=0.0, max_score=5.0, reason="r", **kw)


def _outcome(questions):
    questions = [score_question(q) for q in questions]
    target = TargetResult(
        target="t",
        mode="agent",
        dataset="d.yaml",
        questions=questions,
        verdict=evaluate_gate(questions, GateConfig(max_errored=5)),
        graders=summarise_graders(questions),
    )
    return RunOutcome("r", Path("runs/r"), [target], None, 1, [])


def test_control_characters_in_an_agent_error_leave_valid_xml():
    error = "RuntimeError: \x1b[31mboom\x1b[0m \x00\x08 bell\x07 \ud83d ok"
    xml = render_junit(_outcome([QuestionResult(target="t", id="q", error=error)]))
    root = ET.fromstring(xml.encode("utf-8"))  # parses: nothing XML 1.0 forbids is left
    err = root.find(".//error")
    assert err.text == "RuntimeError: [31mboom[0m  bell  ok"
    assert "\x1b" not in err.get("message")


def test_failures_counts_failed_test_cases_not_failure_elements():
    two_failures = QuestionResult(
        target="t",
        id="a",
        graders=[
            _g("x", 1.0, threshold=3.0),
            _g("y", 1.0, threshold=3.0),
        ],
    )
    passing = QuestionResult(target="t", id="b", graders=[_g("x", 5.0, threshold=3.0)])
    root = ET.fromstring(render_junit(_outcome([two_failures, passing])).encode())
    suite = root.find("testsuite")
    assert len(suite.findall(".//failure")) == 2
    assert suite.get("failures") == "1" and root.get("failures") == "1"
    assert suite.get("tests") == "2"
