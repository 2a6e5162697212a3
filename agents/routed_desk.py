"""A supervisor-style graph: a `router` node picks one of two sub-agents (`refund_agent`,
`ticket_agent`), each its own model/tools loop compiled as a subgraph node. One scripted model
drives all three (the router's turn is the first AI message), so a script per question decides
the route and every call. Used by the record-checks, claims and `nodes:` tests and their
OpenInference twins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph

from agents.scripted import ScriptedChatModel, call, say, tool_call
from agents.testing_graphs import react_agent

__all__ = ["ROUTES", "SCRIPTS", "build_graph", "create_ticket", "issue_refund", "lookup_order"]

ROUTES = ("refund_agent", "ticket_agent")


@tool
def lookup_order(order_id: str) -> str:
    """Look an order up by its id."""
    return f'{{"order": "{order_id}", "status": "delivered", "total": 40}}'


@tool
def issue_refund(order_id: str, amount: float) -> str:
    """Refund part or all of an order."""
    if order_id == "O-LOCKED":
        raise ValueError("order O-LOCKED is locked for refunds")
    return f'{{"order": "{order_id}", "refunded": {amount}}}'


@tool
def create_ticket(summary: str, priority: Literal["low", "high"] = "low") -> str:
    """Open a support ticket."""
    return f'{{"ticket": 1001, "summary": "{summary}", "priority": "{priority}"}}'


def _route(text: str) -> AIMessage:
    return AIMessage(content=f"route: {text}")


SCRIPTS: Mapping[str, Sequence[Any]] = {
    # refunds go to refund_agent: a lookup, then the refund
    "Refund order O-1, please.": [
        _route("refund_agent"),
        call(tool_call("lookup_order", {"order_id": "O-1"})),
        call(tool_call("issue_refund", {"order_id": "O-1", "amount": 40})),
        say("Order O-1 was refunded: 40."),
    ],
    # the same request sent down the wrong route
    "Refund order O-2, please.": [
        _route("ticket_agent"),
        call(tool_call("create_ticket", {"summary": "refund O-2"})),
        say("I opened ticket #1001 for your refund."),
    ],
    # the same lookup twice, identical arguments
    "Where is order O-3?": [
        _route("refund_agent"),
        call(tool_call("lookup_order", {"order_id": "O-3"})),
        call(tool_call("lookup_order", {"order_id": "O-3"})),
        say("Order O-3 was delivered."),
    ],
    # an argument the tool's schema forbids (priority is low or high)
    "My printer is on fire.": [
        _route("ticket_agent"),
        call(tool_call("create_ticket", {"summary": "printer fire", "priority": "urgent"})),
        say("Done."),
    ],
    # the refund fails; the agent says it worked anyway
    "Refund order O-LOCKED, please.": [
        _route("refund_agent"),
        call(tool_call("issue_refund", {"order_id": "O-LOCKED", "amount": 40})),
        say("Your refund has been issued."),
    ],
    # claims a ticket it never opened
    "Please open a ticket about my login.": [
        _route("refund_agent"),
        call(tool_call("lookup_order", {"order_id": "O-9"})),
        say("I've opened ticket #1001 about your login."),
    ],
}


def build_graph(*, model: Any = None, name: str = "desk") -> Any:
    """router -> refund_agent | ticket_agent -> END."""
    model = model or ScriptedChatModel(script=dict(SCRIPTS))
    refunds = react_agent(
        model, [lookup_order, issue_refund], name="refund_agent", handle_tool_errors=True
    )
    tickets = react_agent(model, [create_ticket], name="ticket_agent", handle_tool_errors=True)

    def router(state: MessagesState) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    async def arouter(state: MessagesState) -> dict:
        return {"messages": [await model.ainvoke(state["messages"])]}

    def pick(state: MessagesState) -> str:
        text = str(state["messages"][-1].content)
        return next((r for r in ROUTES if r in text), END)

    from langchain_core.runnables import RunnableLambda

    builder = StateGraph(MessagesState)
    builder.add_node("router", RunnableLambda(router, afunc=arouter, name="router"))
    builder.add_node("refund_agent", refunds)
    builder.add_node("ticket_agent", tickets)
    builder.add_edge(START, "router")
    builder.add_conditional_edges("router", pick, [*ROUTES, END])
    builder.add_edge("refund_agent", END)
    builder.add_edge("ticket_agent", END)
    return builder.compile(name=name)
