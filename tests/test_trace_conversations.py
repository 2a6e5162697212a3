"""Production conversations graded whole: a plain LangGraph app (OpenInference-instrumented,
never run by tracegrade) holds a three-turn conversation over three traces tied by its session
id; `grade-traces --conversations` and `receive --conversations` grade it as one question run of
a `turns:` question, per turn and as a whole, as `tracegrade run` grades a conversation."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.runs_support import write_project
from tests.test_grade_traces import _load_agent
from tests.test_receive import _graded, _wait_for, receiving
from tracegrade.cli import main
from tracegrade.traces.conversations import ConversationBook

pytest.importorskip("openinference.instrumentation.langchain")

TURNS = ["weather in Paris?", "weather in Rome?", "weather in Paris?"]
CONVERSATION = {
    "id": "weather_chat",
    "turns": [
        {"content": TURNS[0], "expected_tools": [{"tool": "lookup", "should_run": True}]},
        # the agent answers Rome from memory: this turn's own check fails
        {"content": TURNS[1], "expected_tools": [{"tool": "lookup", "should_run": True}]},
        {"content": TURNS[2], "expected_tools": [{"tool": "lookup", "should_run": True}]},
    ],
}


def _project(root: Path) -> Path:
    return write_project(
        root,
        questions=[],
        extra_questions=[CONVERSATION],
        target={"graders": ["tool_usage_grader"], "concurrency": 1},
    )


def _converse(root: Path, exporter, session: str) -> None:
    """The app's own three invocations, one trace each, under one OpenInference session."""
    from openinference.instrumentation import using_session
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        graph = _load_agent(root).build_graph()
        with using_session(session_id=session):
            for text in TURNS:
                asyncio.run(graph.ainvoke({"messages": [("user", text)]}))
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def _question(report: dict) -> dict:
    (question,) = report["questions"]
    return question


def _assert_graded_per_turn(question: dict) -> None:
    assert question["id"] == "weather_chat"
    (tool_usage,) = [g for g in question["graders"] if g["id"] == "tool_usage_grader"]
    assert tool_usage["passed"] is False
    turns = tool_usage["details"]["turns"]
    assert turns["turn 1"]["score"] == turns["turn 3"]["score"] == 5
    assert turns["turn 2"]["score"] == 0 and "lookup" in turns["turn 2"]["reason"]
    assert [c["name"] for c in question["tool_calls"]] == ["lookup", "lookup"]


def test_grade_traces_grades_a_conversation_of_three_traces_whole_and_per_turn(tmp_path):
    from tracegrade.capture.tracefile import TraceFileExporter

    config = _project(tmp_path / "proj")
    archive = tmp_path / "collector" / "traces.jsonl"
    archive.parent.mkdir()
    _converse(tmp_path / "proj", TraceFileExporter(archive), "session-1")
    report_path = tmp_path / "graded.json"
    argv = ["grade-traces", str(archive), "--config", str(config), "--target", "t"]

    code = main([*argv, "--conversations", "--quiet", "--json", str(report_path)])

    report = json.loads(report_path.read_text())
    assert code == 2
    _assert_graded_per_turn(_question(report))
    assert any("1 conversation(s) of 3 trace(s)" in n for n in report["notes"])
    # without --conversations each trace is its own run: the two asking the opening turn's
    # words pair by input, each as a trial of its own, and no turn's check applies to them
    alone = tmp_path / "alone.json"
    main([*argv, "--quiet", "--json", str(alone)])
    trials = json.loads(alone.read_text())["questions"]
    assert len(trials) == 2
    assert not any("turns" in g["details"] for q in trials for g in q["graders"])


def test_receive_grades_the_conversation_once_it_is_quiet(tmp_path):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from tracegrade.reports.json_report import build_json_report

    config = _project(tmp_path / "proj")
    book = ConversationBook(quiet_s=0.5)
    with receiving(config, conversations=book) as (receiver, url):
        _converse(tmp_path / "proj", OTLPSpanExporter(endpoint=url), "session-live")
        _wait_for(lambda: _graded(receiver) == 1)
    report = build_json_report(receiver.outcome)
    _assert_graded_per_turn(_question(report))
    assert receiver.outcome.exit_code == 2


def test_bounds_hold_a_trace_alone_and_say_so():
    from tracegrade import ToolRecord
    from tracegrade.traces.dialects import AgentTrace

    def trace(n: int, conversation: str) -> AgentTrace:
        return AgentTrace(
            trace_id=f"{n:032x}",
            dialect="openinference",
            record=ToolRecord(),
            question_id=None,
            conversation_id=conversation,
            user_message=f"turn {n}",
            answer=f"answer {n}",
            error=None,
            error_type=None,
            start_ns=n,
            end_ns=n + 1,
            span_count=1,
        )

    book = ConversationBook(max_open=1, max_turns=2)
    assert book.add(trace(1, "a")) == [] and book.add(trace(2, "a")) == []
    assert [t.trace_id for t in book.add(trace(3, "a"))] == [f"{3:032x}"]  # past max_turns
    assert [t.trace_id for t in book.add(trace(4, "b"))] == [f"{4:032x}"]  # past max_open
    (merged,) = book.close(force=True)
    assert merged.turns == (("turn 1", "answer 1"), ("turn 2", "answer 2"))
    assert merged.record.turn_starts == (1, 2)
    assert any("more than 1 conversations" in n for n in book.notes())
    assert any("already held 2 turns" in n for n in book.notes())


def test_a_bad_conversation_flag_is_invalid_input(tmp_path, capsys):
    config = _project(tmp_path / "proj")
    archive = tmp_path / "a.jsonl"
    archive.write_text("")
    argv = ["grade-traces", str(archive), "--config", str(config), "--target", "t"]
    assert main([*argv, "--conversations", "--max-conversations", "0"]) == 4
    assert "--max-conversations" in capsys.readouterr().err
