"""Cassettes at the chat-model layer: what a call's key holds and ignores, the four record
modes, the drift a miss names, and a miss that errors its question even when the agent
swallows the exception."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from agents.scripted import ScriptedChatModel, call, say
from tests.runs_support import write_project
from tracegrade.canonical import content_hash
from tracegrade.capture.cassette import model_request, read_cassette
from tracegrade.capture.replay import ReplayMiss, ReplaySession
from tracegrade.cli import main
from tracegrade.redaction import DEFAULT_POLICY


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return "shipped"


@tool
def cancel(order: str, reason: str) -> str:
    """Cancel an order."""
    return "cancelled"


def key(messages, model=None, **kwargs) -> str:
    model = model or ScriptedChatModel(model_name="m")
    return content_hash(model_request(model, messages, None, kwargs, DEFAULT_POLICY))


def conversation(system: str = "Be brief.") -> list:
    return [SystemMessage(system), HumanMessage("where is A1?")]


# -- the key --------------------------------------------------------------------------------
def test_the_key_holds_what_decides_the_answer():
    base = key(conversation())
    assert key(conversation("Be very brief.")) != base
    assert key(conversation(), temperature=0.5) != base
    assert key(conversation(), tools=[{"type": "function", "function": {"name": "x"}}]) != base
    assert key(conversation(), tool_choice="any") != base
    assert key(conversation(), response_format={"type": "json_object"}) != base
    assert key(conversation(), model=ScriptedChatModel(model_name="other")) != base


def test_the_key_ignores_transport_streaming_and_run_ids():
    base = key(conversation())
    assert key(conversation(), stream=True, stream_options={"include_usage": True}) == base
    assert key(conversation(), api_key="sk-a", timeout=5, extra_headers={"x": "1"}) == base
    with_ids = [m.model_copy(update={"id": f"lc_run--{i}"}) for i, m in enumerate(conversation())]
    assert key(with_ids) == base


def test_chat_openai_key_ignores_key_and_url_but_not_the_model():
    from langchain_openai import ChatOpenAI

    def model(**kw):
        return ChatOpenAI(model="gpt-x", api_key="sk-one", base_url="http://a/v1", **kw)

    base = key(conversation(), model=model())
    other = ChatOpenAI(model="gpt-x", api_key="sk-two", base_url="http://b/v1", max_retries=7)
    assert key(conversation(), model=other) == base
    assert key(conversation(), model=model(streaming=True)) == base
    assert key(conversation(), model=model(temperature=0.3)) != base
    request = model_request(model(), conversation(), None, {}, DEFAULT_POLICY)
    assert "sk-one" not in json.dumps(request) and "http://a" not in json.dumps(request)


texts = st.text(min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(texts, texts, st.dictionaries(st.sampled_from("abc"), st.integers(), max_size=3))
def test_an_answer_keys_by_content_never_by_its_metadata(text, other, args):
    """The model's earlier answer keys by its text and tool calls: its usage and response
    metadata (which a replay cannot reproduce exactly) never change the key."""
    answer = AIMessage(text, tool_calls=[{"name": "lookup", "args": args, "id": "c1"}])
    noisy = answer.model_copy(
        update={
            "usage_metadata": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
            "response_metadata": {"model_name": other, "finish_reason": "stop"},
            "id": other,
        }
    )
    tail = [ToolMessage("shipped", tool_call_id="c1")]
    assert key([*conversation(), answer, *tail]) == key([*conversation(), noisy, *tail])
    if other != text:
        changed = answer.model_copy(update={"content": other})
        assert key([*conversation(), answer, *tail]) != key([*conversation(), changed, *tail])


# -- modes ----------------------------------------------------------------------------------
def agent_calls(model, messages):
    """Two calls, as a tool loop makes them: ask, then answer from the tool's result."""
    first = model.invoke(messages)
    result = ToolMessage("shipped", tool_call_id=first.tool_calls[0]["id"])
    return first, model.invoke([*messages, first, result])


def scripted(counter: list, final: str = "It shipped.") -> ScriptedChatModel:
    def answer(messages):
        counter.append(1)
        return say(final)

    def ask(messages):
        counter.append(1)
        return call(("lookup", {"order": "A1"}))

    return ScriptedChatModel(model_name="m", script=[ask, answer])


