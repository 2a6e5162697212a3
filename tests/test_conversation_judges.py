"""Conversation-level judges for the conversations no dataset question describes: a plain
LangGraph app (OpenInference-instrumented, never run by tracegrade) holds a three-turn
conversation over three traces; with a trace policy's `conversation: true`, `grade-traces
--conversations` grades it as one question of its own with the three conversation judges
(goal met, the user never repeated, escalations kept) on the config's judge, a real
OpenAI-compatible server on loopback. Each judge is shown the whole conversation; a judge
outage is exit 3, never a pass; a single turn is not a conversation (skipped)."""

from __future__ import annotations

import asyncio
import json

import pytest
import yaml

from tests import openai_server as loopback
from tests.runs_support import write_project
from tests.test_trace_conversations import TURNS, _converse
from tracegrade.cli import main
from tracegrade.graders.judges.conversation import RepetitionJudge

pytest.importorskip("openinference.instrumentation.langchain")
openai_server = loopback.openai_server

JUDGES = ("conversation_goal_judge", "repetition_judge", "escalation_judge")


def _project(tmp_path, judge_url: str, policy):
    config = write_project(
        tmp_path / "proj",
        questions=["cancel"],  # no question of the dataset opens this conversation
        target={"graders": ["tool_usage_grader"], "concurrency": 1},
        config={"judge": {"provider": "openai-compatible", "base_url": judge_url, "model": "m"}},
    )
    raw = yaml.safe_load(config.read_text())
    raw["targets"]["t"]["trace_policy"] = {"conversation": policy}
    config.write_text(yaml.safe_dump(raw))
    return config


def _archive(tmp_path):
    from tracegrade.capture.tracefile import TraceFileExporter

    archive = tmp_path / "collector" / "traces.jsonl"
    archive.parent.mkdir()
    _converse(tmp_path / "proj", TraceFileExporter(archive), "session-unpaired")
    return archive


def _grade(config, archive, report):
    argv = ["grade-traces", str(archive), "--config", str(config), "--target", "t"]
    return main([*argv, "--conversations", "--quiet", "--json", str(report)])


def test_an_unpaired_conversation_is_judged_whole_by_the_conversation_judges(
    tmp_path, openai_server
):
    def judge(body):
        prompt = body["messages"][-1]["content"]
        if "no repetition" in prompt:  # the user asked about Paris twice
            return loopback.score(0, "the user asked for Paris again")
        return loopback.score(1, "fine")

    openai_server.responder = judge
    config = _project(tmp_path, openai_server.base_url, True)
    report_path = tmp_path / "graded.json"

    code = _grade(config, _archive(tmp_path), report_path)

    report = json.loads(report_path.read_text())
    (question,) = report["questions"]
    assert question["id"].startswith("trace-")
    graders = {g["id"]: g for g in question["graders"]}
    assert set(JUDGES) <= set(graders)
    assert graders["conversation_goal_judge"]["passed"] is True
    assert graders["escalation_judge"]["passed"] is True
    assert graders["repetition_judge"]["passed"] is False
    assert "Paris again" in graders["repetition_judge"]["reason"]
    assert code == 2  # a conversation judge is must-pass
    prompts = {
        dimension: r.prompt
        for r in openai_server.requests
        for dimension in ("goal met", "no repetition", "escalations kept")
        if dimension in r.prompt
    }
    assert len(prompts) == 3 and len(openai_server.requests) == 3
    for prompt in prompts.values():  # every judge saw the whole conversation
        assert all(turn in prompt for turn in TURNS)
    assert "lookup" in prompts["escalations kept"]  # shown what the agent did


def test_a_judge_outage_is_exit_3_never_a_pass(tmp_path, openai_server):
    openai_server.default = loopback.server_error(500)
    config = _project(tmp_path, openai_server.base_url, ["escalation_judge"])
    report_path = tmp_path / "graded.json"

    code = _grade(config, _archive(tmp_path), report_path)

    assert code == 3
    (question,) = json.loads(report_path.read_text())["questions"]
    (escalation,) = [g for g in question["graders"] if g["id"] == "escalation_judge"]
    assert escalation["error"] is True and escalation["passed"] is not True
    assert not any(g["id"] == "repetition_judge" for g in question["graders"])


def test_a_bad_conversation_policy_is_invalid_input(tmp_path, capsys):
    config = _project(tmp_path, "http://127.0.0.1:9/v1", ["goal_judge"])
    archive = tmp_path / "a.jsonl"
    archive.write_text("")
    argv = ["grade-traces", str(archive), "--config", str(config), "--target", "t"]
    assert main(argv) == 4
    assert "conversation" in capsys.readouterr().err


def test_a_single_turn_is_not_a_conversation():
    judge = RepetitionJudge()
    one = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
    result = asyncio.run(judge.agrade("hi", "yo", one))
    assert result.score is None and not result.error
    assert "not a conversation" in result.reason
