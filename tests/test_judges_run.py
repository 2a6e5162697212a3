"""End to end: a target with all six judges run by `tracegrade run` against the loopback
server. The seed rules show in the results, a judge outage exits 3 naming the outage, and a
re-grade of the stored run makes zero provider calls."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests import openai_server as loopback
from tests.openai_server import non_numeric_score, score, server_error
from tracegrade.cli import main

openai_server = loopback.openai_server  # the fixture, by the name tests request

ROOT = Path(__file__).resolve().parent.parent
JUDGES = [
    "relevance_grader",
    "completeness_grader",
    "accuracy_grader",
    "actionability_grader",
    "fact_match_grader",
    "groundedness_grader",
]


@pytest.fixture
def checkout(tmp_path) -> Path:
    for name in ("examples", "agents"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("runs"))
    return tmp_path


def write_config(checkout: Path, server, **judge) -> Path:
    config = {
        "version": 1,
        "runs_dir": "runs",
        "rubrics": "rubrics/",
        "judge": {
            "provider": "openai-compatible",
            "base_url": server.base_url,
            "model": "loopback-judge",
            "max_attempts": 1,
            **judge,
        },
        "targets": {
            "desk": {
                "agent": "../agents/support_desk.py:build_graph",
                "environment": "../agents/support_desk.py:make_environment",
                "dataset": "datasets/support_desk.yaml",
                "graders": JUDGES,
            }
        },
    }
    path = checkout / "examples" / "judged.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def judge_of(body: dict) -> str:
    prompt = body["messages"][0]["content"]
    if "yes-or-no question" in prompt:
        return "groundedness"
    return prompt.split("single dimension: ", 1)[1].split(":", 1)[0]


def by_grader(report: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for question in report["questions"]:
        for result in question["graders"]:
            out.setdefault(result["id"], []).append(result)
    return out


def test_six_judges_run_regrade_free_and_show_the_seed_rules(openai_server, checkout):
    # Relevance answers off its scale (clamped), groundedness hedges (resolves to 1).
    answers = {"relevance": 7, "groundedness": 0.9}
    openai_server.responder = lambda body: score(answers.get(judge_of(body), 4), "judged")
    config = write_config(checkout, openai_server)
    out = checkout / "run.json"

    code = main(["run", "--config", str(config), "--json", str(out), "--quiet"])
    report = json.loads(out.read_text())
    assert code == 0
    results = by_grader(report)
    questions = len(report["questions"])
    assert all(r["score"] == 5.0 and not r["error"] for r in results["relevance_grader"])
    assert all(r["score"] == 1.0 for r in results["groundedness_grader"])
    facts = [r for r in results["fact_match_grader"] if not r["skipped"]]
    skipped = [r for r in results["fact_match_grader"] if r["skipped"]]
    assert skipped and all(r["reason"] == "no expected_facts; skipping" for r in skipped)
    # One request per applicable judge per question: skips cost nothing.
    assert len(openai_server.requests) == 5 * questions + len(facts)
    prompts = {judge_of(r.body): [] for r in openai_server.requests}
    for r in openai_server.requests:
        prompts[judge_of(r.body)].append(r.prompt)
    assert all("TOOL CALLS (" in p or "called no tools" in p for p in prompts["accuracy"])
    assert not any("TOOL CALLS (" in p for p in prompts["relevance"] + prompts["actionability"])
    assert report["identity"]["judge"]["pinned_knobs"] == {"temperature": 0.0, "top_p": 1.0}

    # Re-grading the stored run: every answer from the cache, not one provider call.
    before = len(openai_server.requests)
    regraded = checkout / "regrade.json"
    code = main(
        ["grade", report["run_id"], "--config", str(config), "--json", str(regraded), "--quiet"]
    )
    assert code == 0
    assert len(openai_server.requests) == before
    again = by_grader(json.loads(regraded.read_text()))
    for grader_id in JUDGES:
        assert [r["score"] for r in again[grader_id]] == [r["score"] for r in results[grader_id]]

    # --no-cache asks again.
    main(["grade", report["run_id"], "--config", str(config), "--no-cache", "--quiet"])
    assert len(openai_server.requests) == 2 * before


def test_a_judge_outage_exits_3_and_names_the_outage(openai_server, checkout):
    openai_server.default = server_error(503)
    config = write_config(checkout, openai_server)
    out = checkout / "run.json"
    code = main(["run", "--config", str(config), "--json", str(out), "--quiet", "--limit", "2"])
    assert code == 3
    results = by_grader(json.loads(out.read_text()))
    for grader_id in ("relevance_grader", "accuracy_grader", "groundedness_grader"):
        for result in results[grader_id]:
            assert result["error"] and result["score"] is None
            assert "outage" in result["reason"] and "HTTP 503" in result["reason"]
            assert openai_server.base_url in result["reason"]


def test_a_non_numeric_judge_answer_degrades_rather_than_scoring_zero(openai_server, checkout):
    openai_server.responder = lambda body: (
        non_numeric_score() if judge_of(body) == "completeness" else score(4)
    )
    config = write_config(checkout, openai_server)
    out = checkout / "run.json"
    code = main(["run", "--config", str(config), "--json", str(out), "--quiet", "--limit", "1"])
    assert code == 3
    (completeness,) = by_grader(json.loads(out.read_text()))["completeness_grader"]
    assert completeness["error"] and completeness["score"] is None
    assert "non-numeric" in completeness["reason"]