def session(tmp_path, mode, **kw) -> ReplaySession:
    return ReplaySession(tmp_path / "q.t0.jsonl", mode, question_id="q", **kw)


def test_once_records_a_missing_cassette_then_replays_without_calling(tmp_path):
    live: list = []
    with (s := session(tmp_path, "once")).active():
        first, _ = agent_calls(scripted(live), conversation())
    assert s.finish() and s.recorded == 2 and len(live) == 2
    with (s := session(tmp_path, "once")).active():
        again = agent_calls(scripted(live, final="something else"), conversation())
    assert len(live) == 2 and s.replayed == 2 and not s.finish()
    assert again[1].content == "It shipped."
    assert again[0].tool_calls == first.tool_calls


def test_none_without_a_cassette_refuses_the_first_call(tmp_path):
    live: list = []
    with (s := session(tmp_path, "none")).active(), pytest.raises(ReplayMiss) as miss:
        agent_calls(scripted(live), conversation())
    assert live == [] and "call #1" in str(miss.value) and "no cassette" in str(miss.value)
    assert s.misses and not s.finish() and not (tmp_path / "q.t0.jsonl").exists()


def test_new_records_only_what_changed_and_all_records_everything(tmp_path):
    live: list = []
    with (s := session(tmp_path, "once")).active():
        agent_calls(scripted(live), conversation())
    s.finish()
    # A different tool result: the first call still fits, the second is recorded anew.
    with (s := session(tmp_path, "new")).active():
        model = scripted(live, final="Shipped yesterday.")
        first = model.invoke(conversation())
        model.invoke([*conversation(), first, ToolMessage("late", tool_call_id="call_x")])
    assert (s.replayed, s.recorded) == (1, 1) and s.finish()
    cassette = read_cassette(tmp_path / "q.t0.jsonl")
    assert cassette is not None
    assert [r.call for r in cassette.recordings] == [0, 1]
    assert cassette.recordings[1].request["messages"][-1]["content"] == "late"
    with (s := session(tmp_path, "all")).active():
        agent_calls(scripted(live), conversation())
    assert (s.replayed, s.recorded) == (0, 2) and s.finish()


def test_a_repeated_identical_call_replays_each_recorded_answer_in_turn(tmp_path):
    answers = iter(["one", "two"])
    model = ScriptedChatModel(model_name="m", script=[lambda m: say(next(answers))])
    with (s := session(tmp_path, "all")).active():
        got = [model.invoke(conversation()).content for _ in range(2)]
    s.finish()
    assert got == ["one", "two"]
    with session(tmp_path, "none").active():
        assert [model.invoke(conversation()).content for _ in range(2)] == ["one", "two"]


def test_async_and_streamed_calls_replay(tmp_path):
    live: list = []

    async def calls(model):
        first = await model.ainvoke(conversation())
        chunks = [c async for c in model.astream([*conversation(), first])]
        return first, "".join(str(c.content) for c in chunks)

    with (s := session(tmp_path, "all")).active():
        recorded = asyncio.run(calls(scripted(live)))
    s.finish()
    with (s := session(tmp_path, "none")).active():
        replayed = asyncio.run(calls(scripted([], final="never asked")))
    assert replayed[1] == recorded[1] == "It shipped." and s.replayed == 2


def test_a_replayed_answer_is_marked_for_the_recorder_only(tmp_path):
    from tracegrade.capture.cassette import REPLAYED
    from tracegrade.capture.model_calls import _take_replayed

    with (s := session(tmp_path, "all")).active():
        agent_calls(scripted([]), conversation())
    s.finish()
    with session(tmp_path, "none").active():
        result = ScriptedChatModel(model_name="m")._generate(conversation())
    message = result.generations[0].message
    assert message.response_metadata[REPLAYED] is True
    assert _take_replayed(message) and REPLAYED not in message.response_metadata


# -- drift ----------------------------------------------------------------------------------
def recorded(tmp_path, messages, **kwargs) -> None:
    model = ScriptedChatModel(model_name="m", script=[say("ok")] * 3)
    with (s := session(tmp_path, "all")).active():
        model.invoke(messages, **kwargs)
    s.finish()


