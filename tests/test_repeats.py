"""Repeats: each question runs k times, each trial stored, traced and re-graded on its own;
pass@k, pass^k and the `min_pass_rate` gate against values worked out by hand from the seeded
agent's schedule; resume per trial; compare with repeats."""

from __future__ import annotations

import json
import random
import sqlite3
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from tracegrade.capture.tracefile import read_trial_records
from tracegrade.cli import main
from tracegrade.rundir.store import ResultStore

SEED = 6
CITIES = ("Paris", "Oslo", "Rome")
# The agent looks the city up (tool_usage passes) when its seeded draw is < 0.5, trial by
# trial. These are the draws of random.Random(f"6:<city>"), checked below:
SCHEDULE = {
    "Paris": [False, False, False],  # 0/3: pass@3 no, pass^3 no
    "Oslo": [True, True, True],  # 3/3: pass@3 yes, pass^3 yes
    "Rome": [True, True, False],  # 2/3: pass@3 yes, pass^3 no
}
# A passing trial: tool_usage 5/5 and contains 1/1 -> composite 5; a failing one: tool_usage 0
# and contains 1 -> composite (0 + 5) / 2 = 2.5.
COMPOSITE = {"Paris": 2.5, "Oslo": 5.0, "Rome": (5 + 5 + 2.5) / 3}
SPREAD = {"Paris": 0.0, "Oslo": 0.0, "Rome": 2.5}
PASS_AT_K_RATE = 2 / 3  # Oslo, Rome
PASS_HAT_K_RATE = 1 / 3  # Oslo

AGENT = """
import random

from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from agents.scripted import ScriptedChatModel, call, say

DRAWS = {}


def flaky(city):
    def first_turn(messages):
        rng = DRAWS.setdefault(city, random.Random(f"SEED:{city}"))
        if rng.random() < 0.5:
            return call(("lookup", {"city": city}))
        return say(f"It is sunny in {city}.")
    return first_turn


SCRIPT = {
    f"weather in {city}?": [flaky(city), say(f"It is sunny in {city}.")]
    for city in CITIES
}


@tool
def lookup(city: str) -> str:
    \"\"\"Look up the weather of a city.\"\"\"
    return f"sunny in {city}"


def build_graph():
    tools = [lookup]
    model = ScriptedChatModel(script=SCRIPT).bind_tools(tools)

    async def agent(state):
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(name="flaky")
"""


def test_the_schedule_is_the_seeded_draws():
    for city, expected in SCHEDULE.items():
        rng = random.Random(f"{SEED}:{city}")
        assert [rng.random() < 0.5 for _ in expected] == expected


