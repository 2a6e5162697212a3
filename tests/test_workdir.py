"""`workdir` (seed 003): a directory of the question run's own, which the agent's tools can write
to (its path is `config["configurable"]["workdir"]`) and a grader function reads, kept with the
run; not the run directory shared by every question."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import yaml

from tracegrade.cli import main

ROOT = Path(__file__).resolve().parent.parent

AGENT = '''
from pathlib import Path

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from agents.scripted import ScriptedChatModel, call, say


@tool
def write_report(name: str, config: RunnableConfig) -> str:
    """Write a report file."""
    folder = Path(config["configurable"]["workdir"])
    (folder / name).write_text("done")
    return "written"


SCRIPT = {
    "write a": [call(("write_report", {"name": "a.txt"})), say("I wrote a.txt")],
    "write b": [call(("write_report", {"name": "b.txt"})), say("I wrote b.txt")],
    "claim c": [say("I wrote c.txt")],
}


def build_graph():
    tools = [write_report]
    model = ScriptedChatModel(script=SCRIPT).bind_tools(tools)

    async def agent(state):
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(name="writer")
'''

GRADERS = """
from pathlib import Path

from tracegrade.graders import grader


@grader(name="file_written")
def file_written(output, question, workdir):
    expected = question["metadata"]["file"]
    return (Path(workdir) / expected).is_file()
"""


def run_questions(tmp_path, monkeypatch, questions, **target) -> Path:
    """`tracegrade run` of the writer agent on `questions`; the run directory."""
    monkeypatch.syspath_prepend(str(ROOT))
    (tmp_path / "agent.py").write_text(textwrap.dedent(AGENT))
    data = tmp_path / "data"
    data.mkdir()
    (data / "questions.yaml").write_text(yaml.safe_dump({"questions": questions}))
    (data / "graders.py").write_text(textwrap.dedent(GRADERS))
    config = tmp_path / "tracegrade.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "runs_dir": "runs",
                "targets": {
                    "t": {
                        "agent": "agent.py:build_graph",
                        "dataset": "data/questions.yaml",
                        "concurrency": 1,
                        **target,
                    }
                },
            }
        )
    )
    out = tmp_path / "r.json"
    main(["run", "--config", str(config), "--quiet", "--json", str(out)])
    report = json.loads(out.read_text())
    scores = {str(q["id"]): [g["score"] for g in q["graders"]] for q in report["questions"]}
    run_dir = next((tmp_path / "runs").iterdir())
    return run_dir, scores


def test_each_question_run_has_its_own_workdir_for_the_agent_and_the_grader(tmp_path, monkeypatch):
    questions = [
        {"id": "a", "input": "write a", "metadata": {"file": "a.txt"}},
        {"id": "b/odd id", "input": "write b", "metadata": {"file": "b.txt"}},
        # Claims a file it never wrote: the grader looks in its own folder, not a neighbour's.
        {"id": "c", "input": "claim c", "metadata": {"file": "a.txt"}},
    ]
    run_dir, scores = run_questions(tmp_path, monkeypatch, questions)
    assert scores == {"a": [1.0], "b/odd id": [1.0], "c": [0.0]}
    written = sorted(p.relative_to(run_dir).as_posix() for p in run_dir.glob("work/**/*.txt"))
    assert len(written) == 2 and written[0].startswith("work/t/a/trial-0/")
    assert not (run_dir / "a.txt").exists()  # never the run directory itself
    assert not list(run_dir.glob("work/t/c*"))  # an empty folder is not kept


def test_a_run_whose_agent_wrote_nothing_leaves_no_work_folder(tmp_path, monkeypatch):
    questions = [
        {"id": "c", "input": "claim c", "metadata": {"file": "a.txt"}},
        {"id": "d", "input": "claim c", "metadata": {"file": "a.txt"}},
    ]
    run_dir, scores = run_questions(tmp_path, monkeypatch, questions, repeats=2, concurrency=2)
    assert scores == {"c": [0.0], "d": [0.0]}  # each claims a file it never wrote
    assert not (run_dir / "work").exists()


def test_a_question_folder_is_made_while_a_sibling_process_removes_the_empty_work_folder(
    tmp_path, monkeypatch
):
    """Under pytest-xdist the workers share one run directory: a worker finishing its part
    removes `work/` when empty (`remove_empty_work`), which can land between `os.makedirs`
    making `work/` and making `work/<target>` in another worker. That question must still get
    its folder (it errored with FileNotFoundError naming `work/<target>` in a CI run)."""
    import os

    from tracegrade.rundir import directory
    from tracegrade.rundir.directory import RunDirectory

    run = RunDirectory(tmp_path)
    real = os.makedirs
    raced: list[str] = []

    def makedirs_raced(name, mode=0o777, exist_ok=False):
        if not raced:  # the sibling's rmdir of work/ lands inside this call, once
            raced.append(str(name))
            raise FileNotFoundError(2, "No such file or directory", str(name))
        return real(name, mode, exist_ok)

    monkeypatch.setattr(directory.os, "makedirs", makedirs_raced)
    path = run.question_workdir("support_desk", "refund_over_limit", 0)
    assert raced and path.is_dir()
    assert path == tmp_path / "work" / "support_desk" / "refund_over_limit" / "trial-0"
