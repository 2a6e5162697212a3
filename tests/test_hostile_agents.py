"""Hostile agents and factories never end the run green: a `BaseException` from user code is
that question's error (or exit 4 at load time), and an agent that returns no AI message is
errored, not scored as an empty answer."""

from __future__ import annotations

import textwrap

import pytest

from tests.runs_support import write_project
from tracegrade import load_config, start_run
from tracegrade.cli import main

RETURNS = """
import sys

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableLambda


class Boom(BaseException):
    pass


def _answer(state):
    text = state["messages"][-1]["content"]
    if text == "exit":
        raise SystemExit(0)
    if text == "base":
        raise Boom("a BaseException subclass")
    if text == "empty list":
        return {"messages": []}
    if text == "none":
        return None
    if text == "string":
        return "just a string"
    if text == "list":
        return [1, 2]
    if text == "human only":
        return {"messages": [HumanMessage("hi")]}
    if text == "empty ai":
        return {"messages": [HumanMessage("hi"), AIMessage("")]}
    return {"messages": [HumanMessage(text), AIMessage("sunny")]}


async def _aanswer(state):
    return _answer(state)


def build_graph():
    return RunnableLambda(_answer, afunc=_aanswer, name="odd")
"""


def _project(tmp_path, inputs, *, gate=None, agent=RETURNS):
    (tmp_path / "odd.py").parent.mkdir(parents=True, exist_ok=True)
    rows = [
        {"id": i.replace(" ", "_"), "input": i, "expected": {"keyword": "sunny"}} for i in inputs
    ]
    path = write_project(
        tmp_path,
        questions=[],
        extra_questions=rows,
        target={
            "agent": "odd.py:build_graph",
            "graders": [{"id": "contains", "match_on": ["expected", "keyword"]}],
            "gate": gate or {},
        },
    )
    (tmp_path / "odd.py").write_text(textwrap.dedent(agent), encoding="utf-8")
    return path


@pytest.mark.parametrize("kind", ["exit", "base"])
def test_an_agent_raising_a_base_exception_errors_only_its_question(tmp_path, capsys, kind):
    path = _project(tmp_path, [kind, "ok"], gate={"max_errored": 1})
    code = main(["run", "--config", str(path), "--quiet"])
    out = capsys.readouterr().out
    assert code == 2  # within the budget, an errored question still fails the gate
    assert f"{kind}: composite 0" in out
    outcome_qs = {q.id: q for q in start_run(load_config(path)).targets[0].questions}
    assert outcome_qs[kind].errored and outcome_qs["ok"].composite == 5.0


@pytest.mark.parametrize("kind", ["empty list", "none", "string", "list", "human only"])
def test_an_agent_returning_no_ai_message_is_errored(tmp_path, kind):
    path = _project(tmp_path, [kind, "ok"], gate={"max_errored": 5})
    outcome = start_run(load_config(path))
    qs = {q.id: q for q in outcome.targets[0].questions}
    bad = qs[kind.replace(" ", "_")]
    assert bad.errored and bad.error.startswith("agent returned no AI message")
    assert outcome.exit_code == 2


def test_a_real_ai_message_with_empty_content_is_an_empty_answer(tmp_path):
    path = _project(tmp_path, ["empty ai"], gate={"max_errored": 5})
    question = start_run(load_config(path)).targets[0].questions[0]
    assert not question.errored
    assert question.graders[0].score == 0.0  # graded: "" does not contain "sunny"


@pytest.mark.parametrize("body", ["import sys\nsys.exit(0)\n", "raise SystemExit(3)\n"])
def test_a_factory_file_exiting_at_import_is_exit_4_naming_the_file(tmp_path, capsys, body):
    path = _project(tmp_path, ["ok"], agent=body)
    assert main(["run", "--config", str(path), "--quiet"]) == 4
    err = capsys.readouterr().err
    assert "odd.py" in err and "SystemExit" in err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


FLAKY = """
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda

from tracegrade.environment import SQLiteEnvironment

CALLS = {"environment": 0, "agent": 0}


def _answer(state):
    return {"messages": [AIMessage("sunny")]}


def make_environment():
    CALLS["environment"] += 1
    if WHICH == "environment" and CALLS["environment"] % 5 == 0:
        raise OSError("environment pool exhausted")
    return SQLiteEnvironment()


def build_graph(environment=None):
    CALLS["agent"] += 1
    if WHICH == "agent" and CALLS["agent"] % 5 == 0:
        raise RuntimeError("model client failed to start")
    if WHICH == "always":
        raise RuntimeError("never builds")
    return RunnableLambda(_answer, name="flaky")
"""


@pytest.mark.parametrize("which", ["environment", "agent"])
def test_a_factory_failing_for_one_question_errors_only_that_question(tmp_path, capsys, which):
    path = _project(
        tmp_path,
        [f"q{i}" for i in range(10)],
        agent=FLAKY.replace("WHICH", repr(which)),
    )
    text = path.read_text().replace(
        "agent: odd.py:build_graph",
        "agent: odd.py:build_graph\n    environment: odd.py:make_environment",
    )
    path.write_text(text)
    config = load_config(path)
    outcome = start_run(config)
    qs = outcome.targets[0].questions
    assert len(qs) == 10
    failed = [q for q in qs if q.errored]
    assert len(failed) == 2
    assert all(f"{which} factory raised" in q.error for q in failed)
    assert outcome.exit_code == 3


def test_an_agent_factory_that_always_raises_is_exit_4_and_leaves_no_run_dir(tmp_path, capsys):
    path = _project(tmp_path, ["q1", "q2"], agent=FLAKY.replace("WHICH", repr("always")))
    assert main(["run", "--config", str(path), "--quiet"]) == 4
    assert "never builds" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
