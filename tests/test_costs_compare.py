"""The demo's cost story through the CLI: each question's tokens and cost in the report (from
the scripted model's usage, priced by the example config's `pricing:`), and the planted
expensive variant, which passes its own gate, failing `compare --fail-on cost:+20%` with the
questions named; a malformed percentage is exit 4."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tracegrade.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> Path:
    checkout = tmp_path_factory.mktemp("checkout")
    for name in ("examples", "agents"):
        shutil.copytree(ROOT / name, checkout / name, ignore=shutil.ignore_patterns("runs"))
    out = checkout / "reports"
    config = checkout / "examples" / "tracegrade.yaml"
    for target in ("support_desk", "support_desk_expensive"):
        argv = ["run", "--config", str(config), "--target", target, "--quiet"]
        assert main([*argv, "--json", str(out / f"{target}.json")]) == 0  # both pass their gate
    return out


def test_the_demo_report_shows_each_questions_tokens_and_cost(reports):
    data = json.loads((reports / "support_desk.json").read_text())
    identity_prices = data["identity"]["pricing"]
    assert identity_prices["models"]["scripted-*"]["input"] == 0.40
    for q in data["questions"]:
        agent = q["usage"]["agent"]
        model = agent["models"]["scripted-support-good"]
        assert model["calls"] >= 2 and model["unknown_calls"] == 0, q["id"]
        assert model["input_tokens"] > 0 and model["output_tokens"] > 0, q["id"]
        expected = (model["input_tokens"] * 0.40 + model["output_tokens"] * 1.60) / 1e6
        assert agent["cost"] == pytest.approx(expected), q["id"]
        assert q["usage"]["latency"]["wall_s"] > 0


def test_the_expensive_variant_fails_compare_on_cost_naming_the_questions(reports, capsys):
    base, cand = str(reports / "support_desk.json"), str(reports / "support_desk_expensive.json")
    assert main(["compare", base, cand]) == 0  # the gate sees no regression: every answer passes
    out = capsys.readouterr().out
    assert "no regression" in out and "cost $" in out  # the deltas are printed anyway
    code = main(
        ["compare", base, cand, "--fail-on", "cost:+20%", "--json", str(reports / "c.json")]
    )
    out = capsys.readouterr().out
    assert code == 2, out
    verdict = out[out.index("verdict:") :]
    assert "REGRESSED" in verdict and "allowed cost:+20%" in verdict
    for qid in ("book_consultation", "multi_turn_booking", "availability_check"):
        assert qid in verdict
    assert "95% paired bootstrap interval" in out[out.index("cost $") :]
    costs = json.loads((reports / "c.json").read_text())["costs"]
    assert costs["cost"]["relative"] > 0.2 and costs["cost"]["interval"]["low"] > 0
    assert len(costs["questions"]) == 9
    # tokens rose as much; latency did not move by design, so a latency rule alone holds
    assert main(["compare", base, cand, "--fail-on", "tokens:+20%"]) == 2
    capsys.readouterr()


def test_the_baseline_against_itself_passes_a_cost_rule(reports, capsys):
    base = str(reports / "support_desk.json")
    assert main(["compare", base, base, "--fail-on", "cost:+0%"]) == 0
    assert "cost $" in capsys.readouterr().out


@pytest.mark.parametrize("rule", ["cost:20%", "cost:+twenty%", "latency:+20", "cost"])
def test_a_malformed_percentage_is_exit_4_naming_the_flag(reports, capsys, rule):
    base = str(reports / "support_desk.json")
    with pytest.raises(SystemExit) as exited:  # a usage error, as argparse reports it
        main(["compare", base, base, "--fail-on", rule])
    assert exited.value.code == 4
    err = capsys.readouterr().err
    assert "--fail-on" in err and "malformed percentage" in err
