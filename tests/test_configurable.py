"""`configurable:` per target and per question: LangGraph's config["configurable"] reaches the
graph (the question's keys over the target's), each question run gets its own thread id unless
one is given, so a checkpointer never carries one question's state into the next, and a
non-mapping is invalid input with its line."""

from __future__ import annotations

import textwrap

import yaml

from tracegrade.cli import main

AGENT = """
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import START, MessagesState, StateGraph


def build_graph():
    def answer(state, config):
        c = config["configurable"]
        humans = sum(1 for m in state["messages"] if m.type == "human")
        text = f"user={c.get('user_id')} tier={c.get('tier')} seen={humans}"
        return {"messages": [AIMessage(text)]}

    graph = StateGraph(MessagesState)
    graph.add_node("answer", answer)
    graph.add_edge(START, "answer")
    return graph.compile(checkpointer=MemorySaver(), name="cfg")  # one graph, shared
"""


def _project(tmp_path, *, target_cfg, questions):
    (tmp_path / "agent.py").write_text(textwrap.dedent(AGENT))
    (tmp_path / "questions.yaml").write_text(yaml.safe_dump({"questions": questions}))
    config = {
        "version": 1,
        "runs_dir": "runs",
        "targets": {
            "t": {
                "agent": "agent.py:build_graph",
                "dataset": "questions.yaml",
                "concurrency": 1,
                "configurable": target_cfg,
                "graders": [
                    {
                        "id": "contains",
                        "match_on": ["expected", "keyword"],
                        "must_pass": True,
                    }
                ],
            }
        },
    }
    path = tmp_path / "tracegrade.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def test_question_keys_override_the_targets_and_threads_stay_apart(tmp_path, capsys):
    questions = [
        {"id": "q1", "input": "hi", "expected": {"keyword": "user=ana tier=None seen=1"}},
        {
            "id": "q2",
            "input": "hello",
            "configurable": {"user_id": "bob", "tier": "gold"},
            "expected": {"keyword": "user=bob tier=gold seen=1"},
        },
        # the same graph, a third question: still only its own message on its thread
        {"id": "q3", "input": "again", "expected": {"keyword": "user=ana tier=None seen=1"}},
    ]
    path = _project(tmp_path, target_cfg={"user_id": "ana"}, questions=questions)
    assert main(["run", "--config", str(path), "--quiet"]) == 0, capsys.readouterr().out


def test_an_explicit_thread_id_is_shared_as_asked(tmp_path, capsys):
    questions = [
        {"id": "q1", "input": "hi", "expected": {"keyword": "seen=1"}},
        {"id": "q2", "input": "hello", "expected": {"keyword": "seen=2"}},  # same thread
    ]
    path = _project(tmp_path, target_cfg={"thread_id": "shared"}, questions=questions)
    assert main(["run", "--config", str(path), "--quiet"]) == 0, capsys.readouterr().out


def test_a_configurable_that_is_not_a_mapping_is_invalid_input(tmp_path, capsys):
    questions = [{"id": "q1", "input": "hi", "configurable": "ana"}]
    _project(tmp_path, target_cfg={"user_id": "ana"}, questions=questions)
    assert main(["validate", str(tmp_path / "questions.yaml")]) == 4
    err = capsys.readouterr().err
    assert "questions.yaml:" in err and "configurable must be a mapping" in err
    bad_target = _project(
        tmp_path, target_cfg=["user_id"], questions=[questions[0] | {"configurable": {}}]
    )
    assert main(["run", "--config", str(bad_target), "--quiet"]) == 4
    assert "configurable must be a mapping" in capsys.readouterr().err