def _project(root: Path, *, repeats: int | None = 3, gate: dict | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    text = textwrap.dedent(AGENT).replace("SEED", str(SEED)).replace("CITIES", repr(CITIES))
    (root / "agent.py").write_text(text)
    rows = [
        {
            "id": city.lower(),
            "input": f"weather in {city}?",
            "expected": {"keyword": "sunny"},
            "expected_tools": [{"tool": "lookup", "should_run": True, "args": {"city": city}}],
        }
        for city in CITIES
    ]
    (root / "questions.yaml").write_text(yaml.safe_dump({"questions": rows}))
    target = {
        "agent": "agent.py:build_graph",
        "dataset": "questions.yaml",
        "concurrency": 1,  # trials in order, so each draw lands on its trial
        # A flaky agent gated on its pass rate: tool usage fails questions, not the gate on
        # its own (`must_pass: false`), and no pass-rate bar unless the test sets one.
        "graders": [
            {"id": "tool_usage_grader", "threshold": 5, "must_pass": False},
            {"id": "contains", "match_on": ["expected", "keyword"]},
        ],
        "gate": {"min_pass_rate": 0, **(gate or {})},
    }
    if repeats is not None:
        target["repeats"] = repeats
    config = {"version": 1, "runs_dir": "runs", "targets": {"t": target}}
    path = root / "tracegrade.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _only_run(root: Path) -> Path:
    (run_dir,) = (root / "runs").iterdir()
    return run_dir


def test_each_trial_is_stored_traced_and_summarised(tmp_path, capsys):
    config = _project(tmp_path)
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    argv = ["run", "--config", str(config), "--quiet", "--json", str(report)]
    assert main([*argv, "--junit", str(junit)]) == 0
    out = capsys.readouterr().out
    run_dir = _only_run(tmp_path)
    with ResultStore.open_readonly(run_dir) as store:
        runs = store.load_runs()
    assert sorted((r.id, r.trial) for r in runs) == sorted(
        (c.lower(), t) for c in CITIES for t in range(3)
    )
    # Each trial's own calls in the trace file, keyed by trial.
    records = read_trial_records(run_dir / "traces" / "t.jsonl")
    for city, schedule in SCHEDULE.items():
        for trial, looked_up in enumerate(schedule):
            calls = [c.name for c in records[(city.lower(), trial)]]
            assert calls == (["lookup"] if looked_up else []), (city, trial)

    data = json.loads(report.read_text())
    summary = data["summary"]["t"]
    assert summary["pass_rate"] == pytest.approx(PASS_HAT_K_RATE)
    trials = {s["question_id"]: s for s in summary["trials"]}
    for city, schedule in SCHEDULE.items():
        s = trials[city.lower()]
        assert s["trials"] == 3
        assert s["passed"] == sum(schedule)
        assert s["pass_at_k"] is any(schedule)
        assert s["pass_hat_k"] is all(schedule)
        assert s["composite_mean"] == pytest.approx(COMPOSITE[city])
        assert s["composite_spread"] == pytest.approx(SPREAD[city])
        tool = next(g for g in s["graders"] if g["grader_id"] == "tool_usage_grader")
        assert tool["mean"] == pytest.approx(5 * sum(schedule) / 3)
    assert [q["trial"] for q in data["questions"] if q["id"] == "rome"] == [0, 1, 2]
    # Each trial's entry carries its own calls, not the first trial's.
    for q in data["questions"]:
        looked_up = SCHEDULE[q["id"].title()][q["trial"]]
        assert [c["name"] for c in q["tool_calls"]] == (["lookup"] if looked_up else [])
    names = [case.get("name") for case in ET.parse(junit).getroot().iter("testcase")]
    assert sorted(names) == sorted(
        c.lower() + (f"#{t}" if t else "") for c in CITIES for t in range(3)
    )
    assert "trials (k = 3): pass@k 0.67, pass^k 0.33 of 3 question(s)" in out
    assert "rome: 2/3 passed, pass@k yes, pass^k no; composite 4.17 spread 2.5" in out


def test_min_pass_rate_gates_on_pass_hat_k(tmp_path, capsys):
    config = _project(tmp_path, gate={"min_pass_rate": 0.5})
    assert main(["run", "--config", str(config), "--quiet"]) == 2
    assert "pass rate 0.33 < min_pass_rate 0.5" in capsys.readouterr().out


def test_with_one_trial_min_pass_rate_is_the_plain_pass_rate(tmp_path, capsys):
    # First draws: Paris fails, Oslo and Rome pass -> 2/3.
    config = _project(tmp_path, repeats=None, gate={"min_pass_rate": 0.6})
    report = tmp_path / "r.json"
    assert main(["run", "--config", str(config), "--quiet", "--json", str(report)]) == 0
    data = json.loads(report.read_text())
    assert data["summary"]["t"]["pass_rate"] == pytest.approx(2 / 3)
    assert data["summary"]["t"]["trials"] is None


def test_repeats_flag_overrides_the_target_and_resume_is_per_trial(tmp_path, capsys):
    config = _project(tmp_path, repeats=None)
    assert main(["run", "--config", str(config), "--quiet", "--repeats", "2"]) == 0
    run_dir = _only_run(tmp_path)
    manifest = json.loads((run_dir / "identity.json").read_text())
    assert manifest["targets"]["t"]["repeats"] == 2
    assert manifest["selection"]["repeats"] == 2
    # Lose one trial, as an interrupted run would.
    db = sqlite3.connect(run_dir / "results.sqlite")
    db.execute("DELETE FROM questions WHERE question_id = 'rome' AND trial = 1")
    db.execute("DELETE FROM scores WHERE question_id = 'rome' AND trial = 1")
    db.execute("DELETE FROM grades WHERE question_id = 'rome' AND trial = 1")
    db.commit()
    db.close()
    capsys.readouterr()
    main(["run", "--config", str(config), "--quiet", "--resume", run_dir.name])
    out = capsys.readouterr().out
    assert "t: resumed 1 of 6 trial(s) (1 question(s))" in out
    with ResultStore.open_readonly(run_dir) as store:
        assert sorted((r.id, r.trial) for r in store.load_runs()) == sorted(
            (c.lower(), t) for c in CITIES for t in range(2)
        )


def test_regrade_scores_each_trial_with_its_own_record(tmp_path, capsys):
    config = _project(tmp_path)
    main(["run", "--config", str(config), "--quiet"])
    run_dir = _only_run(tmp_path)
    capsys.readouterr()
    main(["grade", "--config", str(config), str(run_dir), "--quiet"])
    with ResultStore.open_readonly(run_dir) as store:
        regraded = store.load_scores(grading_id=2)
    tool = {
        (q.id, q.trial): next(g for g in q.graders if g.grader_id == "tool_usage_grader")
        for q in regraded
    }
    for city, schedule in SCHEDULE.items():
        for trial, looked_up in enumerate(schedule):
            assert tool[(city.lower(), trial)].score == (5.0 if looked_up else 0.0)


def test_compare_with_repeats_takes_trials_together(tmp_path, capsys):
    config = _project(tmp_path)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    main(["run", "--config", str(config), "--quiet", "--json", str(a)])
    # The same process draws on: the second run gets draws 4-6 of each city, worked out from
    # random.Random(f"6:<city>"): Paris F,F,T (1/3); Oslo T,T,F (2/3); Rome T,F,T (2/3).
    main(["run", "--config", str(config), "--quiet", "--json", str(b)])
    capsys.readouterr()
    assert main(["compare", str(a), str(a)]) == 0
    assert "3 question(s) compared" in capsys.readouterr().out
    code = main(["compare", str(a), str(b), "--json", str(tmp_path / "c.json")])
    out = capsys.readouterr().out
    assert code == 2  # oslo newly fails (pass^k): compare follows the gate
    assert "1 question(s) newly fail the gate's pass rule: oslo" in out
    assert "oslo: composite 5 -> 4.17 (-0.83); pass rate 100% -> 67%" in out
    assert "paris: composite 2.5 -> 3.33 (+0.83); pass rate 0% -> 33%" in out
    data = json.loads((tmp_path / "c.json").read_text())
    status = {q["id"]: q["status"] for q in data["questions"]}
    assert status == {"paris": "still_failing", "oslo": "newly_failing", "rome": "still_failing"}
    assert data["mcnemar"] == {"pass_to_fail": 1, "fail_to_pass": 0, "p_value": 1.0}
    assert data["composite_delta"]["mean"] == pytest.approx(0.0, abs=1e-12)
    assert main(["compare", str(a), str(b), "--fail-on", "any"]) == 2
    # For noisy repeated runs: no must-pass grader, and the mean composite delta is 0.
    assert main(["compare", str(a), str(b), "--fail-on", "significant"]) == 0
    assert "are not counted under --fail-on significant" in capsys.readouterr().out