def miss(tmp_path, messages, **kwargs) -> str:
    model = ScriptedChatModel(model_name="m", script=[say("ok")] * 3)
    with session(tmp_path, "none").active(), pytest.raises(ReplayMiss) as refused:
        model.invoke(messages, **kwargs)
    return str(refused.value)


def test_drift_names_a_changed_system_prompt_with_a_text_diff(tmp_path):
    recorded(tmp_path, conversation("Line one.\nBe brief."))
    text = miss(tmp_path, conversation("Line one.\nBe thorough."))
    assert "question 'q', call #1" in text and "the system prompt changed" in text
    assert "-Be brief." in text and "+Be thorough." in text


def test_drift_names_a_changed_parameter(tmp_path):
    recorded(tmp_path, conversation(), temperature=0)
    assert "parameter 'temperature' changed: 0 -> 0.7" in miss(
        tmp_path, conversation(), temperature=0.7
    )


def test_drift_names_a_tool_whose_schema_changed_or_appeared(tmp_path):
    from langchain_core.utils.function_calling import convert_to_openai_tool

    tools = [convert_to_openai_tool(lookup)]
    recorded(tmp_path, conversation(), tools=tools)
    wider = json.loads(json.dumps(tools))
    wider[0]["function"]["parameters"]["properties"]["order"]["description"] = "the id"
    assert "tool 'lookup''s schema changed" in miss(tmp_path, conversation(), tools=wider)
    more = [*tools, convert_to_openai_tool(cancel)]
    assert "tool 'cancel' was bound" in miss(tmp_path, conversation(), tools=more)


def test_drift_names_a_message_that_appeared(tmp_path):
    recorded(tmp_path, conversation())
    text = miss(tmp_path, [*conversation(), HumanMessage("and B2?")])
    assert "a message appeared at message 3 (human): 'and B2?'" in text


# -- through the runner ---------------------------------------------------------------------
SWALLOWING = """

def build_swallowing():
    from langchain_core.messages import AIMessage
    model = ScriptedChatModel(script=[say("It is sunny.")])

    def agent(state):
        try:
            return {"messages": [model.invoke(state["messages"])]}
        except Exception:  # an agent that hides its model's failures behind a fallback
            return {"messages": [AIMessage("sunny anyway")]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_edge(START, "agent")
    return graph.compile(name="swallowing")
"""


def test_a_miss_errors_its_question_even_when_the_agent_swallows_it(tmp_path, capsys):
    sunny = {"id": "sunny", "input": "weather?", "expected": {"keyword": "sunny"}}
    path = write_project(
        tmp_path,
        questions=[],
        extra_questions=[sunny],
        target={
            "agent": "agent.py:build_swallowing",
            "graders": [{"id": "contains", "match_on": ["expected", "keyword"]}],
        },
    )
    with (tmp_path / "agent.py").open("a") as f:
        f.write(SWALLOWING)
    out = tmp_path / "r.json"
    argv = ["run", "--config", str(path), "--cassettes", str(tmp_path / "c"), "--json", str(out)]
    assert main([*argv, "--record-mode", "none", "--quiet"]) == 3
    (question,) = json.loads(out.read_text())["questions"]
    assert question["error_type"] == "ReplayMiss" and "call #1" in question["error"]
    assert not question["passed"]
    assert main([*argv, "--record-mode", "once", "--quiet"]) == 0
    assert main([*argv, "--record-mode", "none", "--quiet"]) == 0


def test_a_bad_record_mode_in_the_config_is_exit_4_naming_file_line_and_key(tmp_path, capsys):
    path = write_project(
        tmp_path, questions=["rome"], target={"cassettes": {"dir": "c", "mode": "sometimes"}}
    )
    assert main(["run", "--config", str(path), "--quiet"]) == 4
    err = capsys.readouterr().err
    assert f"{path}:" in err and "/targets/t/cassettes/mode" in err and "sometimes" in err


def test_record_mode_without_cassettes_is_exit_4(tmp_path, capsys):
    path = write_project(tmp_path, questions=["rome"])
    assert main(["run", "--config", str(path), "--record-mode", "none", "--quiet"]) == 4
    assert "--record-mode needs cassettes" in capsys.readouterr().err


