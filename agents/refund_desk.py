"""The refund desk: a named LangGraph agent that stops to ask a person before it refunds.

Before `issue_refund` runs, an `approval` node pauses the graph with LangGraph's `interrupt()`
(`{"question": "Approve a refund of $40.00 for order A-17?", "order_id": ..., "amount": ...}`);
resumed with `{"approve": true}` the refund goes through, with anything else it is declined and
the agent says so. It also talks over two turns: asked for a refund without an order number,
it asks which order, and acts on the next user message.

Exposed to tracegrade as `agents/refund_desk.py:build_graph`, `:build_regressed_graph` (one
planted mistake: the refund is issued without asking) and `:make_environment` (a fresh seeded
orders database per question). Offline by default on the scripted chat model; pass `model=` to
run the same graph on a real one. The graph is compiled without a checkpointer: tracegrade
gives it an in-memory one per question run so it can be resumed.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt

from agents import tool_loop
from agents.scripted import call, say
from agents.tool_loop import last_tool_result, tool_from
from tracegrade.environment import SQLiteEnvironment

__all__ = [
    "AGENT_NAME",
    "QUESTIONS",
    "Q_REFUND",
    "Q_TWO_TURN",
    "SCRIPTS",
    "build_fake_user",
    "build_graph",
    "build_regressed_graph",
    "make_environment",
]

AGENT_NAME = "refund_desk"

SCHEMA_SQL = """
CREATE TABLE orders (id TEXT PRIMARY KEY, amount REAL NOT NULL, status TEXT NOT NULL);
CREATE TABLE refunds (
    id INTEGER PRIMARY KEY AUTOINCREMENT, order_id TEXT NOT NULL, amount REAL NOT NULL
);
INSERT INTO orders VALUES ('A-17', 40.0, 'delivered'), ('A-18', 250.0, 'delivered');
"""

Q_REFUND = "Please refund order A-17."
"""One turn: look the order up, ask for approval, refund."""
Q_TWO_TURN = "I'd like a refund for my order."
"""Two turns: the agent asks which order; the user's next message names it."""


QUESTIONS = [Q_REFUND, Q_TWO_TURN]
"""The first user message of each question of examples/datasets/refund_desk.yaml."""


def make_environment() -> SQLiteEnvironment:
    """A fresh, seeded, in-memory orders database: one per question, never shared."""
    return SQLiteEnvironment(schema_sql=SCHEMA_SQL)


def make_tools(environment: SQLiteEnvironment) -> list:
    env = environment

    def lookup_order(order_id: str) -> dict:
        """Look an order up by id: its amount and status."""
        rows = env.query("SELECT id, amount, status FROM orders WHERE id = ?", (order_id,))
        if not rows:
            return {"found": False, "order_id": order_id}
        found_id, amount, status = rows[0]
        return {"found": True, "order_id": found_id, "amount": amount, "status": status}

    def issue_refund(order_id: str, amount: float) -> dict:
        """Refund `amount` dollars against an order."""
        env.execute("INSERT INTO refunds (order_id, amount) VALUES (?, ?)", (order_id, amount))
        return {"status": "refunded", "order_id": order_id, "amount": amount}

    return [tool_from(lookup_order), tool_from(issue_refund)]


def _refunded(messages: list[BaseMessage]) -> AIMessage:
    """The final answer, from what the last tool (or the approver) actually said."""
    result = last_tool_result(messages)
    if isinstance(result, dict) and result.get("status") == "refunded":
        return say(f"Done: ${result['amount']:.2f} is refunded to order {result['order_id']}.")
    return say("The refund was not approved, so I did not issue it.")


def _script() -> dict[str, list]:
    refund = [
        call(("lookup_order", {"order_id": "A-17"})),
        call(("issue_refund", {"order_id": "A-17", "amount": 40.0})),
        _refunded,
    ]
    two_turns = [say("Sure. Which order is it?"), *refund, say("You're welcome. Goodbye!")]
    return {Q_REFUND: refund, Q_TWO_TURN: two_turns}


SCRIPTS: dict[str, dict[str, list]] = {"good": _script(), "regressed": _script()}
"""The same model script for both graphs: the planted mistake is in the graph (no approval)."""


