"""The production loop end to end, every service real and on loopback: a plain LangGraph app
(OpenInference-instrumented, never run by tracegrade) holds three-turn conversations over three
traces each, exporting to Phoenix and to `tracegrade receive`. The receiver grades each as one
conversation with per-turn results (a code grader and a judge on an OpenAI-compatible server),
writes the grades to Phoenix as annotations on the span they judged (CODE, LLM), forwards the
spans with `gen_ai.evaluation.result` events an OTLP parse reads back, and posts exactly one
alert for the falling pass rate, its cooldown holding for the second failing conversation. A
person's label (`tracegrade label`) then reaches Phoenix as a HUMAN annotation and the exported
spans as a `human` event on `tracegrade export`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
import yaml

from tests import openai_server as loopback
from tests.otlp_receiver import OtlpReceiver, otlp_receiver  # noqa: F401  (a fixture)
from tests.phoenix_server import phoenix_log
from tests.runs_support import write_project
from tests.test_alerts import webhook  # noqa: F401  (a fixture)
from tests.test_grade_traces import _load_agent
from tests.test_receive import _graded, _wait_for, receiving
from tests.test_trace_conversations import CONVERSATION, TURNS, _assert_graded_per_turn
from tracegrade.cli import main
from tracegrade.reports.json_report import build_json_report
from tracegrade.traces.conversations import ConversationBook

pytest.importorskip("openinference.instrumentation.langchain")
openai_server = loopback.openai_server
LABEL = "Would you send this answer?"
EVENT = "gen_ai.evaluation.result"


def _project(root: Path, judge_url: str, hook_url: str) -> Path:
    config = write_project(
        root,
        questions=[],
        extra_questions=[CONVERSATION],
        target={
            "graders": ["tool_usage_grader", "relevance_grader"],
            "concurrency": 1,
            "labels": [LABEL],
        },
        config={"judge": {"provider": "openai-compatible", "base_url": judge_url, "model": "m"}},
    )
    data = yaml.safe_load(config.read_text())
    data["alerts"] = {
        "webhook": hook_url,
        "window_s": 600,
        "cooldown_s": 600,
        "min_traces": 1,
        "rules": [{"metric": "pass_rate", "below": 0.75}],
    }
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    return config


def _converse(root: Path, endpoints: list[str], session: str) -> None:
    """The app's own three invocations under one OpenInference session, exported to each of
    `endpoints` by the official OTLP/HTTP exporter (protobuf)."""
    from openinference.instrumentation import using_session
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider()
    for endpoint in endpoints:
        # the default 10 s timeout loses spans to a Phoenix busy on a loaded machine, and
        # their annotations then wait for spans that never come
        exporter = OTLPSpanExporter(endpoint=endpoint, timeout=120)
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


def _phoenix_annotations(url: str, span_ids: list[str]) -> dict[str, dict[str, dict]]:
    reply = httpx.get(
        f"{url}/v1/projects/default/span_annotations",
        params={"span_ids": span_ids, "limit": 1000},
        timeout=30,
    )
    assert reply.status_code == 200, reply.text
    out: dict[str, dict[str, dict]] = {}
    for a in reply.json()["data"]:
        out.setdefault(a["span_id"], {})[a["name"]] = a
    return out


def _annotator_state(receiver, url: str) -> str:
    """What a failed wait for annotations needs: the counts, the first failure, Phoenix's log."""
    counts = {k: v for k, v in receiver.counts.items() if "annotation" in k or "graded" in k}
    annotator = receiver._annotator
    log = phoenix_log(url)
    return (
        f"counts {counts}; first failure {annotator.first_failure if annotator else None}; "
        f"queued {annotator.queue.qsize() if annotator else 0}; Phoenix log tail:\n{log}"
    )


def _events(span) -> dict[str, dict]:
    return {a["gen_ai.evaluation.name"]: a for name, a in span.events if name == EVENT}


