"""A target's `variants:` runs the dataset once per variant (factory keyword arguments) into one
run directory; reports show the variants side by side with intervals, each variant has its own
gate, and `compare --variants` compares two of them question by question."""

from __future__ import annotations

import json

from tests.test_world_tools import CHARGE, project
from tracegrade.cli import main


def _project(tmp_path, variants) -> str:
    questions = [
        CHARGE,
        {**CHARGE, "id": "charge_again"},
        {"id": "status", "input": "Status of A-17?", "trajectory": {"forbid": ["issue_refund"]}},
    ]
    path = project(
        tmp_path,
        questions,
        factory="build_graph",
        graders=[{"id": "trajectory_grader"}],
        variants=variants,
    )
    return str(path)


def test_two_variants_side_by_side_and_the_gate_fails_only_the_worse(tmp_path, capsys):
    path = _project(tmp_path, {"careful": {"careful": True}, "careless": {"careful": False}})
    report = tmp_path / "results.json"
    assert main(["run", "--config", path, "--json", str(report)]) == 2
    out = capsys.readouterr().out
    data = json.loads(report.read_text())
    gates = data["gate"]["targets"]
    assert gates["desk.careful"]["passed"] is True
    assert gates["desk.careless"]["passed"] is False  # claims the charge after the timeout
    rows = {r["variant"]: r for r in data["variants"]["desk"]}
    assert rows["careful"]["args"] == {"careful": True}
    assert rows["careful"]["pass_rate"]["mean"] == 1.0
    assert rows["careless"]["pass_rate"]["mean"] == 1 / 3  # the two charges fail
    low, high = rows["careless"]["pass_rate"]["low"], rows["careless"]["pass_rate"]["high"]
    assert 0 <= low <= 1 / 3 <= high <= 1
    assert rows["careful"]["latency_s"]["n"] == 3
    table = out.split("variants of desk")[1]
    assert "careful" in table and "passed" in table and "careless" in table and "FAILED" in table
    # one run directory holds both
    (run_dir,) = (tmp_path / "runs").iterdir()
    capsys.readouterr()
    code = main(["compare", str(run_dir), "--variants", "desk.careful", "desk.careless"])
    assert code == 2  # the careless variant newly fails the charges
    compared = capsys.readouterr().out
    assert "charge" in compared and "charge_again" in compared


def test_a_variant_argument_the_factory_does_not_take_is_invalid_input(tmp_path, capsys):
    path = _project(tmp_path, {"odd": {"carefull": True}})
    assert main(["run", "--config", path, "--quiet"]) == 4
    err = capsys.readouterr().err
    assert "tracegrade.yaml:" in err and "/targets/desk/variants/odd" in err
    assert "carefull" in err