# -- record_tools ---------------------------------------------------------------------------
COUNTED_LOOKUP = """

import os as _os


@tool
def lookup(city: str, api_token: str = "") -> str:
    \"\"\"Look up the weather of a city.\"\"\"
    with open(_os.environ["LOOKUPS"], "a") as f:  # the outside world, counted
        f.write(city + "\\n")
    return f"sunny in {city}"
"""


def test_record_tools_replays_the_outside_world_and_runs_the_rest(tmp_path, monkeypatch):
    lookups = tmp_path / "lookups.txt"
    monkeypatch.setenv("LOOKUPS", str(lookups))
    graders = ["tool_usage_grader", "state_grader"]
    cassettes = {"dir": "cassettes", "record_tools": ["lookup"]}
    path = write_project(
        tmp_path,
        questions=["paris", "remember"],
        target={
            "environment": "agent.py:make_environment",
            "graders": graders,
            "cassettes": cassettes,
        },
    )
    with (tmp_path / "agent.py").open("a") as f:
        f.write(COUNTED_LOOKUP)
    out = tmp_path / "r.json"
    argv = ["run", "--config", str(path), "--quiet", "--json", str(out)]
    assert main([*argv, "--record-mode", "once"]) == 0
    first = json.loads(out.read_text())["questions"]
    assert lookups.read_text() == "Paris\n"
    paris = read_cassette(tmp_path / "cassettes" / "t" / "paris.t0.jsonl")
    assert paris is not None
    assert [r.tool for r in paris.recordings] == [None, "lookup", None]
    assert paris.recordings[1].response == {"output": "sunny in Paris"}

    assert main([*argv]) == 0  # the config's mode: none
    again = json.loads(out.read_text())["questions"]
    assert lookups.read_text() == "Paris\n"  # replayed, not called
    assert [(q["id"], q["tool_calls"], q["composite"]) for q in again] == [
        (q["id"], q["tool_calls"], q["composite"]) for q in first
    ]
    remember = next(q for q in again if q["id"] == "remember")
    state = next(g for g in remember["graders"] if g["id"] == "state_grader")
    assert state["passed"]  # the environment's tool ran for real: the state is there


# -- tracegrade cassettes diff / prune ------------------------------------------------------
def test_cassettes_diff_lists_and_prune_removes_what_no_question_uses(tmp_path, capsys):
    path = write_project(tmp_path, questions=["paris", "rome"], target={"repeats": 2})
    cassettes = tmp_path / "c"
    argv = ["--config", str(path), "--cassettes", str(cassettes)]
    assert main(["run", *argv, "--record-mode", "once", "--quiet"]) in (0, 2)
    folder = cassettes / "t"
    assert sorted(p.name for p in folder.iterdir()) == [
        "paris.t0.jsonl",
        "paris.t1.jsonl",
        "rome.t0.jsonl",
        "rome.t1.jsonl",
    ]
    # The dataset drops rome; the repeats drop to 1.
    write_project(tmp_path, questions=["paris", "echo"], target={"repeats": 1})
    capsys.readouterr()
    assert main(["cassettes", "diff", *argv]) == 0
    out = capsys.readouterr().out
    assert "unused: paris.t1.jsonl" in out and "unused: rome.t0.jsonl" in out
    assert "unused: rome.t1.jsonl" in out and "not recorded: echo#0" in out
    assert "paris.t0" not in out
    assert len(list(folder.iterdir())) == 4  # diff removes nothing
    assert main(["cassettes", "prune", *argv]) == 0
    assert sorted(p.name for p in folder.iterdir()) == ["paris.t0.jsonl"]
    assert main(["run", *argv, "--id", "paris", "--record-mode", "none", "--quiet"]) == 0


