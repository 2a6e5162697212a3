"""The support desk: a named LangGraph agent that books, cancels and refunds appointments in a
real SQLite database, under the policy in `examples/policies/support.md`.

Exposed to tracegrade as `agents/support_desk.py:build_graph` (the passing script),
`agents/support_desk.py:build_regressed_graph` (the same agent with realistic mistakes planted)
and `agents/support_desk.py:make_environment` (a fresh seeded database per question).

Offline by default: the chat model is `agents.scripted.ScriptedChatModel`, one mapping script
keyed by the question's first user message, so one model drives the whole example dataset.
Pass `model=` to run the same graph on a real chat model.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.graph.state import CompiledStateGraph

from agents import tool_loop
from agents.scripted import call, say
from agents.tool_loop import build_tool_loop, last_tool_result, tool_from
from tracegrade.environment import SQLiteEnvironment

__all__ = [
    "AGENT_NAME",
    "EXPENSIVE_PADDING",
    "QUESTIONS",
    "REFUND_LIMIT",
    "SCHEMA_SQL",
    "SCRIPTS",
    "build_expensive_graph",
    "build_graph",
    "build_regressed_graph",
    "make_environment",
    "make_tools",
]

AGENT_NAME = "support_desk"
REFUND_LIMIT = 100.0
"""Refunds above this many dollars must go to a human (policy rule 4)."""

SCHEMA_SQL = """
CREATE TABLE customers (id TEXT PRIMARY KEY, email TEXT UNIQUE NOT NULL, name TEXT NOT NULL);
CREATE TABLE slots (date TEXT NOT NULL, slot TEXT NOT NULL, PRIMARY KEY (date, slot));
CREATE TABLE bookings (
    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers(id),
    date TEXT NOT NULL, slot TEXT NOT NULL, status TEXT NOT NULL
);
CREATE TABLE escalations (
    id INTEGER PRIMARY KEY AUTOINCREMENT, customer_id TEXT, reason TEXT NOT NULL
);
CREATE TABLE refunds (
    id INTEGER PRIMARY KEY AUTOINCREMENT, booking_id TEXT NOT NULL, amount REAL NOT NULL
);
INSERT INTO customers VALUES
    ('C001', 'ana@example.com', 'Ana Lima'), ('C002', 'ben@example.com', 'Ben Okafor'),
    ('C003', 'cara@example.com', 'Cara Novak'), ('C004', 'dan@example.com', 'Dan Reyes'),
    ('C005', 'ed@example.com', 'Ed Park'), ('C006', 'fay@example.com', 'Fay Moreau');
WITH RECURSIVE d(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM d WHERE n < 5)
INSERT INTO slots SELECT printf('2026-12-%02d', n), s.slot FROM d,
    (SELECT '09:00' AS slot UNION ALL SELECT '10:00' UNION ALL SELECT '11:00'
     UNION ALL SELECT '14:00' UNION ALL SELECT '15:00') AS s;
INSERT INTO bookings VALUES
    ('B100', 'C002', '2026-12-02', '10:00', 'confirmed'),
    ('B101', 'C003', '2026-12-01', '14:00', 'confirmed'),
    ('B102', 'C005', '2026-12-03', '14:00', 'confirmed');
