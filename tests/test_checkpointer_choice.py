"""A graph compiled without a checkpointer runs under tracegrade as it runs outside it: it gets
tracegrade's in-memory checkpointer only where a question needs one (an interrupt to resume, a
later turn on the same thread, a graph compiled with `interrupt_before`/`interrupt_after`), and
that checkpointer holds state LangGraph's msgpack cannot (an int past 64 bits, values nested
deeper than msgpack's limit), so such state never fails only under tracegrade."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import yaml

from tracegrade import load_config, start_run
from tracegrade.execution.question.conversation import with_checkpointer

AGENT = """
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt


class State(MessagesState):
    ledger: Any


def nested(depth):
    value = ["leaf"]
    for _ in range(depth):
        value = [value]
    return value


def count(state):
    # Plain Python values LangGraph's own state holds without a checkpointer.
    return {"ledger": {"balance": 2**70, "path": nested(260)}}


def ask(state):
    answer = interrupt({"action": "confirm", "balance": str(state["ledger"]["balance"])})
    return {"ledger": {**state["ledger"], "confirmed": answer}}


def answer(state):
    ledger = state["ledger"]
    text = f"balance {ledger['balance']} confirmed={ledger.get('confirmed')}"
    return {"messages": [AIMessage(content=text)]}


def _graph(asks, **compile_kwargs):
    builder = StateGraph(State)
    builder.add_node("count", count)
    builder.add_node("answer", answer)
    builder.add_edge(START, "count")
    if asks:
        builder.add_node("ask", ask)
        builder.add_edge("count", "ask")
        builder.add_edge("ask", "answer")
    else:
        builder.add_edge("count", "answer")
    builder.add_edge("answer", END)
    return builder.compile(name="ledger", **compile_kwargs)


def build_plain():
    return _graph(False)


def build_asking():
    return _graph(True)


def build_paused():
    return _graph(False, interrupt_before=["answer"])
"""

BALANCE = str(2**70)


def project(tmp_path: Path, factory: str, questions: list[dict]) -> Path:
    (tmp_path / "ledger_agent.py").write_text(textwrap.dedent(AGENT))
    (tmp_path / "data.yaml").write_text(yaml.safe_dump({"questions": questions}))
    config = {
        "version": 1,
        "runs_dir": "runs",
        "targets": {
            "ledger": {
                "agent": f"{tmp_path / 'ledger_agent.py'}:{factory}",
                "dataset": "data.yaml",
                "graders": [{"id": "format_grader"}],
            }
        },
    }
    path = tmp_path / "tracegrade.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def only_question(outcome):
    ((q,),) = [t.questions for t in outcome.targets]
    return q


def response(outcome) -> str:
    from tracegrade.rundir.store import ResultStore

    with ResultStore.in_run_dir(outcome.run_dir) as store:
        (run,) = store.load_runs()
    return run.answer.response


def test_state_msgpack_cannot_hold_runs_as_it_does_without_tracegrade(tmp_path):
    outcome = start_run(load_config(project(tmp_path, "build_plain", [{"id": "q", "input": "x"}])))
    q = only_question(outcome)
    assert q.error is None, q.error
    assert outcome.exit_code == 0
    assert response(outcome) == f"balance {BALANCE} confirmed=None"


def test_an_interrupt_is_resumed_over_state_msgpack_cannot_hold(tmp_path):
    question = {"id": "q", "input": "x", "resume": ["yes"]}
    outcome = start_run(load_config(project(tmp_path, "build_asking", [question])))
    q = only_question(outcome)
    assert q.error is None, q.error
    assert q.outcome is None
    assert response(outcome) == f"balance {BALANCE} confirmed=yes"


def test_an_unanswered_interrupt_without_a_checkpointer_still_ends_interrupted(tmp_path):
    outcome = start_run(load_config(project(tmp_path, "build_asking", [{"id": "q", "input": "x"}])))
    q = only_question(outcome)
    assert q.error is None, q.error
    assert q.outcome == "interrupted"
    assert BALANCE in q.outcome_reason  # the pause's payload, named in the reason


def _load(tmp_path: Path, name: str):
    import importlib.util

    (tmp_path / "ledger_agent.py").write_text(textwrap.dedent(AGENT))
    spec = importlib.util.spec_from_file_location("ledger_agent", tmp_path / "ledger_agent.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)()


class _Question:
    def __init__(self, **fields):
        self.resume = fields.get("resume")
        self.user = fields.get("user")
        self._turns = fields.get("turns", [])

    def user_turns(self):
        return self._turns


def test_a_checkpointer_is_added_only_where_the_question_can_need_one(tmp_path):
    plain = _load(tmp_path, "build_plain")
    assert with_checkpointer(plain, _Question()) is plain  # nothing to resume or continue
    for needs in (_Question(resume=["yes"]), _Question(turns=["a", "b"]), _Question(user=object())):
        copy = with_checkpointer(plain, needs)
        assert copy is not plain and copy.checkpointer is not None
    paused = _load(tmp_path, "build_paused")  # interrupt_before needs one to pause at all
    assert with_checkpointer(paused, _Question()).checkpointer is not None


def test_interrupt_before_pauses_as_it_would_with_a_checkpointer(tmp_path):
    paused = with_checkpointer(_load(tmp_path, "build_paused"), _Question())
    config = {"configurable": {"thread_id": "t"}}
    state = asyncio.run(paused.ainvoke({"messages": [("user", "x")]}, config))
    assert "messages" in state and len(state["messages"]) == 1  # stopped before `answer`
    assert paused.get_state(config).next == ("answer",)
