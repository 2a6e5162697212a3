"""Advisories (seed 000 "Text-only agent targets")."""

from __future__ import annotations

from tracegrade import GradeResult
from tracegrade.graders import (
    Attachment,
    FormatGrader,
    StateGrader,
    ToolUsageGrader,
    advisories,
    text_only,
)
from tracegrade.graders.advisories import fallback_action_graders, skipping_action_graders

TOOLS, STATE, FORMAT = ToolUsageGrader(), StateGrader(), FormatGrader()


def test_text_only():
    assert text_only("agent", [Attachment(FORMAT)])
    assert text_only("agent", [])
    assert not text_only("agent", [Attachment(FORMAT), Attachment(TOOLS)])
    assert not text_only("chat", [Attachment(FORMAT)])
    assert [a.kind for a in advisories("agent", [Attachment(FORMAT)])] == ["text_only"]
    assert advisories("chat", [Attachment(FORMAT)]) == []


def test_attached_observer_that_skipped_every_question():
    attached = [Attachment(TOOLS), Attachment(STATE), Attachment(FORMAT)]
    results = {
        "q1": [
            TOOLS.result(None, "no expected_tools in context, skipping"),
            STATE.result(5.0, "all 1 state assertion passed"),
            FORMAT.result(None, "skip"),
        ],
        "q2": [
            TOOLS.result(None, "no expected_tools in context, skipping"),
            STATE.result(None, "no metadata.state in context, skipping"),
            FORMAT.result(None, "skip"),
        ],
    }
    assert skipping_action_graders(attached, results) == ["tool_usage_grader"]
    notes = advisories("agent", attached, results)
    assert [(n.kind, n.grader_id) for n in notes] == [
        ("skipped_every_question", "tool_usage_grader")
    ]
    # an error is not a skip
    errored = {"q1": [TOOLS.result(None, "record incomplete", True)]}
    assert skipping_action_graders(attached, errored) == []


def test_fallback_verdicts_are_reported():
    attached = [Attachment(TOOLS)]
    context = {"expected_tools": [{"tool": "a", "should_run": True}], "messages": []}
    fell_back = TOOLS.grade("", "a()", context)
    assert fallback_action_graders(attached, [[fell_back]]) == ["tool_usage_grader"]
    notes = advisories("agent", attached, [[fell_back]])
    assert [n.kind for n in notes] == ["no_record"]
    assert "no tool-call record available" in notes[0].message


def test_a_chat_mode_target_whose_record_observer_read_the_text_gets_the_advisory(tmp_path, capsys):
    # A chat-mode target has no tool-call record: tool_usage_grader falls back to the response
    # text, and the run says so (it never did: advisories were for agent targets only).
    from tests.runs_support import write_project
    from tracegrade.cli import main

    config = write_project(
        tmp_path,
        questions=["paris"],
        target={"agent": None, "chat_model": "agent.py:build_chat_model"},
    )
    main(["run", "--config", str(config)])
    out = capsys.readouterr().out
    assert "tool_usage_grader: no tool-call record available for some questions" in out
    notes = advisories(
        "chat",
        [Attachment(TOOLS)],
        [
            [
                TOOLS.grade(
                    "",
                    "a()",
                    {"expected_tools": [{"tool": "a", "should_run": True}], "messages": []},
                )
            ]
        ],
    )
    assert [n.kind for n in notes] == ["no_record"]


def test_the_rubric_judge_is_text_only_unless_its_rubric_decides_on_the_record():
    from tracegrade.graders.rubrics.rubric_judge import RubricJudgeGrader

    assert not RubricJudgeGrader.observes_actions
    judge = Attachment(RubricJudgeGrader)
    assert text_only("agent", [judge])  # before any result: nothing it will read is known
    prose = GradeResult(
        grader_id="rubric_judge",
        score=1.0,
        reason="",
        min_score=0,
        max_score=1,
        details={"observes_actions": False},
    )
    record = GradeResult(
        grader_id="rubric_judge",
        score=1.0,
        reason="",
        min_score=0,
        max_score=1,
        details={"observes_actions": True},
    )
    assert [a.kind for a in advisories("agent", [judge], [[prose]])] == ["text_only"]
    assert advisories("agent", [judge], [[record]]) == []


def test_a_run_whose_rubric_judge_decided_on_the_record_is_not_called_text_only():
    """The run's advisories read the stored verdicts: a rubric judge whose tool-claim check was
    decided on the tool-call record (`details["observes_actions"]`) observed actions, in a held
    verdict and in a streamed one (the console's digest) alike."""
    from types import SimpleNamespace

    from tracegrade import QuestionResult
    from tracegrade.execution.run.lifecycle import _advisories
    from tracegrade.graders.rubrics.rubric_judge import RubricJudgeGrader
    from tracegrade.reports.console import ReportDigest
    from tracegrade.verdicts.scoring import GraderVerdict

    def question(qid: str, observed: bool) -> QuestionResult:
        verdict = GraderVerdict(
            grader_id="rubric_judge",
            score=1.0,
            min_score=0,
            max_score=1,
            details={"observes_actions": observed},
        )
        return QuestionResult(target="desk", id=qid, graders=[verdict])

    attached = [SimpleNamespace(attachment=Attachment(RubricJudgeGrader))]
    prose, record = question("q1", False), question("q2", True)
    assert [m.split(":")[0] for m in _advisories("agent", attached, [prose])] == ["Text only"]
    assert _advisories("agent", attached, [prose, record]) == []
    digest = ReportDigest()
    for q in (prose, record):
        digest.add(q)
    assert _advisories("agent", attached, digest.witnesses) == []
