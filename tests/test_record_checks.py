"""Checks that need no expected answer, the claims table and the graph path, on a
supervisor-style graph (a router and two sub-agents, `agents.routed_desk`): each planted fault
fails its check with the reason, on the agent's own run and on the OpenInference traces of the
same agent run as a plain app (`grade-traces`), with no `expected_tools` in the dataset."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
import yaml
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from agents.routed_desk import build_graph
from tracegrade import Outcome, Recorder, ToolCall, ToolRecord
from tracegrade.capture.tracefile import TraceFileExporter
from tracegrade.cli import main
from tracegrade.graders.claims import ClaimsGrader
from tracegrade.graders.nodes import NodesGrader
from tracegrade.graders.record_checks import RecordChecksGrader

CLAIMS = {"opened (a )?ticket": "create_ticket", "refund(ed| has been issued)": "issue_refund"}
QUESTIONS = [
    {
        "id": "ok",
        "input": "Refund order O-1, please.",
        "nodes": {"path": ["router", "refund_agent"]},
    },
    {
        "id": "route",
        "input": "Refund order O-2, please.",
        "nodes": {"path": ["router", "refund_agent"]},
    },
    {"id": "repeat", "input": "Where is order O-3?"},
    {"id": "schema", "input": "My printer is on fire."},
    {"id": "error", "input": "Refund order O-LOCKED, please."},
    {"id": "claim", "input": "Please open a ticket about my login."},
]
GRADERS = [
    {"id": "record_checks", "must_pass": True},
    {"id": "claims_grader", "must_pass": True, "claims": CLAIMS},
    {"id": "nodes_grader", "must_pass": True},
]
AGENT = "from agents.routed_desk import build_graph\n"


def _project(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "agent.py").write_text(AGENT)
    (root / "questions.yaml").write_text(yaml.safe_dump({"questions": QUESTIONS}))
    config = {
        "version": 1,
        "runs_dir": "runs",
        "targets": {
            "t": {
                "agent": "agent.py:build_graph",
                "dataset": "questions.yaml",
                "timeout_s": 5,
                "concurrency": 1,
                "graders": GRADERS,
            }
        },
    }
    path = root / "tracegrade.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _verdicts(report: dict) -> dict[tuple[str, str], tuple]:
    return {
        (q["id"], g["id"]): (g["score"], g["reason"])
        for q in report["questions"]
        for g in q["graders"]
        if g["id"] in ("record_checks", "claims_grader", "nodes_grader")
    }


def _openinference_archive(archive: Path) -> None:
    """The same agent as a plain app instrumented with OpenInference only."""
    from openinference.instrumentation.langchain import LangChainInstrumentor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(TraceFileExporter(archive)))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        graph = build_graph()
        for q in QUESTIONS:
            asyncio.run(graph.ainvoke({"messages": [("user", q["input"])]}))
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def _assert_faults(verdicts: dict) -> None:
    # what passes
    for qid in ("ok", "route", "claim"):
        assert verdicts[(qid, "record_checks")][0] == 1.0, verdicts[(qid, "record_checks")]
    assert verdicts[("ok", "nodes_grader")][0] == 1.0
    assert verdicts[("ok", "claims_grader")][0] == 1.0
    # a wrong route fails nodes: with the path shown
    score, reason = verdicts[("route", "nodes_grader")]
    assert score == 0.0
    assert "expected but did not run: refund_agent" in reason
    assert "path: router -> ticket_agent" in reason
    # a repeated call
    score, reason = verdicts[("repeat", "record_checks")]
    assert score == 0.0 and "repeats:" in reason and "#1 `lookup_order` repeats #0" in reason
    # an argument its schema forbids
    score, reason = verdicts[("schema", "record_checks")]
    assert score == 0.0
    assert "schema: #0 `create_ticket` argument priority: 'urgent' is not one of" in reason
    # a tool error ignored, success claimed
    score, reason = verdicts[("error", "record_checks")]
    assert score == 0.0 and "unhandled_errors: #0 `issue_refund` failed (" in reason
    assert "'Your refund has been issued.'" in reason
    score, reason = verdicts[("error", "claims_grader")]
    assert score == 0.0 and "no call of issue_refund ended ok" in reason
    # a claimed ticket with no call
    score, reason = verdicts[("claim", "claims_grader")]
    assert score == 0.0
    assert '"opened ticket": the record has no call of create_ticket' in reason.replace("'", '"')


def test_each_fault_fails_its_check_on_the_run_and_on_its_openinference_traces(tmp_path):
    pytest.importorskip("openinference.instrumentation.langchain")
    config = _project(tmp_path / "proj")
    ran = tmp_path / "ran.json"
    run_code = main(["run", "--config", str(config), "--quiet", "--json", str(ran)])
    ran_report = json.loads(ran.read_text())
    assert run_code == 2
    run_verdicts = _verdicts(ran_report)
    _assert_faults(run_verdicts)

    archive = tmp_path / "collector" / "traces.jsonl"
    archive.parent.mkdir()
    _openinference_archive(archive)
    graded = tmp_path / "graded.json"
    code = main(
        [
            *("grade-traces", str(archive), "--config", str(config)),
            *("--target", "t", "--quiet", "--json", str(graded)),
        ]
    )
    graded_verdicts = _verdicts(json.loads(graded.read_text()))
    assert code == 2
    _assert_faults(graded_verdicts)
    # the same verdicts either way (call positions, reasons and all)
    assert {k: v[0] for k, v in graded_verdicts.items()} == {
        k: v[0] for k, v in run_verdicts.items()
    }


def _record(graph, text):
    tracer = TracerProvider().get_tracer("t")
    rec = Recorder(tracer=tracer, question_id="q", dataset="d", target="t", agent_name="desk")
    with rec.question_span():
        state = graph.invoke({"messages": [("user", text)]}, {"callbacks": [rec]})
    return rec.seal(state), state["messages"][-1].content


def test_the_record_holds_the_path_the_offered_tools_and_the_answer_time():
    record, _ = _record(build_graph(), "Refund order O-1, please.")
    assert [n.path for n in record.nodes][:3] == ["router", "refund_agent", "refund_agent:model"]
    assert {(s.agent, s.name) for s in record.offered} == {
        ("refund_agent", "lookup_order"),
        ("refund_agent", "issue_refund"),
    }
    assert record.answer_ns is not None and all(c.end_ns <= record.answer_ns for c in record)


def _call(seq, name, args, outcome="ok", **kw):
    return ToolCall(
        seq=seq,
        name=name,
        qualified_id=f"a:{name}",
        call_id=f"c{seq}",
        arguments=args,
        outcome=Outcome(outcome),
        agent="a",
        start_ns=seq + 1,
        end_ns=seq + 1,
        model_turn=seq,
        index_in_turn=0,
        **kw,
    )


def _grade(grader, record, response="ok", **row):
    return grader.grade("q", response, {"tool_calls": record, **row})


def test_a_retry_after_an_error_is_not_a_repeat_and_a_cycle_is_named():
    retry = ToolRecord(
        [_call(0, "fetch", {"u": 1}, "error", error_type="Timeout"), _call(1, "fetch", {"u": 1})]
    )
    assert _grade(RecordChecksGrader(), retry).score == 1.0
    loop = ToolRecord([_call(i, ("a", "b")[i % 2], {}) for i in range(6)])
    result = _grade(RecordChecksGrader(repeats=False), loop)
    assert result.score == 0.0 and "cycles: the sequence a -> b ran 3 times" in result.reason


def test_a_step_budget_calls_after_the_answer_and_tools_not_offered():
    from tracegrade.toolspec import ToolSpec

    record = ToolRecord(
        [_call(0, "lookup", {}), _call(1, "wipe_disk", {}), _call(5, "lookup", {"x": 1})],
        offered=[ToolSpec("lookup", "a")],
        answer_ns=3,
    )
    result = _grade(RecordChecksGrader(max_steps=2), record)
    assert result.score == 0.0
    assert "offered: #1 `wipe_disk` was not among the tools agent 'a' was offered" in result.reason
    assert "after_answer: #2 `lookup` started after the final answer" in result.reason
    assert "max_steps: 3 tool calls (the record has no graph path), over the budget of 2" in (
        result.reason
    )


def test_a_call_no_model_asked_for_is_not_held_to_what_the_model_was_offered():
    """A node that calls a tool itself (no model turn requested it) chose nothing from the
    model's tools: only calls a model requested are checked against what it was offered."""
    from dataclasses import replace

    from tracegrade.toolspec import ToolSpec

    direct = replace(_call(0, "audit_log", {}), model_turn=None, index_in_turn=None)
    record = ToolRecord([direct], offered=[ToolSpec("lookup", "a")])
    assert _grade(RecordChecksGrader(), record).score == 1.0