# -- structured output and worker processes -------------------------------------------------
def test_chat_openai_structured_output_over_http_replays_offline(tmp_path):
    from langchain_openai import ChatOpenAI
    from pydantic import BaseModel

    from tests.openai_server import OpenAIServer, reply

    class Status(BaseModel):
        order: str
        status: str

    server = OpenAIServer().start()
    server.enqueue(reply({"order": "A1", "status": "shipped"}))
    model = ChatOpenAI(model="gpt-x", base_url=server.base_url, api_key="sk-k", max_retries=0)
    structured = model.with_structured_output(Status, method="json_schema")
    try:
        with (s := session(tmp_path, "once")).active():
            live = structured.invoke("where is A1?")
        s.finish()
    finally:
        server.stop()
    (recording,) = read_cassette(tmp_path / "q.t0.jsonl").recordings  # type: ignore[union-attr]
    assert recording.request["response_format"]["schema"]["required"] == ["order", "status"]
    with session(tmp_path, "none").active():
        again = structured.invoke("where is A1?")
    assert again == live == Status(order="A1", status="shipped")
    assert len(server.requests) == 1


def test_workers_replay_each_trial_its_own_recording(tmp_path, capsys):
    """A nondeterministic agent (its answer depends on the process and the call), recorded with
    two trials per question, replays under two worker processes with the same verdicts."""
    path = write_project(
        tmp_path,
        questions=["pid", "paris"],
        target={"repeats": 2, "graders": ["tool_usage_grader"]},
    )
    out = tmp_path / "r.json"
    argv = ["run", "--config", str(path), "--cassettes", str(tmp_path / "c")]
    argv += ["--quiet", "--json", str(out)]
    assert main([*argv, "--record-mode", "once"]) in (0, 2)
    recorded = json.loads(out.read_text())["questions"]
    assert main([*argv, "--record-mode", "none", "--workers", "2"]) in (0, 2)
    replayed = json.loads(out.read_text())["questions"]

    def key(q):
        return (q["id"], q["trial"], q["error"], q["composite"], json.dumps(q["tool_calls"]))

    assert sorted(map(key, replayed)) == sorted(map(key, recorded))
    assert all(q["error"] is None for q in replayed)
    assert all(
        sum(m["replayed_calls"] for m in q["usage"]["agent"]["models"].values()) >= 1
        for q in replayed
    )


def test_reports_say_a_replayed_cost_was_recorded_not_spent(tmp_path, capsys):
    path = write_project(tmp_path, questions=["paris"])
    argv = ["run", "--config", str(path), "--cassettes", str(tmp_path / "c")]
    assert main([*argv, "--record-mode", "once"]) == 0
    assert "calls replayed" not in capsys.readouterr().out
    md = tmp_path / "r.md"
    assert main([*argv, "--record-mode", "none", "--markdown", str(md)]) == 0
    console = capsys.readouterr().out
    assert "unpriced (recorded: 2 of 2 calls replayed, not spent)" in console
    assert "(recorded: 2 of 2 calls replayed, not spent)" in md.read_text()


def test_new_drops_recordings_the_run_no_longer_used(tmp_path):
    recorded(tmp_path, conversation())
    model = ScriptedChatModel(model_name="m", script=[say("ok")] * 3)
    with (s := session(tmp_path, "new")).active():
        pass  # the agent no longer calls the model at all
    assert s.finish()
    cassette = read_cassette(tmp_path / "q.t0.jsonl")
    assert cassette is not None and cassette.recordings == []
    with (s := session(tmp_path, "new")).active():
        model.invoke(conversation())
    assert s.finish() and s.recorded == 1
    with (s := session(tmp_path, "new")).active():
        model.invoke(conversation())
    assert not s.finish() and s.replayed == 1  # nothing changed: the file is left alone


def test_an_answer_holding_a_secret_is_stored_redacted_and_still_replays(tmp_path):
    secret = "sk-answerLEAK0123456789abcdefghijKL"
    script = [say(f"use {secret} to log in"), say("done")]
    with (s := session(tmp_path, "all")).active():
        model = ScriptedChatModel(model_name="m", script=script)
        first = model.invoke(conversation())
        model.invoke([*conversation(), first, HumanMessage("thanks")])
    assert s.finish()
    assert secret not in (tmp_path / "q.t0.jsonl").read_text()
    with (s := session(tmp_path, "none")).active():
        model = ScriptedChatModel(model_name="m", script=[say("never asked")] * 2)
        replayed = model.invoke(conversation())
        last = model.invoke([*conversation(), replayed, HumanMessage("thanks")])
    assert secret not in replayed.content and "(redacted)" in replayed.content
    assert last.content == "done" and s.replayed == 2 and not s.misses