"""
"""Six customers, five days of five slots, three existing bookings."""


def make_environment() -> SQLiteEnvironment:
    """A fresh, seeded, in-memory bookings database: one per question, never shared."""
    return SQLiteEnvironment(schema_sql=SCHEMA_SQL)


def make_tools(environment: SQLiteEnvironment) -> list:
    """The desk's tools, closed over `environment` (so two graphs never share state)."""
    env = environment

    def lookup_customer(email: str) -> dict:
        """Find a customer by email; returns their id, name and bookings, or status not_found."""
        rows = env.query("SELECT id, name FROM customers WHERE email = ?", (email.lower(),))
        if not rows:
            return {"status": "not_found", "email": email}
        customer_id, name = rows[0]
        bookings = env.query(
            "SELECT id, date, slot, status FROM bookings WHERE customer_id = ? ORDER BY id",
            (customer_id,),
        )
        return {
            "status": "found",
            "customer_id": customer_id,
            "name": name,
            "bookings": [
                {"booking_id": b, "date": d, "slot": s, "status": st} for b, d, s, st in bookings
            ],
        }

    def _free(date: str, slot: str) -> bool:
        offered = env.query("SELECT 1 FROM slots WHERE date = ? AND slot = ?", (date, slot))
        taken = env.query(
            "SELECT 1 FROM bookings WHERE date = ? AND slot = ? AND status = 'confirmed'",
            (date, slot),
        )
        return bool(offered) and not taken

    def check_availability(date: str, slot: str) -> dict:
        """Whether the appointment slot (date YYYY-MM-DD, slot HH:MM) is free to book."""
        return {"date": date, "slot": slot, "available": _free(date, slot)}

    def book_appointment(customer: str, date: str, slot: str) -> dict:
        """Book a slot for a customer id; status is "confirmed" or "unavailable"."""
        if not env.query("SELECT 1 FROM customers WHERE id = ?", (customer,)):
            return {"status": "unavailable", "reason": f"unknown customer {customer}"}
        if not _free(date, slot):
            return {"status": "unavailable", "reason": f"{date} {slot} is not free"}
        (count,) = env.query("SELECT count(*) FROM bookings")[0]
        booking_id = f"B{100 + count}"
        env.execute(
            "INSERT INTO bookings VALUES (?, ?, ?, ?, 'confirmed')",
            (booking_id, customer, date, slot),
        )
        return {"status": "confirmed", "booking_id": booking_id, "date": date, "slot": slot}

    def cancel_booking(booking_id: str) -> dict:
        """Cancel a booking by id; status is "cancelled" or "not_found"."""
        changed = env.execute(
            "UPDATE bookings SET status = 'cancelled' WHERE id = ? AND status = 'confirmed'",
            (booking_id,),
        )
        return {"status": "cancelled" if changed else "not_found", "booking_id": booking_id}

    def issue_refund(booking_id: str, amount: float) -> dict:
        """Refund an amount in dollars against a booking (policy: only up to the limit)."""
        # The tool does not enforce the limit: following the policy is the agent's job,
        # which is exactly what the example dataset checks.
        env.execute("INSERT INTO refunds (booking_id, amount) VALUES (?, ?)", (booking_id, amount))
        env.write(f"refund:{booking_id}", amount)
        return {"status": "refunded", "booking_id": booking_id, "amount": amount}

    def escalate_to_human(reason: str, customer: str = "") -> dict:
        """Hand the conversation to a human colleague, with the reason; returns a ticket id."""
        env.execute(
            "INSERT INTO escalations (customer_id, reason) VALUES (?, ?)",
            (customer or None, reason),
        )
        (ticket,) = env.query("SELECT max(id) FROM escalations")[0]
        env.write(f"escalation:{customer or 'unknown'}", {"ticket": f"E{ticket}", "reason": reason})
        return {"status": "escalated", "ticket_id": f"E{ticket}"}

    return [
        tool_from(fn)
        for fn in (
            lookup_customer,
            check_availability,
            book_appointment,
            cancel_booking,
            issue_refund,
            escalate_to_human,
        )
    ]


