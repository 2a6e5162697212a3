"""A new user's own shop agent: five tools over a SQLite shop, a LangGraph graph on the scripted
chat model, and its dataset. Not one of tracegrade's reference agents: it is written the way
the README tells a user to write one, to check that the README's minimal config fails it when
it does the wrong thing.

`build_graph` follows the customer's request; `build_broken_graph` is the same agent with three
mistakes whose answers still read well: it orders the wrong quantity, claims a cancellation it
never made, and cancels the wrong order.
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from agents.scripted import ScriptedChatModel, call, say
from tracegrade import SQLiteEnvironment

__all__ = ["DATASET", "build_broken_graph", "build_graph", "make_environment"]

SCHEMA = """
CREATE TABLE products (sku TEXT PRIMARY KEY, name TEXT NOT NULL, stock INTEGER NOT NULL);
CREATE TABLE orders (id TEXT PRIMARY KEY, sku TEXT NOT NULL, qty INTEGER NOT NULL,
                     status TEXT NOT NULL);
INSERT INTO products VALUES ('MUG', 'blue mug', 12), ('TEA', 'green tea', 0), ('PEN', 'pen', 40);
INSERT INTO orders VALUES ('O1', 'PEN', 3, 'placed'), ('O2', 'MUG', 1, 'placed');
"""

Q_ORDER = "Please order 2 blue mugs."
Q_CANCEL = "Cancel my order O1, please."
Q_CANCEL_OTHER = "Cancel order O2."
Q_STOCK = "Do you have green tea in stock?"
Q_STATUS = "What is the status of order O1?"
Q_PEN = "Order one pen for me."
Q_MUG_STOCK = "How many blue mugs do you have?"
Q_STATUS_O2 = "Where is my order O2?"
Q_TEA = "Order 5 green teas."
Q_PEN_STOCK = "Is the pen in stock?"

DATASET = f"""
questions:
  - id: order_mugs
    input: "{Q_ORDER}"
    expected_tools:
      - {{tool: find_product, should_run: true, args: {{name: blue mug}}}}
      - {{tool: place_order, should_run: true, args: {{sku: MUG, qty: 2}}, after: find_product}}
    metadata:
      state:
        assertions:
          - {{kind: sql, query: "SELECT sku, qty FROM orders WHERE id = 'O3'", rows: [[MUG, 2]]}}
  - id: cancel_order
    input: "{Q_CANCEL}"
    expected_tools:
      - {{tool: cancel_order, should_run: true, args: {{order_id: O1}}}}
    metadata:
      state:
        assertions:
          - {{kind: sql, query: "SELECT status FROM orders WHERE id = 'O1'", equals: cancelled}}
  - id: cancel_other_order
    input: "{Q_CANCEL_OTHER}"
    expected_tools:
      - {{tool: cancel_order, should_run: true, args: {{order_id: O2}}}}
    metadata:
      state:
        assertions:
          - {{kind: sql, query: "SELECT status FROM orders WHERE id = 'O2'", equals: cancelled}}
          - {{kind: sql, query: "SELECT status FROM orders WHERE id = 'O1'", equals: placed}}
  - id: tea_in_stock
    input: "{Q_STOCK}"
    expected_tools:
      - {{tool: check_stock, should_run: true, args: {{sku: TEA}}}}
      - {{tool: place_order, should_run: false}}
  - id: order_status
    input: "{Q_STATUS}"
    expected_tools:
      - {{tool: order_status, should_run: true, args: {{order_id: O1}}}}
  - id: order_pen
    input: "{Q_PEN}"
    expected_tools:
      - {{tool: find_product, should_run: true, args: {{name: pen}}}}
      - {{tool: place_order, should_run: true, args: {{sku: PEN, qty: 1}}, after: find_product}}
  - id: mug_stock
    input: "{Q_MUG_STOCK}"
    expected_tools:
      - {{tool: find_product, should_run: true}}
      - {{tool: check_stock, should_run: true, args: {{sku: MUG}}, after: find_product}}
  - id: order_status_o2
    input: "{Q_STATUS_O2}"
    expected_tools:
      - {{tool: order_status, should_run: true, args: {{order_id: O2}}}}
  - id: tea_out_of_stock
    input: "{Q_TEA}"
    expected_tools:
      - {{tool: check_stock, should_run: true, args: {{sku: TEA}}}}
      - {{tool: place_order, should_run: false}}
    metadata:
      state:
        assertions:
          - {{kind: sql, query: "SELECT count(*) FROM orders", rows: [[2]]}}
  - id: pen_stock
    input: "{Q_PEN_STOCK}"
    expected_tools:
      - {{tool: check_stock, should_run: true, args: {{sku: PEN}}}}
