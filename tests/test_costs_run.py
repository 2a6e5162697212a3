"""What a run cost and how long it took, end to end through the runner: each question's tokens,
cost and latency stored and read back, the judges' calls apart, budgets failing a question
with the figure named, grader functions reading cost, tokens and latency, "unpriced" in every
report for a model no price covers, and a store from before the accounting still opening."""

from __future__ import annotations

import json
import sqlite3
import textwrap
import xml.etree.ElementTree as ET

import pytest

from tests import openai_server as loopback
from tests.openai_server import score
from tests.runs_support import write_project
from tracegrade import load_config, regrade_run, start_run
from tracegrade.cli import main
from tracegrade.rundir.store import SCHEMA_VERSION, ResultStore

openai_server = loopback.openai_server

# The scripted model of the test project reports 10 input and 5 output tokens a call.
PRICED = {"pricing": {"models": {"scripted": {"input": 1.0, "output": 2.0}}}}
PER_CALL = (10 * 1.0 + 5 * 2.0) / 1_000_000


def _scores(outcome):
    return {q.id: q for t in outcome.targets for q in t.questions}


def test_each_question_keeps_its_tokens_cost_and_latency(tmp_path):
    outcome = start_run(load_config(write_project(tmp_path, config=PRICED)))
    paris, rome = _scores(outcome)["paris"], _scores(outcome)["rome"]
    # paris: a model call asking for the lookup, one answering; rome: one answering
    assert paris.usage.agent.models["scripted"].calls == 2
    assert (paris.usage.agent.input_tokens, paris.usage.agent.output_tokens) == (20, 10)
    assert paris.usage.cost == pytest.approx(2 * PER_CALL)
    assert rome.usage.cost == pytest.approx(PER_CALL) and rome.usage.tokens == 15
    assert len(paris.usage.latency.model_calls) == 2
    assert list(paris.usage.latency.tools) == ["lookup"] and not rome.usage.latency.tools
    assert 0 < paris.usage.latency.tools["lookup"][0] <= paris.usage.latency.wall_s
    identity = json.loads((outcome.run_dir / "identity.json").read_text())
    assert identity["pricing"]["version"].startswith("bundled-2026-11+config-")
    assert identity["pricing"]["models"]["scripted"] == {
        "input": 1.0,
        "output": 2.0,
        "cached": None,
    }
    with ResultStore.open_readonly(outcome.run_dir) as store:  # what show/compare read back
        again = {q.id: q for q in store.load_scores()}
    assert again["paris"].usage == paris.usage


def test_an_unpriced_model_is_unpriced_in_every_report_never_free(tmp_path, capsys):
    config = write_project(tmp_path, questions=["paris"])  # "scripted": in no price table
    out = tmp_path / "out"
    argv = ["run", "--config", str(config), "--json", str(out / "r.json")]
    argv += ["--markdown", str(out / "r.md"), "--junit", str(out / "r.xml")]
    assert main([*argv, "--html", str(out / "r.html")]) == 0
    console = capsys.readouterr().out
    assert "cost unpriced" in console and "unpriced model(s): scripted" in console
    (question,) = json.loads((out / "r.json").read_text())["questions"]
    assert question["usage"]["agent"]["cost"] is None
    assert question["usage"]["agent"]["unpriced"] == ["scripted"]
    assert "| `paris` | 20 in / 10 out | unpriced |" in (out / "r.md").read_text()
    junit = ET.parse(out / "r.xml").getroot()
    props = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert props["tracegrade.cost"] == "unpriced" and props["cost"] == "unpriced"
    assert "cost unpriced over 1 question run(s)" in (out / "r.html").read_text()
    run_id = json.loads((out / "r.json").read_text())["run_id"]
    assert main(["show", "--config", str(config), run_id]) == 0
    assert "cost unpriced" in capsys.readouterr().out


def test_a_question_over_a_per_question_budget_fails_naming_the_figure(tmp_path, capsys):
    gate = {"max_tokens_per_question": 20, "max_cost_per_question": 0.001}
    config = write_project(tmp_path, questions=["paris"], config=PRICED, target={"gate": gate})
    assert main(["run", "--config", str(config), "--junit", str(tmp_path / "r.xml")]) == 2
    out = capsys.readouterr().out
    assert "tokens 30 > max_tokens_per_question 20" in out
    assert "1 question(s) over a per-question budget (paris:" in out
    assert "tokens per question <= 20" in out  # the rule in force
    failure = ET.parse(tmp_path / "r.xml").getroot().find(".//failure[@type='budget']")
    assert failure is not None and "tokens 30" in failure.get("message")
    # under the budget, the same run passes
    config = write_project(
        tmp_path / "ok",
        questions=["paris"],
        config=PRICED,
        target={"gate": {"max_tokens_per_question": 30}},
    )
    assert main(["run", "--config", str(config)]) == 0


def test_a_budget_on_an_unpriced_model_fails_it_never_free(tmp_path, capsys):
    config = write_project(tmp_path, questions=["paris"], target={"gate": {"max_cost": 1.0}})
    assert main(["run", "--config", str(config)]) == 2
    out = capsys.readouterr().out
    assert "run cost unpriced (no price for scripted): max_cost $1.0000 cannot be held" in out


def test_the_run_budgets_hold_cost_and_p95_latency(tmp_path, capsys):
    config = write_project(
        tmp_path,
        questions=["paris"],
        config=PRICED,
        target={"gate": {"max_cost": 1e-6, "max_p95_latency_s": 0.0001}},
    )
    assert main(["run", "--config", str(config)]) == 2
    out = capsys.readouterr().out
    assert "run cost $0.000040 > max_cost $0.0000010" in out
    assert "p95 question latency" in out and "> max_p95_latency_s 0.0001" in out