def _approval(state: MessagesState) -> Command:
    """Ask a person before each refund the model requested; route on the answer."""
    last = state["messages"][-1]
    declined = []
    for tc in getattr(last, "tool_calls", None) or ():
        if tc["name"] != "issue_refund":
            continue
        args = tc.get("args") or {}
        answer = interrupt(
            {
                "question": f"Approve a refund of ${float(args.get('amount', 0)):.2f} "
                f"for order {args.get('order_id')}?",
                "action": "issue_refund",
                "order_id": args.get("order_id"),
                "amount": args.get("amount"),
            }
        )
        approved = answer is True or (isinstance(answer, dict) and answer.get("approve") is True)
        if not approved:
            declined.append(tc["id"])
    if declined:
        replies = [
            ToolMessage("the approver declined this refund", tool_call_id=i, status="error")
            for i in declined
        ]
        return Command(goto="agent", update={"messages": replies})
    return Command(goto="tools")


def _route(state: MessagesState) -> str:
    last = state["messages"][-1]
    calls = getattr(last, "tool_calls", None) or ()
    if not calls:
        return END
    return "approval" if any(c["name"] == "issue_refund" for c in calls) else "tools"


def build_graph(
    *,
    environment: SQLiteEnvironment | None = None,
    model: BaseChatModel | None = None,
    script: Literal["good", "regressed"] = "good",
    ask_before_refund: bool = True,
    latency_s: float | None = None,
) -> CompiledStateGraph:
    """The refund desk graph, named `refund_desk`, acting on `environment` (a fresh one when
    omitted). `ask_before_refund=False` leaves the approval step out."""
    env = environment if environment is not None else make_environment()
    chat = model or tool_loop.scripted_model(
        SCRIPTS, script, latency_s=latency_s, name="scripted-refunds"
    )
    tools = make_tools(env)
    graph = StateGraph(MessagesState)
    graph.add_node("agent", tool_loop.model_node(chat, tools))
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    if ask_before_refund:
        graph.add_node("approval", _approval, destinations=("agent", "tools"))
        graph.add_conditional_edges("agent", _route, ["approval", "tools", END])
    else:
        graph.add_conditional_edges(
            "agent", lambda s: END if _route(s) == END else "tools", ["tools", END]
        )
    graph.add_edge("tools", "agent")
    return graph.compile(name=AGENT_NAME)


def _fake_user_turn(messages: list[BaseMessage]) -> AIMessage:
    """The offline simulated user: reads its goal (an order id) and the agent's last message
    from the prompt, and answers as the user would, in the simulated user's JSON format."""
    prompt = str(messages[-1].text)
    goal = prompt.split("<goal>", 1)[-1].split("</goal>", 1)[0]
    wanted = re.search(r"[A-Z]-\d+", goal)
    order = wanted.group(0) if wanted else "A-17"
    said = prompt.split("<conversation>", 1)[-1].split("</conversation>", 1)[0]
    last = [line for line in said.splitlines() if line.startswith("agent: ")][-1:]
    last_text = last[0] if last else ""
    if f"refunded to order {order}" in last_text:
        answer = {"done": True, "reason": f"order {order} was refunded", "message": ""}
    elif "Which order" in last_text:
        answer = {"done": False, "reason": "the agent asked", "message": f"Order {order}."}
    else:
        answer = {
            "done": False,
            "reason": f"order {order} is not refunded yet",
            "message": f"I meant order {order}. Please refund it.",
        }
    return AIMessage(content=json.dumps(answer))


def build_fake_user() -> BaseChatModel:
    """A scripted stand-in for the judge model playing a simulated user (offline tests and the
    demo): `judge: {provider: langchain, chat_model: ../agents/refund_desk.py:build_fake_user}`."""
    from agents.scripted import ScriptedChatModel

    return ScriptedChatModel(script=[_fake_user_turn], model_name="scripted-user")


def build_regressed_graph(
    *, environment: SQLiteEnvironment | None = None, **options: Any
) -> CompiledStateGraph:
    """The planted mistake: the same agent issues the refund without asking anyone."""
    return build_graph(
        environment=environment, script="regressed", ask_before_refund=False, **options
    )
