"""A small project on disk for runner, CLI and re-grade tests: an agent file (a LangGraph graph
on the scripted model), a dataset and a config, written into a temporary directory.

The agent answers by the question's text:
- "weather in Paris?"  looks the city up, then answers (tool_usage passes)
- "weather in Rome?"   answers without looking anything up (tool_usage fails)
- "crash please"       the model raises (agent error)
- "upstream timeout"   the model raises its own TimeoutError (an agent error, not the deadline)
- "be slow"            calls a tool that sleeps 600 s, far beyond the timeout a test of it sets
- "echo system"        answers with the system message it was given
- "remember it"        writes to the question's environment (state_grader passes)
- "cancel B100"        calls a tool that raises, then claims it cancelled
- "which process?"     answers with the id of the process that ran it
- "die now"            kills the process that runs it (SIGKILL), as a crash in native code does
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import yaml

AGENT = '''
import asyncio
import os
import signal

from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from agents.scripted import ScriptedChatModel, call, say
from tracegrade.environment import SQLiteEnvironment

CLOSED = []
BUILT = []


def _crash(messages):
    raise RuntimeError("model exploded")


def _upstream_timeout(messages):
    raise TimeoutError("upstream model took too long")


def _pid(messages):
    return say(f"sunny pid={os.getpid()}")


def _die(messages):
    os.kill(os.getpid(), signal.SIGKILL)


def _echo_system(messages):
    return say("system=" + str(messages[0].content))


SCRIPT = {
    "weather in Paris?": [call(("lookup", {"city": "Paris", "api_token": "s3cr3t-arg-value"})),
                          say("It is sunny in Paris.")],
    "weather in Rome?": [say("It is sunny in Rome.")],
    "crash please": [_crash],
    "upstream timeout": [_upstream_timeout],
    "be slow": [call(("stall", {})), say("done")],
    "echo system": [_echo_system],
    "remember it": [call(("remember", {"key": "color", "value": "blue"})), say("Remembered.")],
    "cancel B100": [call(("cancel", {"booking_id": "B100"})), say("Booking B100 is cancelled.")],
    "which process?": [_pid],
    "die now": [_die],
}


@tool
def lookup(city: str, api_token: str = "") -> str:
    """Look up the weather of a city."""
    return f"sunny in {city}"


@tool
def cancel(booking_id: str) -> str:
    """Cancel a booking."""
    raise ValueError(f"booking {booking_id} not found")


@tool
async def stall() -> str:
    """Wait a long time."""
    await asyncio.sleep(600)
    return "late"


class TrackedEnvironment(SQLiteEnvironment):
    def close(self):
        CLOSED.append(id(self))
        super().close()


def make_environment():
    return TrackedEnvironment()


def build_graph(environment=None):
    BUILT.append(environment)
    tools = [lookup, stall, cancel]
    if environment is not None:
        @tool
        def remember(key: str, value: str) -> str:
            """Remember a value."""
            environment.write(key, value)
            return "ok"
        tools.append(remember)
    model = ScriptedChatModel(script=SCRIPT, latency_s=LATENCY).bind_tools(tools)

    async def agent(state):
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools, handle_tool_errors=True))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(name="helper")


def build_chat_model():
    return ScriptedChatModel(script={"weather in Paris?": [say("It is sunny in Paris.")]})
'''

GRADING_MODULE = """
from tracegrade.graders.code import grader


@grader(name="says_sunny")
def says_sunny(output):
    return "sunny" in output
"""

QUESTIONS: dict[str, dict[str, Any]] = {
    "paris": {
        "id": "paris",
        "input": "weather in Paris?",
        "expected": {"keyword": "sunny"},
        "expected_tools": [{"tool": "lookup", "should_run": True, "args": {"city": "Paris"}}],
    },
    "rome": {
        "id": "rome",
        "input": "weather in Rome?",
        "expected": {"keyword": "sunny"},
        "expected_tools": [{"tool": "lookup", "should_run": True}],
    },
    "crash": {"id": "crash", "input": "crash please"},
    "slow": {"id": "slow", "input": "be slow"},
    "upstream": {"id": "upstream", "input": "upstream timeout"},
    "echo": {
        "id": "echo",
        "input": [
            {"role": "system", "content": "stored system prompt"},
            {"role": "user", "content": "echo system"},
        ],
    },
    "cancel": {"id": "cancel", "input": "cancel B100"},
    "pid": {"id": "pid", "input": "which process?", "expected": {"keyword": "sunny"}},
    "die": {"id": "die", "input": "die now"},
    "remember": {
        "id": "remember",
        "input": "remember it",
        "metadata": {"state": {"assertions": [{"kind": "key", "key": "color", "equals": "blue"}]}},
    },
}


def copy_examples(dest: Path) -> None:
    """A copy of the checkout's examples and reference agents under `dest`, without their
    __pycache__: another test process may be writing a .pyc there while it is copied."""
    import shutil

    root = Path(__file__).resolve().parents[1]
    for folder in ("examples", "agents"):
        shutil.copytree(root / folder, dest / folder, ignore=shutil.ignore_patterns("__pycache__"))


def write_project(
    root: Path,
    *,
    questions: list[str] = ("paris", "rome"),
    target: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
    latency_s: float = 0.0,
    grading_module: bool = False,
    extra_questions: list[dict[str, Any]] = (),
) -> Path:
    """Write agent.py, data/questions.yaml and tracegrade.yaml under `root`; return the
    config path. `target` entries override the default target `t`; `config` top-level keys."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "agent.py").write_text(
        textwrap.dedent(AGENT).replace("LATENCY", repr(latency_s)), encoding="utf-8"
    )
    data = root / "data"
    data.mkdir(exist_ok=True)
    rows = [QUESTIONS[q] for q in questions] + list(extra_questions)
    (data / "questions.yaml").write_text(yaml.safe_dump({"questions": rows}), encoding="utf-8")
    if grading_module:
        (data / "graders.py").write_text(textwrap.dedent(GRADING_MODULE), encoding="utf-8")
    t: dict[str, Any] = {
        "agent": "agent.py:build_graph",
        "dataset": "data/questions.yaml",
        # generous: a question's own time stretches with the machine's load (at load 13 on 2
        # cores 'rome' held the loop 3.6 s, past a 2 s timeout); a test of timeouts sets its own
        "timeout_s": 60,
        "concurrency": 4,
        "graders": ["tool_usage_grader", {"id": "contains", "match_on": ["expected", "keyword"]}],
    }
    t.update(target or {})
    t = {k: v for k, v in t.items() if v is not None}
    cfg: dict[str, Any] = {"version": 1, "runs_dir": "runs", "targets": {"t": t}}
    cfg.update(config or {})
    path = root / "tracegrade.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return path


# A grader that leaves one required rubric check in Review on every question (as a rubric
# judge does without the evidence it needs): the gate fails until a person decides it.
REVIEW_MODULE = """
from tracegrade.graders.base import Grader


class NeedsPerson(Grader):
    id = "needs_person"
    label = "Needs a person"
    min_score = 0.0
    max_score = 1.0

    def grade(self, input, response, context):
        check = {"id": "escalation", "version": "1.0.0", "kind": "escalation",
                 "status": "review", "severity": "major", "required": True,
                 "reason": "missing evidence: policy"}
        return self.result(1.0, "one check in Review", details={"checks": [check]})


GRADERS = [NeedsPerson()]
"""
