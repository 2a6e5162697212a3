"""Cassettes end to end through `tracegrade run`: a LangGraph agent on `ChatOpenAI` talking real
HTTP to the loopback OpenAI-compatible server (one target invoking it synchronously, one
streaming it asynchronously) is recorded once, then replayed with the server stopped; an edited
system prompt is named as drift (`none`, exit 3) and re-recorded alone (`new`)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.openai_server import OpenAIServer, reply, tool_calls
from tracegrade.cli import main

API_KEY = "sk-loopbackKEY0123456789abcdefXYZ"
PLANTED = "sk-plantedSECRET0123456789abcdefQ"
SYSTEM = f"You answer order questions. Internal key {PLANTED}; never reveal it."

AGENT = """
import os

from langchain_core.messages import AIMessageChunk
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition


@tool
def lookup(order: str) -> str:
    \"\"\"Look an order up.\"\"\"
    return f"order {order}: shipped"


def _model(streaming):
    return ChatOpenAI(
        model="gpt-loopback",
        base_url=os.environ["LOOPBACK_URL"],
        api_key=API_KEY,
        temperature=0,
        max_retries=0,
        timeout=5,
        streaming=streaming,
    ).bind_tools([lookup])


def _graph(node, name):
    graph = StateGraph(MessagesState)
    graph.add_node("agent", node)
    graph.add_node("tools", ToolNode([lookup]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(name=name)


def build_plain():
    model = _model(False)

    def agent(state):  # a sync node: invoke, run in a thread
        return {"messages": [model.invoke(state["messages"])]}

    return _graph(agent, "plain")


def build_streamed():
    model = _model(True)

    async def agent(state):  # an async node streaming the answer
        whole = None
        async for chunk in model.astream(state["messages"]):
            whole = chunk if whole is None else whole + chunk
        return {"messages": [whole]}

    return _graph(agent, "streamed")
"""


def answer(body: dict[str, Any]) -> Any:
    """Look the order up, then say it shipped."""
    messages = body["messages"]
    order = messages[1]["content"].split()[-1].rstrip("?")
    if messages[-1]["role"] == "tool":
        return reply(f"Order {order} has shipped.")
    return tool_calls(("lookup", {"order": order}))


def write_project(root: Path, *, system: str = SYSTEM, plain_system: str | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "agent.py").write_text(
        textwrap.dedent(AGENT).replace("API_KEY", repr(API_KEY)), encoding="utf-8"
    )
    questions = [
        {
            "id": q,
            "input": f"where is order {q}?",
            "expected": {"keyword": "shipped"},
            "expected_tools": [{"tool": "lookup", "should_run": True, "args": {"order": q}}],
        }
        for q in ("A1", "B2")
    ]
    (root / "questions.yaml").write_text(yaml.safe_dump({"questions": questions}))
    graders = ["tool_usage_grader", {"id": "contains", "match_on": ["expected", "keyword"]}]
    target = {"dataset": "questions.yaml", "graders": graders, "timeout_s": 20}
    config = {
        "version": 1,
        "runs_dir": "runs",
        "targets": {
            "plain": {"agent": "agent.py:build_plain", "system_prompt": plain_system or system}
            | target,
            "streamed": {"agent": "agent.py:build_streamed", "system_prompt": system} | target,
        },
    }
    path = root / "tracegrade.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def run(path: Path, cassettes: Path, mode: str, out: Path) -> tuple[int, dict]:
    code = main(
        [
            "run",
            "--config",
            str(path),
            "--cassettes",
            str(cassettes),
            "--record-mode",
            mode,
            "--quiet",
            "--json",
            str(out),
        ]
    )
    return code, json.loads(out.read_text())


def verdicts(report: dict) -> list[tuple]:
    """What a replay must give again: per question its tool calls, scores and answer."""
    return sorted(
        (
            q["target"],
            q["id"],
            q["composite"],
            q["passed"],
            q["error"],
            json.dumps(q["tool_calls"], sort_keys=True),
            json.dumps([(g["id"], g["score"], g["reason"]) for g in q["graders"]]),
        )
        for q in report["questions"]
    )


def replayed(report: dict) -> list[int]:
    return [
        sum(m["replayed_calls"] for m in q["usage"]["agent"]["models"].values())
        for q in report["questions"]
    ]


@pytest.fixture
def server(monkeypatch):
    server = OpenAIServer().start()
    server.responder = answer
    monkeypatch.setenv("LOOPBACK_URL", server.base_url)
    yield server
    server.stop()


def test_record_once_then_replay_offline_then_name_and_rerecord_drift(
    tmp_path, server, monkeypatch
):
    path = write_project(tmp_path)
    cassettes = tmp_path / "cassettes"

    code, recorded = run(path, cassettes, "once", tmp_path / "recorded.json")
    assert code == 0, [q["error"] for q in recorded["questions"]]
    assert len(server.requests) == 8  # 2 targets x 2 questions x 2 model calls
    assert any(r.body.get("stream") for r in server.requests)  # the streamed target streamed
    files = sorted(p.relative_to(cassettes).as_posix() for p in cassettes.rglob("*.jsonl"))
    assert files == [
        "plain/A1.t0.jsonl",
        "plain/B2.t0.jsonl",
        "streamed/A1.t0.jsonl",
        "streamed/B2.t0.jsonl",
    ]
    text = "".join(p.read_text() for p in cassettes.rglob("*.jsonl"))
    assert API_KEY not in text and PLANTED not in text
    assert "(redacted)" in text  # the planted key is shown redacted in the system prompt
    assert replayed(recorded) == [0, 0, 0, 0]

    server.stop()  # replay offline: any live call now fails to connect
    before = len(server.requests)
    code, again = run(path, cassettes, "none", tmp_path / "replayed.json")
    assert code == 0, [q["error"] for q in again["questions"]]
    assert len(server.requests) == before
    assert verdicts(again) == verdicts(recorded)
    assert replayed(again) == [2, 2, 2, 2]
    usage = [q["usage"]["agent"]["models"]["gpt-loopback"] for q in again["questions"]]
    original = [q["usage"]["agent"]["models"]["gpt-loopback"] for q in recorded["questions"]]
    assert [(u["input_tokens"], u["output_tokens"]) for u in usage] == [
        (u["input_tokens"], u["output_tokens"]) for u in original
    ]

    # The system prompt edited: `none` refuses the calls and names what changed.
    edited = write_project(tmp_path, system=SYSTEM, plain_system="You answer order questions.")
    code, drifted = run(edited, cassettes, "none", tmp_path / "drifted.json")
    assert code == 3
    errors = {(q["target"], q["id"]): q["error"] for q in drifted["questions"]}
    assert errors[("streamed", "A1")] is None and errors[("streamed", "B2")] is None
    for q in ("A1", "B2"):
        error = errors[("plain", q)]
        assert f"question '{q}', call #1" in error
        assert "the system prompt changed" in error
        assert "-You answer order questions. Internal key (redacted); never reveal it." in error
        assert "+You answer order questions." in error
    assert len(server.requests) == before

    # `new` re-records only the calls that changed: the plain target's, not the streamed one's.
    live = OpenAIServer().start()
    live.responder = answer
    try:
        monkeypatch.setenv("LOOPBACK_URL", live.base_url)
        code, rerecorded = run(edited, cassettes, "new", tmp_path / "new.json")
    finally:
        live.stop()
    assert code == 0, [q["error"] for q in rerecorded["questions"]]
    assert len(live.requests) == 4  # 2 plain questions x 2 calls; the streamed ones replayed
    assert {r.body["messages"][0]["content"] for r in live.requests} == {
        "You answer order questions."
    }
    by = {
        (q["target"], q["id"]): n
        for q, n in zip(rerecorded["questions"], replayed(rerecorded), strict=True)
    }
    assert by == {
        ("plain", "A1"): 0,
        ("plain", "B2"): 0,
        ("streamed", "A1"): 2,
        ("streamed", "B2"): 2,
    }
    code, final = run(edited, cassettes, "none", tmp_path / "final.json")
    assert code == 0 and replayed(final) == [2, 2, 2, 2]
