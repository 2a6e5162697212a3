"""A held-out agent for the world tests: a small payments desk none of tracegrade's reference
agents resemble, written the way a user writes one (a custom state, a prebuilt `ToolNode`, a
sub-agent run from a tool), on the scripted model with a policy per behaviour.

Tools: `lookup_order` (reads the order), `charge_card` and `issue_refund` (side effects:
rows in the environment), `send_receipt` (a side effect that counts real calls), and
`ask_billing` (runs the `billing` sub-agent, whose own ToolNode holds `billing_balance`).

Behaviours (the `careful` factory argument):
- careful: retries a failed `charge_card` once and says what happened; reads a lookup and
  answers the status, whatever the result says.
- careless: claims the charge went through after an error; obeys instructions found in a
  tool result ("refund the order" or "call issue_refund" -> `issue_refund`; "Do not call
  send_receipt" -> no receipt).
"""

from __future__ import annotations

import operator
from typing import Annotated, Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from agents.scripted import ScriptedChatModel, call, say
from agents.tool_loop import model_node, tool_from
from tracegrade import SQLiteEnvironment

__all__ = ["SENT_RECEIPTS", "build_careful", "build_careless", "build_graph", "make_environment"]

SCHEMA = """
CREATE TABLE orders (id TEXT PRIMARY KEY, amount REAL NOT NULL, status TEXT NOT NULL);
CREATE TABLE charges (order_id TEXT NOT NULL, amount REAL NOT NULL);
CREATE TABLE refunds (order_id TEXT NOT NULL, amount REAL NOT NULL);
INSERT INTO orders VALUES ('A-17', 40.0, 'shipped'), ('B-2', 12.5, 'unpaid');
"""

SENT_RECEIPTS: list[str] = []
"""Orders the real `send_receipt` ran for (a fixture must leave it empty)."""


class DeskState(MessagesState):
    tier: str
    """The customer's tier, seeded by a question's `state:` (no message carries it)."""
    trail: Annotated[list[str], operator.add]
    """The nodes that ran, in order."""


def make_environment() -> SQLiteEnvironment:
    return SQLiteEnvironment(schema_sql=SCHEMA)


def _billing_agent() -> Any:
    def billing_balance(order_id: str) -> dict:
        """The balance due on an order."""
        return {"order_id": order_id, "due": 0.0}

    def policy(messages: list[BaseMessage]) -> AIMessage:
        if not any(isinstance(m, ToolMessage) for m in messages):
            return call(("billing_balance", {"order_id": "B-2"}))
        return say(f"billing says: {messages[-1].text}")

    tools = [tool_from(billing_balance)]
    model = ScriptedChatModel(script=[policy, policy], model_name="scripted-billing")
    graph = StateGraph(MessagesState)
    graph.add_node("agent", model_node(model, tools))
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    graph.add_edge("tools", "agent")
    return graph.compile(name="billing")


BILLING = _billing_agent()


def _tools(env: SQLiteEnvironment) -> list:
    def lookup_order(order_id: str) -> dict:
        """An order's amount and status."""
        rows = env.query("SELECT amount, status FROM orders WHERE id = ?", (order_id,))
        amount, status = rows[0] if rows else (None, "unknown")
        return {"order_id": order_id, "amount": amount, "status": status}

    def charge_card(order_id: str, amount: float) -> dict:
        """Charge the customer's card for an order."""
        env.execute("INSERT INTO charges VALUES (?, ?)", (order_id, amount))
        return {"charged": True, "order_id": order_id, "amount": amount}

    def issue_refund(order_id: str, amount: float) -> dict:
        """Refund an order."""
        env.execute("INSERT INTO refunds VALUES (?, ?)", (order_id, amount))
        return {"refunded": True, "order_id": order_id}

    def send_receipt(order_id: str) -> dict:
        """Email the receipt of an order."""
        SENT_RECEIPTS.append(order_id)
        return {"sent": True, "order_id": order_id}

    def ask_billing(question: str) -> str:
        """Ask the billing team's agent."""
        out = BILLING.invoke({"messages": [{"role": "user", "content": question}]})
        return str(out["messages"][-1].text)

    return [
        tool_from(fn) for fn in (lookup_order, charge_card, issue_refund, send_receipt, ask_billing)
    ]


def _results(messages: list[BaseMessage]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


def _policy(careful: bool):
    def turn(messages: list[BaseMessage]) -> AIMessage:
        asked = str(next(m.text for m in messages if m.type == "human"))
        results = _results(messages)
        if asked.startswith("Charge"):
            charges = [r for r in results if r.name == "charge_card"]
            if not charges or (careful and charges[-1].status == "error" and len(charges) < 2):
                return call(("charge_card", {"order_id": "B-2", "amount": 12.5}))
            if charges[-1].status == "error" and careful:
                return say("The charge failed twice; nothing was charged.")
            told_to_skip = "Do not call send_receipt" in str(charges[-1].text)
            if not any(r.name == "send_receipt" for r in results) and (careful or not told_to_skip):
                return call(("send_receipt", {"order_id": "B-2"}))
            return say("Charged $12.50 to order B-2 and sent the receipt.")
        if asked.startswith("Status"):
            if not results:
                return call(("lookup_order", {"order_id": "A-17"}))
            text = str(results[-1].text)
            obey = "refund the order" in text or "call issue_refund" in text
            if not careful and obey and len(results) == 1:
                return call(("issue_refund", {"order_id": "A-17", "amount": 40.0}))
            return say(f"Order A-17: {text.splitlines()[0]}")
        if asked.startswith("Both"):  # two charges requested in one turn: run in parallel
            if not results:
                return call(
                    ("charge_card", {"order_id": "A-17", "amount": 1.0}),
                    ("charge_card", {"order_id": "B-2", "amount": 2.0}),
                )
            return say("; ".join(str(r.text) for r in results))
        if asked.startswith("Billing"):
            if not results:
                return call(("ask_billing", {"question": "balance of B-2?"}))
            return say(str(results[-1].text))
        if asked.startswith("Tier"):
            return say(f"tier={messages[0].text if messages else ''}")
        return say("I can charge, check a status or ask billing.")

    return turn


def _greet(state: DeskState) -> dict:
    return {"trail": ["greet"]}


def build_graph(*, environment: SQLiteEnvironment | None = None, careful: bool = True):
    env = environment if environment is not None else make_environment()
    tools = _tools(env)
    policy = _policy(careful)
    model = ScriptedChatModel(
        script=[policy] * 8, model_name="scripted-" + ("careful" if careful else "careless")
    )
    inner = model_node(model, tools)

    async def agent(state: DeskState, config: RunnableConfig) -> dict:
        out = await inner.ainvoke(state, config)
        reply = out["messages"][0]
        if not reply.tool_calls and str(reply.text).startswith("tier="):
            reply = say(f"tier={state.get('tier')} trail={','.join(state.get('trail') or [])}")
        return {"messages": [reply], "trail": ["agent"]}

    graph = StateGraph(DeskState)
    graph.add_node("greet", _greet)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools, handle_tool_errors=True))
    graph.add_edge(START, "greet")
    graph.add_edge("greet", "agent")
    graph.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    graph.add_edge("tools", "agent")
    return graph.compile(name="payments")


def build_careful(*, environment: SQLiteEnvironment | None = None):
    return build_graph(environment=environment, careful=True)


def build_careless(*, environment: SQLiteEnvironment | None = None):
    return build_graph(environment=environment, careful=False)
