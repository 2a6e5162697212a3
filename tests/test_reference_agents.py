"""The reference agents invoked directly: the good scripts make the right tool calls and leave the
right state; the regressed scripts' planted mistakes show in what they did and left; every graph
acts only on its own environment."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from opentelemetry.sdk.trace import TracerProvider

from agents import content_agent, support_desk
from agents.scripted import ScriptedChatModel, call, say
from agents.tool_loop import LATENCY_ENV, demo_latency
from tracegrade import Recorder


def tool_calls(state) -> list[tuple[str, dict]]:
    """(name, args) of every tool call the top-level model requested, in order."""
    return [
        (tc["name"], tc["args"])
        for m in state["messages"]
        if isinstance(m, AIMessage)
        for tc in m.tool_calls
    ]


def run(module, question: str, *, script: str = "good"):
    env = module.make_environment()
    graph = module.build_graph(environment=env, script=script)
    state = graph.invoke({"messages": [HumanMessage(question)]})
    return env, state, state["messages"][-1].text


def bookings(env, customer: str) -> list[tuple]:
    return env.query(
        "SELECT date, slot, status FROM bookings WHERE customer_id = ? ORDER BY id", (customer,)
    )


# -- support desk, good script -----------------------------------------------------------------
def test_good_booking_checks_then_books_the_requested_slot():
    env, state, answer = run(support_desk, support_desk.Q_BOOK)
    assert tool_calls(state) == [
        ("lookup_customer", {"email": "ana@example.com"}),
        ("check_availability", {"date": "2026-12-03", "slot": "10:00"}),
        ("book_appointment", {"customer": "C001", "date": "2026-12-03", "slot": "10:00"}),
    ]
    assert bookings(env, "C001") == [("2026-12-03", "10:00", "confirmed")]
    booking_id = env.query("SELECT id FROM bookings WHERE customer_id = 'C001'")[0][0]
    assert booking_id in answer  # the answer quotes the id the tool returned


def test_good_cancel_looks_up_then_cancels():
    env, state, _ = run(support_desk, support_desk.Q_CANCEL)
    assert [name for name, _ in tool_calls(state)] == ["lookup_customer", "cancel_booking"]
    assert env.query("SELECT status FROM bookings WHERE id = 'B100'") == [("cancelled",)]


def test_good_refund_over_limit_escalates_and_refunds_nothing():
    env, state, answer = run(support_desk, support_desk.Q_REFUND_OVER)
    assert [name for name, _ in tool_calls(state)] == ["lookup_customer", "escalate_to_human"]
    assert env.query("SELECT count(*) FROM refunds") == [(0,)]
    with pytest.raises(KeyError):
        env.read("refund:B101")
    ticket = env.read("escalation:C003")["ticket"]
    assert ticket in answer


def test_good_small_refund_is_issued():
    env, _, _ = run(support_desk, support_desk.Q_REFUND_SMALL)
    assert env.query("SELECT booking_id, amount FROM refunds") == [("B102", 40.0)]
    assert env.read("refund:B102") == 40


def test_good_unknown_customer_changes_nothing():
    env, state, _ = run(support_desk, support_desk.Q_UNKNOWN)
    assert [name for name, _ in tool_calls(state)] == ["lookup_customer"]
    assert env.query("SELECT id, status FROM bookings ORDER BY id") == [
        ("B100", "confirmed"),
        ("B101", "confirmed"),
        ("B102", "confirmed"),
    ]


def test_multi_turn_question_resumes_after_the_stored_assistant_turn():
    env = support_desk.make_environment()
    graph = support_desk.build_graph(environment=env)
    messages = [
        {"role": "user", "content": support_desk.Q_MULTI_TURN},
        {"role": "assistant", "content": "Hello! How can I help you today?"},
        {"role": "user", "content": "Can you book me for 2026-12-05 at 09:00?"},
    ]
    state = graph.invoke({"messages": messages})
    assert [n for n, _ in tool_calls(state)] == [
        "lookup_customer",
        "check_availability",
        "book_appointment",
    ]
    assert bookings(env, "C006") == [("2026-12-05", "09:00", "confirmed")]


def test_booking_an_unavailable_slot_is_refused_by_the_tool():
    env = support_desk.make_environment()
    book = {t.name: t for t in support_desk.make_tools(env)}["book_appointment"]
    result = book.invoke({"customer": "C001", "date": "2026-12-01", "slot": "14:00"})
    assert result["status"] == "unavailable"
    assert bookings(env, "C001") == []


# -- support desk, regressed script: each planted mistake shows ---------------------------------
def test_regressed_wrong_argument_books_the_wrong_date_and_claims_the_right_one():
    env, state, answer = run(support_desk, support_desk.Q_BOOK, script="regressed")
    booked = dict(tool_calls(state))["book_appointment"]
    assert booked["date"] != "2026-12-03"
    assert bookings(env, "C001") == [(booked["date"], "10:00", "confirmed")]
    assert "2026-12-03" in answer  # the text alone would have passed


def test_regressed_missing_step_books_without_checking():
    env, state, _ = run(support_desk, support_desk.Q_BOOK_UNCHECKED, script="regressed")
    names = [name for name, _ in tool_calls(state)]
    assert "book_appointment" in names and "check_availability" not in names
    assert bookings(env, "C004") == [("2026-12-04", "15:00", "confirmed")]


def test_regressed_claims_a_cancellation_it_never_made():
    env, state, answer = run(support_desk, support_desk.Q_CANCEL, script="regressed")
    assert "cancelled" in answer
    assert "cancel_booking" not in [name for name, _ in tool_calls(state)]
    assert env.query("SELECT status FROM bookings WHERE id = 'B100'") == [("confirmed",)]


def test_regressed_calls_the_forbidden_refund_over_the_limit():
    env, state, _ = run(support_desk, support_desk.Q_REFUND_OVER, script="regressed")
    refund = dict(tool_calls(state))["issue_refund"]
    assert refund["amount"] > support_desk.REFUND_LIMIT
    assert env.read("refund:B101") == 450
    assert env.query("SELECT count(*) FROM escalations") == [(0,)]


# -- content agent and its named sub-agent ------------------------------------------------------
def test_content_agent_drafts_from_what_the_researcher_read():
    env, state, answer = run(content_agent, content_agent.Q_DRAFT)
    assert [name for name, _ in tool_calls(state)] == ["research", "create_draft"]
    rows = env.query(
        "SELECT id, status, body FROM articles WHERE slug = 'checkpointing-in-langgraph'"
    )
    assert len(rows) == 1 and rows[0][1] == "draft"
    assert "checkpointer saves the graph state" in rows[0][2]
    assert rows[0][0] in answer


def test_content_agent_regressed_mistakes_show_in_the_database():
    env, _, _ = run(content_agent, content_agent.Q_DRAFT, script="regressed")
    (body,) = env.query("SELECT body FROM articles WHERE slug = 'checkpointing-in-langgraph'")[0]
    assert "checkpointer" not in body and "stream" in body  # researched the wrong topic

    env, state, answer = run(content_agent, content_agent.Q_PUBLISH, script="regressed")
    assert "published" in answer
    assert env.query("SELECT status FROM articles WHERE id = 'A1'") == [("draft",)]

    env, state, _ = run(content_agent, content_agent.Q_ARCHIVE, script="regressed")
    assert "delete_article" in [name for name, _ in tool_calls(state)]
    assert env.query("SELECT count(*) FROM articles WHERE slug = 'old-news'") == [(0,)]


@pytest.mark.parametrize("script", ["good", "regressed"])
async def test_sub_agent_calls_are_recorded_under_qualified_ids(script):
    env = content_agent.make_environment()
    graph = content_agent.build_graph(environment=env, script=script)
    assert graph.name == "content_agent"
    recorder = Recorder(
        tracer=TracerProvider().get_tracer("test"),
        question_id="q",
        dataset="content",
        target="content",
        agent_name=graph.name,
    )
    async with recorder.question_span():
        state = await graph.ainvoke(
            {"messages": [HumanMessage(content_agent.Q_DRAFT)]}, config={"callbacks": [recorder]}
        )
    record = recorder.seal(final_state=state)
    assert record.complete
    assert [c.qualified_id for c in record] == [
        "content_agent:research",
        "researcher:search_docs",
        "researcher:read_doc",
        "content_agent:create_draft",
    ]
    search = record.calls_of("researcher:search_docs")[0]
    assert search.depth == 1
    expected_query = "checkpoint" if script == "good" else "streaming"
    assert search.arguments == {"query": expected_query}


# -- isolation, sync/async parity, configuration -------------------------------------------------
async def test_concurrent_runs_on_two_environments_never_share_state():
    env_a, env_b = support_desk.make_environment(), support_desk.make_environment()
    graph_a = support_desk.build_graph(environment=env_a)
    graph_b = support_desk.build_graph(environment=env_b, script="regressed")
    await asyncio.gather(
        graph_a.ainvoke({"messages": [HumanMessage(support_desk.Q_BOOK)]}),
        graph_b.ainvoke({"messages": [HumanMessage(support_desk.Q_REFUND_OVER)]}),
    )
    assert bookings(env_a, "C001") == [("2026-12-03", "10:00", "confirmed")]
    assert env_a.query("SELECT count(*) FROM refunds") == [(0,)]
    assert bookings(env_b, "C001") == []
    assert env_b.read("refund:B101") == 450
    assert support_desk.make_environment().query("SELECT count(*) FROM bookings") == [(3,)]


@pytest.mark.parametrize("module", [support_desk, content_agent])
async def test_sync_and_async_invocations_agree(module):
    for question in module.QUESTIONS:
        sync_env, async_env = module.make_environment(), module.make_environment()
        sync_state = module.build_graph(environment=sync_env).invoke(
            {"messages": [HumanMessage(question)]}
        )
        async_state = await module.build_graph(environment=async_env).ainvoke(
            {"messages": [HumanMessage(question)]}
        )
        assert tool_calls(sync_state) == tool_calls(async_state)
        assert sync_state["messages"][-1].text == async_state["messages"][-1].text


def test_a_given_model_replaces_the_scripted_one():
    env = support_desk.make_environment()
    model = ScriptedChatModel(
        script=[call(("check_availability", {"date": "2026-12-02", "slot": "10:00"})), say("No.")]
    )
    state = support_desk.build_graph(environment=env, model=model).invoke(
        {"messages": [HumanMessage("anything")]}
    )
    assert state["messages"][-1].text == "No."
    assert '"available": false' in state["messages"][-2].text


def test_regressed_factory_and_unknown_script():
    graph = support_desk.build_regressed_graph(environment=support_desk.make_environment())
    state = graph.invoke({"messages": [HumanMessage(support_desk.Q_CANCEL)]})
    assert "cancel_booking" not in [n for n, _ in tool_calls(state)]
    with pytest.raises(ValueError, match="unknown script"):
        support_desk.build_graph(script="sloppy")


def test_latency_comes_from_the_argument_or_the_environment_variable(monkeypatch):
    monkeypatch.delenv(LATENCY_ENV, raising=False)
    assert demo_latency() == 0.0
    monkeypatch.setenv(LATENCY_ENV, "0.05")
    assert demo_latency() == 0.05
    assert support_desk.scripted_model().latency_s == 0.05
    assert content_agent.scripted_model(latency_s=0.2).latency_s == 0.2  # argument wins
    monkeypatch.setenv(LATENCY_ENV, "fast")
    with pytest.raises(ValueError, match=LATENCY_ENV):
        demo_latency()
    monkeypatch.setenv(LATENCY_ENV, "-1")
    with pytest.raises(ValueError, match="negative"):
        demo_latency()