GRADING = """
from tracegrade.graders.code import grader



@grader(name="within_budget")
def within_budget(cost, tokens, latency):
    # the tokens as the score (0.3 for 30), so the test sees what the function received
    assert abs(cost - tokens / 15 * 20e-6) < 1e-12 and latency > 0, (cost, tokens, latency)
    return tokens / 100
"""


def test_grader_functions_receive_cost_tokens_and_latency(tmp_path):
    path = write_project(tmp_path, questions=["paris", "rome"], config=PRICED, grading_module=True)
    (tmp_path / "data" / "graders.py").write_text(textwrap.dedent(GRADING))
    outcome = start_run(load_config(path))
    verdicts = {
        q.id: next(g for g in q.graders if g.grader_id == "within_budget")
        for q in _scores(outcome).values()
    }
    assert verdicts["paris"].score == pytest.approx(0.30), verdicts["paris"].reason
    assert verdicts["rome"].score == pytest.approx(0.15), verdicts["rome"].reason


def test_the_judges_calls_are_accounted_apart_and_a_cached_answer_costs_nothing(
    tmp_path, openai_server
):
    openai_server.default = score(4, "on topic")
    judge = {
        "provider": "openai-compatible",
        "base_url": openai_server.base_url,
        "model": "gpt-4o-mini",
        "max_attempts": 1,
    }
    path = write_project(
        tmp_path,
        questions=["paris"],
        config={"judge": judge, **PRICED},
        target={"graders": ["tool_usage_grader", "relevance_grader"]},
    )
    config = load_config(path)
    outcome = start_run(config)
    (paris,) = outcome.targets[0].questions
    judges = paris.usage.judges
    assert judges.calls == 1 and judges.models["gpt-4o-mini"].input_tokens > 0
    assert judges.cost is not None and judges.cost > 0  # the bundled table prices gpt-4o-mini
    assert paris.usage.agent.models.keys() == {"scripted"}  # never mixed with the agent's
    regrade = regrade_run(config, outcome.run_dir)
    (again,) = regrade.targets[0].questions
    assert again.usage.judges.calls == 0 and again.usage.judges.cost == 0  # cached
    assert again.usage.agent == paris.usage.agent


def test_a_store_from_before_the_accounting_migrates_and_still_opens(tmp_path):
    outcome = start_run(load_config(write_project(tmp_path, questions=["paris"], config=PRICED)))
    path = outcome.run_dir / "results.sqlite"
    with sqlite3.connect(path) as db:  # as the release before the judges' column wrote it
        db.execute("ALTER TABLE scores DROP COLUMN judge_usage")
        db.execute("UPDATE questions SET usage = '{}'")  # and before any accounting
        db.execute("PRAGMA user_version = 3")
    with ResultStore.open_readonly(outcome.run_dir) as store:  # reading changes nothing
        (score_,) = store.load_scores()
        assert score_.usage is None
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 3
    with ResultStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION == 4
        columns = {r[1] for r in store._db.execute("PRAGMA table_info(scores)")}
        assert "judge_usage" in columns
        (score_,) = store.load_scores()
        assert score_.usage is None and score_.composite is not None


def recorded_lookup(model):
    """A react agent on `model` with the lookup tool, invoked once under a recorder: the
    recorder (its `model_calls`) and the sealed record."""
    from agents.testing_graphs import lookup, react_agent
    from tracegrade import Recorder, RunTelemetry

    graph = react_agent(model, [lookup], name="quiet")
    with RunTelemetry(trace_file=None) as telemetry:
        recorder = Recorder(
            tracer=telemetry.tracer, question_id="q", dataset="d", target="t", agent_name="quiet"
        )
        with recorder.question_span():
            state = graph.invoke({"messages": [("user", "hi")]}, {"callbacks": [recorder]})
        return recorder, recorder.seal(state)


def test_a_model_that_reports_no_usage_is_unknown_never_zero():
    from agents.scripted import ScriptedChatModel, call, say
    from tracegrade.cost.pricing import question_usage
    from tracegrade.cost.usage import format_cost
    from tracegrade.inputs.config import GateConfig
    from tracegrade.verdicts.budgets import question_budget_failures

    script = [call(("lookup", {"q": "x"})), say("done")]
    model = ScriptedChatModel(script=script, usage="none", model_name="gpt-4o")
    recorder, _record = recorded_lookup(model)
    assert [(c.model, c.reported) for c in recorder.model_calls] == [("gpt-4o", False)] * 2
    assert all(c.latency_s > 0 for c in recorder.model_calls)
    usage = question_usage(recorder.model_calls, wall_s=0.1)
    assert usage.agent.unknown_calls == 2 and usage.tokens is None and usage.cost is None
    assert format_cost(usage.agent) == "unknown"
    reasons = question_budget_failures(usage, GateConfig(max_tokens_per_question=1_000))
    assert reasons == [
        "tokens unknown (2 model call(s) reported no usage): max_tokens_per_question 1,000 "
        "cannot be held"
    ]


@pytest.mark.parametrize(
    "gate, key",
    [
        ({"max_cost_per_question": -0.5}, "max_cost_per_question"),
        ({"max_tokens_per_question": 12.5}, "max_tokens_per_question"),
        ({"max_p95_latency_s": "fast"}, "max_p95_latency_s"),
    ],
)
def test_a_bad_budget_is_exit_4_naming_file_line_and_key(tmp_path, capsys, gate, key):
    config = write_project(tmp_path, questions=["paris"], target={"gate": gate})
    assert main(["run", "--config", str(config)]) == 4
    err = capsys.readouterr().err
    line = next(i for i, text in enumerate(config.read_text().splitlines(), 1) if key in text)
    assert f"{config}:{line}: at /targets/t/gate/{key}" in err, err