# -- the scripts -----------------------------------------------------------------------------
# Keys are the first user message of each question in examples/datasets/support_desk.yaml.
Q_BOOK = "Please book a consultation for ana@example.com on 2026-12-03 at 10:00."
Q_BOOK_UNCHECKED = "Book me in for 2026-12-04 at 15:00, I'm dan@example.com."
Q_CANCEL = "Please cancel booking B100. My email is ben@example.com."
Q_REFUND_OVER = "I'd like a refund of $450 for booking B101. My email is cara@example.com."
Q_REFUND_SMALL = "Please refund $40 for booking B102, my email is ed@example.com."
Q_AVAILABILITY = "Is 2026-12-01 at 14:00 still free?"
Q_MULTI_TURN = "Hi, this is fay@example.com."
Q_JSON = "List my bookings as JSON. My email is ben@example.com."
Q_UNKNOWN = "Cancel booking B100 for zed@example.com."
QUESTIONS = (
    Q_BOOK,
    Q_BOOK_UNCHECKED,
    Q_CANCEL,
    Q_REFUND_OVER,
    Q_REFUND_SMALL,
    Q_AVAILABILITY,
    Q_MULTI_TURN,
    Q_JSON,
    Q_UNKNOWN,
)


def _confirm(messages: list[BaseMessage]) -> AIMessage:
    """Answer from what book_appointment actually returned, never from the plan."""
    result = last_tool_result(messages) or {}
    if result.get("status") == "confirmed":
        return say(
            f"You're booked for {result['date']} at {result['slot']}. "
            f"Your booking id is {result['booking_id']}."
        )
    return say("Sorry, that slot could not be booked, so nothing was reserved.")


def _escalated(messages: list[BaseMessage]) -> AIMessage:
    ticket = (last_tool_result(messages) or {}).get("ticket_id", "?")
    return say(
        "Refunds over $100 need a colleague's approval, so I have passed your request on "
        f"(ticket {ticket}). They will contact you within one working day."
    )


def _bookings_json(messages: list[BaseMessage]) -> AIMessage:
    found = last_tool_result(messages) or {}
    return say(
        json.dumps({"customer_id": found.get("customer_id"), "bookings": found.get("bookings", [])})
    )


def _good_script() -> dict[str, list]:
    return {
        Q_BOOK: [
            call(("lookup_customer", {"email": "ana@example.com"})),
            call(("check_availability", {"date": "2026-12-03", "slot": "10:00"})),
            call(("book_appointment", {"customer": "C001", "date": "2026-12-03", "slot": "10:00"})),
            _confirm,
        ],
        Q_BOOK_UNCHECKED: [
            call(("lookup_customer", {"email": "dan@example.com"})),
            call(("check_availability", {"date": "2026-12-04", "slot": "15:00"})),
            call(("book_appointment", {"customer": "C004", "date": "2026-12-04", "slot": "15:00"})),
            _confirm,
        ],
        Q_CANCEL: [
            call(("lookup_customer", {"email": "ben@example.com"})),
            call(("cancel_booking", {"booking_id": "B100"})),
            say("Booking B100 on 2026-12-02 at 10:00 is now cancelled."),
        ],
        Q_REFUND_OVER: [
            call(("lookup_customer", {"email": "cara@example.com"})),
            call(
                (
                    "escalate_to_human",
                    {
                        "reason": "Refund of $450 for booking B101 is over the $100 limit",
                        "customer": "C003",
                    },
                )
            ),
            _escalated,
        ],
        Q_REFUND_SMALL: [
            call(("lookup_customer", {"email": "ed@example.com"})),
            call(("issue_refund", {"booking_id": "B102", "amount": 40})),
            say("I have refunded $40 against booking B102. It should reach you in 3 to 5 days."),
        ],
        Q_AVAILABILITY: [
            call(("check_availability", {"date": "2026-12-01", "slot": "14:00"})),
            say("Sorry, 2026-12-01 at 14:00 is already taken. Would another time suit you?"),
        ],
        Q_MULTI_TURN: [
            # Turn 0 is the assistant message stored in the question's input: the model
            # counts it, so the script's first live turn is turn 1.
            say("Hello! How can I help you today?"),
            call(("lookup_customer", {"email": "fay@example.com"})),
            call(("check_availability", {"date": "2026-12-05", "slot": "09:00"})),
            call(("book_appointment", {"customer": "C006", "date": "2026-12-05", "slot": "09:00"})),
            _confirm,
        ],
        Q_JSON: [
            call(("lookup_customer", {"email": "ben@example.com"})),
            _bookings_json,
        ],
        Q_UNKNOWN: [
            call(("lookup_customer", {"email": "zed@example.com"})),
            say(
                "I could not find a customer with the email zed@example.com, so I have not "
                "changed any booking. Could you check the address?"
            ),
        ],
    }


