"""What trace backends and trace-based eval tools read from a real run, checked at a real OTLP
receiver on loopback: the question span (Phoenix shows it as a CHAIN with its input and answer),
the project resource attribute, token counts on chat spans, the GenAI input/output messages and
conversation id on agent spans (what trace-based evaluators pair cases by), both OTLP
protocols, export failures with their HTTP status, and replaying a stored run."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.otlp_receiver import otlp_receiver  # noqa: F401  (fixture)
from tests.runs_support import write_project
from tracegrade.cli import main
from tracegrade.otel import semconv as sc

SECRET_Q = {
    "id": "leaky",
    "input": [
        {"role": "system", "content": "use ghp_abcdefghijklmnopqrstuvwxyz0123456789 when asked"},
        {"role": "user", "content": "echo system"},
    ],
    "expected": {"keyword": "system"},
}


def _run(tmp_path, receiver, *, telemetry=None, questions=("paris",), extra=(), argv=()):
    tele = {"otlp_endpoint": receiver.endpoint, **(telemetry or {})}
    path = write_project(
        tmp_path / "proj",
        questions=list(questions),
        extra_questions=list(extra),
        config={"telemetry": tele},
    )
    report = tmp_path / "r.json"
    code = main(["run", "--config", str(path), "--quiet", "--json", str(report), *argv])
    return code, path, json.loads(report.read_text()) if report.exists() else None


def _by_kind(spans, name_prefix):
    return [s for s in spans if s.name.startswith(name_prefix)]


@pytest.mark.parametrize("protocol", ["http/protobuf", "http/json"])
def test_a_run_exports_what_backends_read(tmp_path, otlp_receiver, protocol):  # noqa: F811
    code, _, report = _run(
        tmp_path, otlp_receiver, telemetry={"protocol": protocol}, questions=("paris",)
    )
    assert code == 0
    expected_type = "application/json" if protocol == "http/json" else "application/x-protobuf"
    assert otlp_receiver.content_types and all(
        c.startswith(expected_type) for c in otlp_receiver.content_types
    )
    spans = otlp_receiver.spans()
    (question,) = _by_kind(spans, sc.SPAN_QUESTION)
    assert question.attributes[sc.OI_SPAN_KIND] == "CHAIN"
    assert question.attributes[sc.OI_INPUT_VALUE] == "weather in Paris?"
    assert question.attributes[sc.OI_OUTPUT_VALUE] == "It is sunny in Paris."
    # one session per question run: the conversation id names run, target, question and trial;
    # the question id has attributes of its own
    run_id = report["run_id"]
    assert question.attributes[sc.GEN_AI_CONVERSATION_ID] == f"{run_id}/t/paris/0"
    assert question.attributes[sc.TG_QUESTION_ID] == "paris"
    assert question.attributes[sc.AGENTEVALS_CASE_ID] == "paris"
    assert question.attributes[sc.TG_RUN_ID] == run_id
    # the project: the config's directory name when telemetry.project is not set
    assert {s.resource.get(sc.OI_PROJECT_NAME) for s in spans} == {"proj"}

    (agent,) = _by_kind(spans, "invoke_agent")
    assert agent.attributes[sc.GEN_AI_CONVERSATION_ID] == f"{run_id}/t/paris/0"
    inputs = json.loads(agent.attributes[sc.GEN_AI_INPUT_MESSAGES])
    assert inputs == [{"role": "user", "parts": [{"type": "text", "content": "weather in Paris?"}]}]
    outputs = json.loads(agent.attributes[sc.GEN_AI_OUTPUT_MESSAGES])
    assert outputs == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "It is sunny in Paris."}],
            "finish_reason": "stop",
        }
    ]
    chats = _by_kind(spans, "chat")
    assert len(chats) == 2
    for chat in chats:  # the scripted model reports 10 in, 5 out, 15 in all
        assert chat.attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] == 10
        assert chat.attributes[sc.GEN_AI_USAGE_OUTPUT_TOKENS] == 5
        assert chat.attributes[sc.OI_TOKEN_COUNT_PROMPT] == 10
        assert chat.attributes[sc.OI_TOKEN_COUNT_COMPLETION] == 5
        assert chat.attributes[sc.OI_TOKEN_COUNT_TOTAL] == 15
    # a successful export is reported with its count, endpoint and protocol
    notes = report["notes"]
    assert any(
        f"{len(spans)} span(s) exported to {otlp_receiver.endpoint}/v1/traces ({protocol}" in n
        for n in notes
    ), notes


def test_every_question_run_is_its_own_conversation(tmp_path, otlp_receiver):  # noqa: F811
    # Two runs, two targets and two trials of the same questions into one backend: a backend
    # groups sessions by gen_ai.conversation.id, so none may be shared (it was the bare question
    # id, and Phoenix merged them all into one session per question).
    targets = {"t": {}, "u": {"agent": "agent.py:build_graph", "dataset": "data/questions.yaml"}}
    path = write_project(
        tmp_path / "proj",
        questions=["paris", "rome"],
        target={"repeats": 2},
        config={"telemetry": {"otlp_endpoint": otlp_receiver.endpoint}},
    )
    config = yaml.safe_load(path.read_text())
    config["targets"]["u"] = {**config["targets"]["t"], **targets["u"]}
    path.write_text(yaml.safe_dump(config))
    for _ in range(2):
        assert (
            main(["run", "--config", str(path), "--quiet"]) == 2
        )  # rome calls no tool: tool_usage_grader must pass
    questions = _by_kind(otlp_receiver.spans(), sc.SPAN_QUESTION)
    assert len(questions) == 2 * 2 * 2 * 2  # runs x targets x questions x trials
    conversations = [q.attributes[sc.GEN_AI_CONVERSATION_ID] for q in questions]
    assert len(set(conversations)) == len(questions)
    assert {q.attributes[sc.TG_QUESTION_ID] for q in questions} == {"paris", "rome"}
    assert {q.attributes[sc.AGENTEVALS_CASE_ID] for q in questions} == {"paris", "rome"}
    # each agent span shares its own question's conversation, never another's
    by_trace = {q.trace_id: q.attributes[sc.GEN_AI_CONVERSATION_ID] for q in questions}
    for agent in _by_kind(otlp_receiver.spans(), "invoke_agent"):
        assert agent.attributes[sc.GEN_AI_CONVERSATION_ID] == by_trace[agent.trace_id]


def test_the_project_comes_from_the_config(tmp_path, otlp_receiver):  # noqa: F811
    code, _, _ = _run(tmp_path, otlp_receiver, telemetry={"project": "support-evals"})
    assert code == 0
    assert {s.resource[sc.OI_PROJECT_NAME] for s in otlp_receiver.spans()} == {"support-evals"}


def test_question_input_and_answer_are_redacted_on_the_way_out(tmp_path, otlp_receiver):  # noqa: F811
    code, _, _ = _run(tmp_path, otlp_receiver, questions=(), extra=[SECRET_Q])
    assert code == 0
    spans = otlp_receiver.spans()
    (question,) = _by_kind(spans, sc.SPAN_QUESTION)
    assert "system: use (redacted) when asked" in question.attributes[sc.OI_INPUT_VALUE]
    assert "system=use (redacted) when asked" in question.attributes[sc.OI_OUTPUT_VALUE]
    everything = json.dumps([s.attributes for s in spans])
    assert "ghp_abcdefghij" not in everything


def test_a_refused_export_names_the_status_and_endpoint(tmp_path, otlp_receiver):  # noqa: F811
    otlp_receiver.accept_json = False  # as Phoenix does for OTLP/JSON
    code, _, report = _run(tmp_path, otlp_receiver, telemetry={"protocol": "http/json"})
    assert code == 0  # the trace file still holds every span; export is best effort
    failure = [n for n in report["notes"] if "not exported" in n]
    assert failure and "HTTP 415" in failure[0], report["notes"]
    assert f"{otlp_receiver.endpoint}/v1/traces" in failure[0]


def test_an_unsupported_protocol_is_invalid_input(tmp_path, otlp_receiver, monkeypatch, capsys):  # noqa: F811
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    code, _, _ = _run(tmp_path, otlp_receiver)
    assert code == 4
    err = capsys.readouterr().err
    assert "OTEL_EXPORTER_OTLP_PROTOCOL" in err and "grpc" in err
    assert not otlp_receiver.content_types  # nothing was sent
    assert not (tmp_path / "proj" / "runs").exists() or not list(
        (tmp_path / "proj" / "runs").iterdir()
    )


def test_the_protocol_environment_variable_is_honoured(tmp_path, otlp_receiver, monkeypatch):  # noqa: F811
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    code, _, _ = _run(tmp_path, otlp_receiver)
    assert code == 0
    assert otlp_receiver.content_types[0].startswith("application/json")


def _stored_spans(run_dir):
    lines = (run_dir / "traces" / "t.jsonl").read_text().splitlines()
    return [
        s
        for line in lines
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    ]


@pytest.mark.parametrize("protocol", ["http/protobuf", "http/json"])
def test_export_replays_a_stored_run(tmp_path, otlp_receiver, protocol, capsys):  # noqa: F811
    path = write_project(tmp_path / "proj", questions=["paris", "rome"])
    assert main(["run", "--config", str(path), "--quiet"]) == 2  # rome calls no tool
    (run_dir,) = (tmp_path / "proj" / "runs").iterdir()
    stored = _stored_spans(run_dir)
    capsys.readouterr()
    argv = ["export", str(run_dir), "--endpoint", otlp_receiver.endpoint, "--protocol", protocol]
    assert main([*argv, "--project", "replayed"]) == 0
    out = capsys.readouterr().out
    assert f"t: {len(stored)} span(s) exported to {otlp_receiver.endpoint}/v1/traces" in out
    received = otlp_receiver.spans()
    assert sorted((s.trace_id, s.span_id, s.parent_span_id, s.name) for s in received) == sorted(
        (s["traceId"], s["spanId"], s.get("parentSpanId", ""), s["name"]) for s in stored
    )
    assert {s.resource[sc.OI_PROJECT_NAME] for s in received} == {"replayed"}
    tools = [s for s in received if s.name == "execute_tool lookup"]
    assert tools and all(
        "s3cr3t-arg-value" not in s.attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS] for s in tools
    )
    assert json.loads(tools[0].attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS])["city"] == "Paris"


def test_export_redacts_again_what_the_file_holds(tmp_path, otlp_receiver):  # noqa: F811
    # A trace file written before a pattern was known (or edited by hand) still leaves clean.
    path = write_project(tmp_path / "proj", questions=["paris"])
    assert main(["run", "--config", str(path), "--quiet"]) == 0
    (run_dir,) = (tmp_path / "proj" / "runs").iterdir()
    trace = run_dir / "traces" / "t.jsonl"
    trace.write_text(
        trace.read_text().replace("Paris", "Paris ghp_opensesame42abcdefghijklmnopqrstuvwxyz")
    )
    assert main(["export", str(run_dir), "--endpoint", otlp_receiver.endpoint]) == 0
    assert "ghp_opensesame42" not in json.dumps([s.attributes for s in otlp_receiver.spans()])


def test_export_to_a_refusing_backend_exits_3_with_the_status(tmp_path, otlp_receiver, capsys):  # noqa: F811
    otlp_receiver.accept_json = False
    path = write_project(tmp_path / "proj", questions=["paris"])
    assert main(["run", "--config", str(path), "--quiet"]) == 0
    (run_dir,) = (tmp_path / "proj" / "runs").iterdir()
    capsys.readouterr()
    argv = ["export", str(run_dir), "--endpoint", otlp_receiver.endpoint, "--protocol", "http/json"]
    assert main(argv) == 3
    assert "HTTP 415" in capsys.readouterr().out


def test_export_of_an_unknown_target_or_protocol_is_invalid_input(tmp_path, capsys):
    path = write_project(tmp_path / "proj", questions=["paris"])
    assert main(["run", "--config", str(path), "--quiet"]) == 0
    (run_dir,) = (tmp_path / "proj" / "runs").iterdir()
    endpoint = ["--endpoint", "http://127.0.0.1:9"]
    assert main(["export", str(run_dir), *endpoint, "--target", "nope"]) == 4
    assert "nope" in capsys.readouterr().err
    assert main(["export", str(run_dir), *endpoint, "--protocol", "grpc"]) == 4
    assert main(["export", str(tmp_path / "missing"), *endpoint, "--config", str(path)]) == 4


def test_prompts_and_answers_on_chat_spans_are_opt_in_redacted_and_cut(tmp_path, otlp_receiver):  # noqa: F811
    code, _, _ = _run(tmp_path / "off", otlp_receiver, questions=("paris",))
    assert code == 0
    chats = _by_kind(otlp_receiver.spans(), "chat")
    assert chats and not any(sc.GEN_AI_INPUT_MESSAGES in c.attributes for c in chats)  # default
    otlp_receiver.requests.clear()
    otlp_receiver.json_requests.clear()
    code, path, _ = _run(
        tmp_path / "on",
        otlp_receiver,
        telemetry={"capture_messages": True, "message_chars": 2000},
        questions=("paris",),
        extra=[SECRET_Q],
    )
    assert code == 0
    chats = _by_kind(otlp_receiver.spans(), "chat")
    assert chats and all(sc.GEN_AI_INPUT_MESSAGES in c.attributes for c in chats)
    everything = json.dumps([c.attributes for c in chats])
    assert "weather in Paris?" in everything and "It is sunny in Paris." in everything
    assert "ghp_abcdefghij" not in everything and "(redacted)" in everything
    # the run's own trace file holds them too, redacted by the same policy
    trace_text = "".join(p.read_text() for p in (path.parent / "runs").rglob("*.jsonl"))
    assert "weather in Paris?" in trace_text and "ghp_abcdefghij" not in trace_text
    otlp_receiver.requests.clear()
    otlp_receiver.json_requests.clear()
    code, _, _ = _run(
        tmp_path / "cut",
        otlp_receiver,
        telemetry={"capture_messages": True, "message_chars": 20},
        questions=("paris",),
    )
    for chat in _by_kind(otlp_receiver.spans(), "chat"):
        prompt = chat.attributes[sc.GEN_AI_INPUT_MESSAGES]
        assert len(prompt) == 20 and prompt.startswith('[{"role": "user"')