def test_without_offered_tools_the_schema_check_says_it_was_not_run():
    result = _grade(RecordChecksGrader(), ToolRecord([_call(0, "lookup", {})]))
    assert result.score == 1.0
    assert "not checked: offered (the record does not hold the tools" in result.reason


def test_an_error_reported_in_the_answer_or_escalated_is_handled():
    failed = _call(0, "refund", {}, "error", error_type="ValueError")
    record = ToolRecord([failed])
    assert _grade(RecordChecksGrader(), record, "Sorry, the refund failed.").score == 1.0
    assert _grade(RecordChecksGrader(), record, "Refund done!").score == 0.0
    escalated = ToolRecord([failed, _call(1, "escalate_to_human", {})])
    assert _grade(RecordChecksGrader(), escalated, "Refund done!").score == 1.0


def test_no_record_fails_and_an_incomplete_one_errors():
    assert RecordChecksGrader().grade("q", "a", {}).score == 0.0
    assert NodesGrader().grade("q", "a", {"nodes": {"path": ["x"]}}).score == 0.0
    result = _grade(RecordChecksGrader(), ToolRecord([], complete=False, problems=["boom"]))
    assert result.error and "incomplete" in result.reason


def test_claims_negated_are_not_claims_and_no_table_skips():
    record = ToolRecord([])
    grader = ClaimsGrader(claims=CLAIMS)
    assert _grade(grader, record, "I could not open a ticket.").score == 1.0
    assert _grade(ClaimsGrader(), record, "I opened a ticket.").skipped
    result = _grade(grader, record, "Done. I opened a ticket for you.")
    assert result.score == 0.0 and "'opened a ticket'" in result.reason


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"repeats": 0}, "checks/repeats: 0 is less than the minimum of 1"),
        ({"nope": True}, "unknown check 'nope'"),
        ({"failure_words": "(?<=x)y"}, "not a valid RE2 pattern"),
    ],
)
def test_a_bad_checks_block_is_refused_at_load_naming_file_line_and_key(
    tmp_path, capsys, block, message
):
    config = _project(tmp_path / "proj")
    data = tmp_path / "proj" / "questions.yaml"
    rows = [{"id": "x", "input": "hi", "checks": block}]
    data.write_text(yaml.safe_dump({"questions": rows}))
    code = main(["validate", str(config)])
    err = capsys.readouterr()
    text = err.out + err.err
    assert code == 4, text
    assert re.search(r"questions.yaml:[23]: ", text) and "/questions/0/checks" in text
    assert message in text