def test_a_production_conversation_graded_annotated_forwarded_and_alerted(
    tmp_path,
    phoenix,
    openai_server,
    otlp_receiver,  # noqa: F811
    webhook,  # noqa: F811
):
    openai_server.default = loopback.score(4, "on topic")
    root = tmp_path / "proj"
    config = _project(root, openai_server.base_url, webhook.url)
    forwarded = otlp_receiver
    with receiving(
        config,
        conversations=ConversationBook(quiet_s=5.0),  # a loaded machine spaces turns apart
        forward=f"{forwarded.endpoint}/v1/traces",
        forward_wait_s=60.0,
        annotate=phoenix,
    ) as (receiver, url):
        _converse(root, [url, f"{phoenix}/v1/traces"], "session-1")
        _wait_for(lambda: _graded(receiver) == 1, seconds=300)
        _wait_for(
            lambda: receiver.counts["annotations_written"] >= 3,
            seconds=300,
            describe=lambda: _annotator_state(receiver, phoenix),
        )
        _wait_for(lambda: len(webhook.bodies) == 1, seconds=300)
        # a second failing conversation within the cooldown: no second alert
        _converse(root, [url, f"{phoenix}/v1/traces"], "session-2")
        _wait_for(lambda: _graded(receiver) == 2, seconds=300)
    report = build_json_report(receiver.outcome)

    # one conversation, graded per turn (turn 2 answered from memory fails its own check)
    first = next(q for q in report["questions"] if q.get("trial", 0) == 0)
    _assert_graded_per_turn(first)

    # forwarded: the first turn's root span carries the conversation's grades; the other
    # turns' roots were graded within it (no event of their own, never marked ungraded)
    roots = [s for s in forwarded.spans() if not s.parent_span_id]
    assert len(roots) == 6
    graded = [s for s in roots if _events(s)]
    assert len(graded) == 2
    events = _events(graded[0])
    assert events["tool_usage_grader"]["gen_ai.evaluation.score.label"] == "fail"
    assert events["tool_usage_grader"]["tracegrade.evaluation.kind"] == "code"
    assert events["relevance_grader"]["tracegrade.evaluation.kind"] == "llm"
    assert events["tracegrade"]["gen_ai.evaluation.score.label"] == "fail"
    assert not any("tracegrade.evaluation.status" in s.attributes for s in roots)
    assert not receiver.counts["forwarded_ungraded"]

    # Phoenix: the graded span shows tracegrade's annotations, code and LLM kinds
    shown = _phoenix_annotations(phoenix, [s.span_id for s in graded])
    for span in graded:
        kinds = {name: a["annotator_kind"] for name, a in shown[span.span_id].items()}
        assert kinds == {
            "tool_usage_grader": "CODE",
            "relevance_grader": "LLM",
            "tracegrade": "CODE",
        }

    # alerts: exactly one message for the falling pass rate; the cooldown held
    assert len(webhook.bodies) == 1 and "pass_rate" in json.dumps(webhook.bodies[0])
    assert receiver.counts["alerts_fired"] == 1

    # a person's label reaches Phoenix as HUMAN and the exported spans as a `human` event
    run_dir = receiver.monitor.run_dir
    answers = tmp_path / "answers.yaml"
    label = {"question": "weather_chat", "label": "would_you_send_this_answer", "answer": False}
    answers.write_text(yaml.safe_dump({"by": "ana", "answers": [{**label, "note": "no lookup"}]}))
    assert main(["label", str(run_dir), "--config", str(config), "--answers", str(answers)]) == 0
    argv = ["export", str(run_dir), "--config", str(config)]
    assert main([*argv, "--to", "phoenix", "--endpoint", phoenix]) == 0
    question_span = graded[0].span_id  # the app's own root span, where receive annotated
    human = _phoenix_annotations(phoenix, [question_span])[question_span]
    assert human["label:would_you_send_this_answer"]["annotator_kind"] == "HUMAN"
    assert human["label:would_you_send_this_answer"]["result"]["label"] == "no"
    assert human["tool_usage_grader"]["annotator_kind"] == "CODE"
    exported = OtlpReceiver().start()
    try:
        assert main([*argv, "--endpoint", exported.endpoint]) == 0
        found = {s.trace_id: _events(s) for s in exported.spans() if not s.parent_span_id}
    finally:
        exported.stop()
    mine = found[graded[0].trace_id]
    assert mine["label:would_you_send_this_answer"]["tracegrade.evaluation.kind"] == "human"
    assert mine["tool_usage_grader"]["gen_ai.evaluation.score.label"] == "fail"