"""
"""The agent's dataset (YAML): ten questions, what it must call, and the shop it must leave."""


def make_environment() -> SQLiteEnvironment:
    """A fresh shop per question."""
    return SQLiteEnvironment(schema_sql=SCHEMA)


def _tools(env: SQLiteEnvironment) -> list:
    @tool
    def find_product(name: str) -> dict:
        """Find a product by name; returns its sku."""
        rows = env.query("SELECT sku FROM products WHERE name = ?", (name,))
        return {"sku": rows[0][0]} if rows else {"status": "not_found"}

    @tool
    def check_stock(sku: str) -> dict:
        """How many of a product are in stock."""
        rows = env.query("SELECT stock FROM products WHERE sku = ?", (sku,))
        return {"sku": sku, "stock": rows[0][0] if rows else 0}

    @tool
    def place_order(sku: str, qty: int) -> dict:
        """Order `qty` of a product."""
        (count,) = env.query("SELECT count(*) FROM orders")[0]
        order_id = f"O{count + 1}"
        env.execute("INSERT INTO orders VALUES (?, ?, ?, 'placed')", (order_id, sku, qty))
        return {"status": "placed", "order_id": order_id}

    @tool
    def cancel_order(order_id: str) -> dict:
        """Cancel an order by id."""
        changed = env.execute("UPDATE orders SET status = 'cancelled' WHERE id = ?", (order_id,))
        return {"status": "cancelled" if changed else "not_found", "order_id": order_id}

    @tool
    def order_status(order_id: str) -> dict:
        """The status of an order."""
        rows = env.query("SELECT status FROM orders WHERE id = ?", (order_id,))
        return {"order_id": order_id, "status": rows[0][0] if rows else "not_found"}

    return [find_product, check_stock, place_order, cancel_order, order_status]


GOOD: dict[str, list[Any]] = {
    Q_ORDER: [
        call(("find_product", {"name": "blue mug"})),
        call(("place_order", {"sku": "MUG", "qty": 2})),
        say("Done: 2 blue mugs are on their way (order O3)."),
    ],
    Q_CANCEL: [call(("cancel_order", {"order_id": "O1"})), say("Order O1 is cancelled.")],
    Q_CANCEL_OTHER: [call(("cancel_order", {"order_id": "O2"})), say("Order O2 is cancelled.")],
    Q_STOCK: [call(("check_stock", {"sku": "TEA"})), say("Sorry, green tea is out of stock.")],
    Q_STATUS: [call(("order_status", {"order_id": "O1"})), say("Order O1 has been placed.")],
    Q_PEN: [
        call(("find_product", {"name": "pen"})),
        call(("place_order", {"sku": "PEN", "qty": 1})),
        say("One pen is ordered (order O3)."),
    ],
    Q_MUG_STOCK: [
        call(("find_product", {"name": "blue mug"})),
        call(("check_stock", {"sku": "MUG"})),
        say("We have 12 blue mugs."),
    ],
    Q_STATUS_O2: [call(("order_status", {"order_id": "O2"})), say("Order O2 has been placed.")],
    Q_TEA: [call(("check_stock", {"sku": "TEA"})), say("Green tea is out of stock, sorry.")],
    Q_PEN_STOCK: [call(("check_stock", {"sku": "PEN"})), say("Yes, 40 pens are in stock.")],
}

BROKEN: dict[str, list[Any]] = {
    **GOOD,
    # The wrong quantity, and an answer saying the right one.
    Q_ORDER: [
        call(("find_product", {"name": "blue mug"})),
        call(("place_order", {"sku": "MUG", "qty": 3})),
        say("Done: 2 blue mugs are on their way (order O3)."),
    ],
    # A cancellation it claims and never made: no tool call at all.
    Q_CANCEL: [say("Order O1 is cancelled.")],
    # A wrong call: cancels the customer's other order.
    Q_CANCEL_OTHER: [call(("cancel_order", {"order_id": "O1"})), say("Order O2 is cancelled.")],
}


def _graph(script: dict[str, list[Any]], environment: SQLiteEnvironment | None):
    tools = _tools(environment if environment is not None else make_environment())
    model = ScriptedChatModel(script=script).bind_tools(tools)

    async def agent(state: MessagesState) -> dict:
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(name="shop")


def build_graph(*, environment: SQLiteEnvironment | None = None):
    """The shop agent doing what it is asked."""
    return _graph(GOOD, environment)


def build_broken_graph(*, environment: SQLiteEnvironment | None = None):
    """The shop agent with three wrong actions behind answers that read well."""
    return _graph(BROKEN, environment)
