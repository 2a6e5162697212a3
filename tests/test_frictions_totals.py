"""Frictions a first-time user met (issue 45, items 17 and 24): the JSON report carries the
run totals the console prints and the gate holds, and a budget reason never shows both sides
as the same figure."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.runs_support import write_project
from tracegrade.cli import main
from tracegrade.cost.usage import Tokens, format_over, percentile

PRICED = {"pricing": {"models": {"scripted": {"input": 1.0, "output": 2.0}}}}
PER_CALL = (10 * 1.0 + 5 * 2.0) / 1_000_000  # the scripted model: 10 in, 5 out a call


def test_the_json_report_has_the_run_totals_the_console_prints_and_the_gate_holds(tmp_path, capsys):
    # a p95 budget every question breaks: the gate's figure must be the JSON's figure
    gate = {"max_p95_latency_s": 1e-9, "max_cost": 1.0}
    config = write_project(tmp_path, config=PRICED, target={"gate": gate})
    out = tmp_path / "r.json"
    assert main(["run", "--config", str(config), "--json", str(out)]) == 2
    console = capsys.readouterr().out
    report = json.loads(out.read_text())
    totals = report["summary"]["t"]["totals"]
    assert report["totals"] == totals  # one target: the run's totals are the target's
    agent = totals["agent"]
    assert totals["questions"] == 2
    assert agent["cost"] == pytest.approx(3 * PER_CALL)  # paris: 2 model calls, rome: 1
    assert (agent["input_tokens"], agent["output_tokens"], agent["total_tokens"]) == (30, 15, 45)
    assert agent["model_calls"] == 3 and agent["unknown_calls"] == 0
    assert agent["currency"] == "USD" and agent["unpriced"] == []
    walls = [q["usage"]["latency"]["wall_s"] for q in report["questions"]]
    assert totals["latency_s"] == {
        "p50": percentile(walls, 50),
        "p95": percentile(walls, 95),
        "max": max(walls),
    }
    assert list(totals["tools"]) == ["lookup"] and totals["tools"]["lookup"]["calls"] == 1
    # the console's figures are the JSON's, as the same words
    assert f"cost ${3 * PER_CALL:.6f} over 2 question run(s)" in console
    (shown,) = re.findall(r"p95 question latency ([0-9.]+)s > max_p95_latency_s", console)
    decimals = len(shown.partition(".")[2])
    assert float(shown) == pytest.approx(totals["latency_s"]["p95"], abs=10**-decimals)
    assert report["gate"]["targets"]["t"]["passed"] is False


def test_the_totals_say_unpriced_never_zero(tmp_path):
    config = write_project(tmp_path, questions=["paris"])  # "scripted" is in no price table
    out = tmp_path / "r.json"
    assert main(["run", "--config", str(config), "--json", str(out)]) == 0
    agent = json.loads(out.read_text())["totals"]["agent"]
    assert agent["cost"] is None and agent["unpriced"] == ["scripted"]
    assert agent["total_tokens"] == 30


def test_a_budget_reason_never_shows_both_sides_as_the_same_figure(tmp_path, capsys):
    # paris costs $0.000040; a budget of $0.0000399 rounds to the same two significant digits
    gate = {"max_cost_per_question": 0.0000399}
    config = write_project(tmp_path, questions=["paris"], config=PRICED, target={"gate": gate})
    assert main(["run", "--config", str(config)]) == 2
    out = capsys.readouterr().out
    assert "cost $0.0000400 > max_cost_per_question $0.0000399" in out


@settings(max_examples=300, deadline=None)
@given(
    limit=st.floats(min_value=1e-9, max_value=1e4, allow_nan=False),
    above=st.floats(min_value=1e-12, max_value=1.0, allow_nan=False),
    currency=st.sampled_from(["USD", "EUR", "CHF"]),
)
def test_format_over_tells_an_amount_from_the_limit_it_exceeds(limit, above, currency):
    cost = limit * (1 + above)
    if cost <= limit:
        return
    shown, bound = format_over(Tokens(cost=cost, currency=currency), limit)
    assert shown != bound
    number = re.compile(r"[0-9]+\.[0-9]+")
    (a,), (b,) = number.findall(shown), number.findall(bound)
    decimals = len(a.partition(".")[2])
    assert float(a) == pytest.approx(cost, abs=10**-decimals, rel=1e-9)
    assert float(b) == pytest.approx(limit, abs=10**-decimals, rel=1e-9)
    assert float(a) >= float(b)