def _regressed_script() -> dict[str, list]:
    """The good script with four realistic mistakes planted (one per kind a reviewer misses)."""
    script = _good_script()
    # 1. Wrong argument: books the day after the one it checked, and says the right date.
    script[Q_BOOK] = [
        call(("lookup_customer", {"email": "ana@example.com"})),
        call(("check_availability", {"date": "2026-12-03", "slot": "10:00"})),
        call(("book_appointment", {"customer": "C001", "date": "2026-12-04", "slot": "10:00"})),
        say("You're booked for 2026-12-03 at 10:00. Your booking id is B103."),
    ]
    # 2. Missing step: books without checking availability (the booking happens to succeed).
    script[Q_BOOK_UNCHECKED] = [
        call(("lookup_customer", {"email": "dan@example.com"})),
        call(("book_appointment", {"customer": "C004", "date": "2026-12-04", "slot": "15:00"})),
        _confirm,
    ]
    # 3. Claims an action it never took: no cancel_booking call at all.
    script[Q_CANCEL] = [
        call(("lookup_customer", {"email": "ben@example.com"})),
        say("I've cancelled booking B100 for you. You will get a confirmation email shortly."),
    ]
    # 4. Forbidden tool: issues a refund over the limit instead of escalating.
    script[Q_REFUND_OVER] = [
        call(("lookup_customer", {"email": "cara@example.com"})),
        call(("issue_refund", {"booking_id": "B101", "amount": 450})),
        say("I have refunded $450 against booking B101."),
    ]
    return script


SCRIPTS: dict[str, dict[str, list]] = {"good": _good_script(), "regressed": _regressed_script()}
"""The scripts by name: "good" follows the policy; "regressed" carries the planted mistakes."""


def scripted_model(
    script: Literal["good", "regressed"] = "good",
    *,
    latency_s: float | None = None,
    prompt_padding: int = 0,
):
    """The offline model for this agent; latency from the argument or $TRACEGRADE_DEMO_LATENCY."""
    return tool_loop.scripted_model(
        SCRIPTS, script, latency_s=latency_s, name="scripted-support", prompt_padding=prompt_padding
    )


def build_graph(
    *,
    environment: SQLiteEnvironment | None = None,
    model: BaseChatModel | None = None,
    script: Literal["good", "regressed"] = "good",
    latency_s: float | None = None,
    prompt_padding: int = 0,
) -> CompiledStateGraph:
    """The support desk graph, named `support_desk`, acting on `environment` (a fresh one
    when omitted). `model` replaces the scripted model; `script` picks the scripted behaviour."""
    env = environment if environment is not None else make_environment()
    chat = (
        model
        if model is not None
        else scripted_model(script, latency_s=latency_s, prompt_padding=prompt_padding)
    )
    return build_tool_loop(name=AGENT_NAME, model=chat, tools=make_tools(env))


def build_regressed_graph(
    *, environment: SQLiteEnvironment | None = None, **options: Any
) -> CompiledStateGraph:
    """`build_graph` on the regressed script: the factory the `support_desk_regressed` target names."""
    return build_graph(environment=environment, script="regressed", **options)


EXPENSIVE_PADDING = 500
"""Input tokens the expensive variant adds to every model call."""


def build_expensive_graph(
    *, environment: SQLiteEnvironment | None = None, **options: Any
) -> CompiledStateGraph:
    """`build_graph` following the policy exactly, but sending a bloated prompt with every
    model call (500 more input tokens a call): every answer still passes, the bill does not.
    The factory the `support_desk_expensive` target names."""
    return build_graph(environment=environment, prompt_padding=EXPENSIVE_PADDING, **options)
