"""Re-grading (seed 003): stored graders by default, `--current` on request, judge answers from
the cache (zero provider calls), the agent never re-run; judge outages are exit 3."""

from __future__ import annotations

import json
import textwrap

from tests import openai_server as loopback
from tests.openai_server import score, server_error
from tests.runs_support import write_project
from tracegrade import load_config, regrade_run, start_run
from tracegrade.cli import main
from tracegrade.rundir.store import ResultStore

openai_server = loopback.openai_server  # the fixture, by the name tests request


def _judged_project(tmp_path, server, **kwargs):
    judge = {
        "provider": "openai-compatible",
        "base_url": server.base_url,
        "model": "judge-model",
        "max_attempts": 1,
        "timeout_s": 5,
    }
    graders = ["tool_usage_grader", "relevance_grader"]
    return write_project(
        tmp_path,
        config={"judge": judge},
        target={"graders": graders},
        grading_module=True,
        **kwargs,
    )


def test_regrade_uses_the_cache_and_never_reruns_the_agent(tmp_path, openai_server):
    openai_server.default = score(4, "on topic")
    config = load_config(_judged_project(tmp_path, openai_server))
    outcome = start_run(config)
    calls = len(openai_server.requests)
    assert calls == 2  # one judge call per question
    identity = json.loads((outcome.run_dir / "identity.json").read_text())
    assert identity["judge"]["model"] == "judge-model" and "pinned_knobs" in identity["judge"]
    specs = {s["id"]: s for s in identity["targets"]["t"]["graders"]}
    assert specs["relevance_grader"]["code_sha256"] and specs["says_sunny"]["source"] == "module"
    assert (specs["relevance_grader"]["min_score"], specs["relevance_grader"]["max_score"]) == (
        0.0,
        5.0,
    )
    first = {
        q.id: [(g.grader_id, g.score) for g in q.graders] for q in outcome.targets[0].questions
    }
    assert first["paris"] == [
        ("tool_usage_grader", 5.0),
        ("relevance_grader", 4.0),
        ("says_sunny", 1.0),
    ]

    # the agent file is broken now: a re-grade that ran it would fail
    (tmp_path / "agent.py").write_text("raise RuntimeError('agent must not run')\n")
    regraded = regrade_run(config, outcome.run_dir)
    assert len(openai_server.requests) == calls  # zero provider calls: all from the cache
    again = {
        q.id: [(g.grader_id, g.score) for g in q.graders] for q in regraded.targets[0].questions
    }
    assert again == first
    assert regraded.grading_id == outcome.grading_id + 1
    with ResultStore.in_run_dir(outcome.run_dir) as store:
        assert [g["mode"] for g in store.gradings()] == ["run", "stored"]
        assert len(store.load_scores(grading_id=1)) == len(store.load_scores(grading_id=2)) == 2


def test_stored_grading_module_copy_vs_current(tmp_path, openai_server):
    config = load_config(_judged_project(tmp_path, openai_server))
    outcome = start_run(config)
    copy = outcome.run_dir / "graders" / "t" / "graders.py"
    assert copy.is_file()
    # edit the grading module in place: the old run's scores must not silently change
    (tmp_path / "data" / "graders.py").write_text(
        textwrap.dedent(
            """
            from tracegrade.graders.code import grader

            @grader(name="says_sunny")
            def says_sunny(output):
                return "rainy" in output
            """
        )
    )
    stored = regrade_run(config, outcome.run_dir)
    current = regrade_run(load_config(config.path), outcome.run_dir, current=True)

    def sunny(o):
        return {
            q.id: next(g.score for g in q.graders if g.grader_id == "says_sunny")
            for q in o.targets[0].questions
        }

    assert sunny(stored) == {"paris": 1.0, "rome": 1.0}
    assert sunny(current) == {"paris": 0.0, "rome": 0.0}
    with ResultStore.in_run_dir(outcome.run_dir) as store:
        assert [g["mode"] for g in store.gradings()] == ["run", "stored", "current"]


def test_judge_outage_is_exit_3_naming_the_outage(tmp_path, openai_server, capsys):
    openai_server.default = server_error(503)
    path = _judged_project(tmp_path, openai_server)
    code = main(["run", "--config", str(path), "--quiet"])
    out = capsys.readouterr().out
    assert code == 3
    assert "relevance_grader errored" in out
    assert "503" in out
    assert "evaluation incomplete" in out


def test_regrade_without_the_trace_file_is_degraded_not_text_evidence(tmp_path, openai_server):
    config = load_config(_judged_project(tmp_path, openai_server))
    outcome = start_run(config)
    (outcome.run_dir / "traces" / "t.jsonl").unlink()
    regraded = regrade_run(config, outcome.run_dir)
    for q in regraded.targets[0].questions:
        assert q.errored and "no tool-call record" in q.error
    assert regraded.exit_code == 3


def test_grade_cli_writes_reports(tmp_path, openai_server, capsys):
    config = load_config(_judged_project(tmp_path, openai_server))
    outcome = start_run(config)
    report = tmp_path / "out" / "regrade.json"
    code = main(
        ["grade", str(outcome.run_dir), "--config", str(config.path), "--json", str(report)]
    )
    assert code == outcome.exit_code == 2  # rome calls no tool: tool_usage_grader must pass
    assert report.is_file()
    assert f"run {outcome.run_id} (grading 2)" in capsys.readouterr().out
