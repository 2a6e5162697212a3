"""`tracegrade compare`, `run --baseline`, `runs` and `show` through the real CLI entry point,
on small projects run for real (scripted agents), plus the alignment rules on typed results."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from tests.runs_support import write_project
from tracegrade import GraderSpec, InputError, QuestionResult, StoredRun, compare_runs
from tracegrade.cli import main
from tracegrade.comparison.compare import diff_tool_calls
from tracegrade.reports.compare_report import render_comparison_console
from tracegrade.rundir.record import GraderVerdict, ToolCallResult

MUST_PASS = [
    {"id": "tool_usage_grader", "must_pass": True, "threshold": 5},
    {"id": "contains", "match_on": ["expected", "keyword"]},
]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "run_v0"
V0_ID = "20260101-000000-f1x7ed"


def _run(config: Path, *extra: str) -> str:
    """Run the project; return the new run's id."""
    runs = config.parent / "runs"
    before = set(runs.iterdir()) if runs.is_dir() else set()
    main(["run", "--config", str(config), "--quiet", *extra])
    (new,) = set(runs.iterdir()) - before
    return new.name


def _stop_looking_up(config: Path) -> None:
    """Regress the agent: it answers Paris without calling `lookup` (a new agent file: the
    old one stays imported in this process)."""
    text = (config.parent / "agent.py").read_text()
    old = 'call(("lookup", {"city": "Paris", "api_token": "s3cr3t-arg-value"})),'
    assert old in text
    (config.parent / "regressed_agent.py").write_text(text.replace(old, ""))
    data = yaml.safe_load(config.read_text())
    data["targets"]["t"]["agent"] = "regressed_agent.py:build_graph"
    config.write_text(yaml.safe_dump(data, sort_keys=False))


def _edit_question(config: Path, qid: str, **changes) -> None:
    path = config.parent / "data" / "questions.yaml"
    data = yaml.safe_load(path.read_text())
    for row in data["questions"]:
        if row["id"] == qid:
            row.update(changes)
    path.write_text(yaml.safe_dump(data))


def test_a_run_compared_with_itself_shows_no_change_and_exits_0(tmp_path, capsys):
    config = write_project(tmp_path, target={"graders": MUST_PASS})
    run = _run(config)
    capsys.readouterr()
    assert main(["compare", "--config", str(config), run, run]) == 0
    out = capsys.readouterr().out
    assert "2 question(s) compared" in out
    assert "newly failing" not in out and "changed" not in out
    assert "0 pass->fail, 0 fail->pass; exact McNemar p = 1" in out
    assert "verdict: no regression" in out


def test_a_regressed_agent_is_named_with_its_missing_call_and_exits_2(tmp_path, capsys):
    config = write_project(tmp_path, target={"graders": MUST_PASS})
    base = _run(config)
    _stop_looking_up(config)
    cand = _run(config)
    capsys.readouterr()
    out_json = tmp_path / "cmp.json"
    code = main(["compare", "--config", str(config), base, cand, "--json", str(out_json)])
    out = capsys.readouterr().out
    assert code == 2
    assert "newly failing (1):" in out
    assert "paris: composite 5 -> " in out
    assert "must-pass newly failing: tool_usage_grader" in out
    assert '- lookup(city="Paris", api_token="(redacted)")  (disappeared)' in out
    data = json.loads(out_json.read_text())
    (paris,) = [q for q in data["questions"] if q["status"] == "newly_failing"]
    assert paris["id"] == "paris"
    assert paris["tool_changes"] == [
        {
            "kind": "disappeared",
            "name": "lookup",
            "args": {"city": "Paris", "api_token": "(redacted)"},
            "changed": {},
        }
    ]
    assert data["mcnemar"] == {"pass_to_fail": 1, "fail_to_pass": 0, "p_value": 1.0}
    # The must-pass rule alone decides; `significant` alone does not fire on one question.
    assert main(["compare", "--config", str(config), base, cand, "--fail-on", "significant"]) == 0


def test_json_results_files_compare_like_run_dirs(tmp_path, capsys):
    config = write_project(tmp_path, target={"graders": MUST_PASS})
    _run(config, "--json", str(tmp_path / "base.json"))
    _stop_looking_up(config)
    _run(config, "--json", str(tmp_path / "cand.json"))
    capsys.readouterr()
    code = main(["compare", str(tmp_path / "base.json"), str(tmp_path / "cand.json")])
    out = capsys.readouterr().out
    assert code == 2
    assert "(disappeared)" in out and "must-pass newly failing: tool_usage_grader" in out


def test_an_edited_question_is_refused_with_exit_4_and_named(tmp_path, capsys):
    config = write_project(tmp_path, target={"graders": MUST_PASS})
    base = _run(config)
    _edit_question(config, "rome", expected={"keyword": "rainy"})
    cand = _run(config)
    capsys.readouterr()
    assert main(["compare", "--config", str(config), base, cand]) == 4
    err = capsys.readouterr().err
    assert "1 question(s) differ between the runs" in err
    assert "t/rome: content differs" in err
    assert "paris" not in err
    # Allowed: rome is listed apart, paris is compared.
    assert main(["compare", "--config", str(config), base, cand, "--allow-drift"]) == 0
    out = capsys.readouterr().out
    assert "1 question(s) compared" in out
    assert "drifted, not compared (1):" in out
    assert "rome: content differs" in out


def _result(qid: str, *, rubrics=(), passed=True, composite=5.0, sha="x") -> QuestionResult:
    # the question's verdict and rubrics are derived from its graders, as a report writes them
    checks = [
        {"id": "c", "rubric": r.split("@")[0], "rubric_version": r.split("@")[1], "status": "pass"}
        for r in rubrics
    ]
    grader = GraderVerdict(id="g", score=1.0 if passed else 0.0, max=1.0, binary=True)
    grader.checks = checks
    return QuestionResult(
        target="t", id=qid, composite=composite, content_sha256=sha, graders=[grader]
    )


def _stored(*questions: QuestionResult, name: str = "r") -> StoredRun:
    return StoredRun(name, name, 1, list(questions), None)


def test_rubric_versions_never_silently_compared():
    base = _stored(_result("a", rubrics=["booking@1.0.0"]), _result("b"))
    cand = _stored(_result("a", rubrics=["booking@1.1.0"]), _result("b"))
    with pytest.raises(
        InputError, match=r"rubric versions differ: booking@1\.0\.0 vs booking@1\.1\.0"
    ):
        compare_runs(base, cand)
    allowed = compare_runs(base, cand, allow_drift=True)
    assert [d.question_id for d in allowed.drifted] == ["a"]
    assert [q.question_id for q in allowed.questions] == ["b"]


def test_questions_in_one_run_only_are_listed_not_compared():
    base = _stored(_result("a"), _result("gone"))
    cand = _stored(_result("a"), _result("new", passed=False, composite=0.0))
    c = compare_runs(base, cand)
    assert [q.question_id for q in c.questions] == ["a"]
    assert (c.only_base, c.only_cand) == (["t/gone"], ["t/new"])
    # a baseline question the candidate never asked leaves the comparison incomplete
    assert c.exit_code == 3 and "t/gone" in c.incomplete[0]
    assert compare_runs(base, cand, allow_missing=True).exit_code == 0


def test_tool_call_difference_names_changed_arguments():
    base = [
        ToolCallResult(name="book", args={"date": "2026-12-03", "slot": "10:00"}),
        ToolCallResult(name="check", args={"date": "2026-12-03"}),
    ]
    cand = [
        ToolCallResult(name="book", args={"date": "2026-12-04", "slot": "10:00"}, outcome="error"),
        ToolCallResult(name="refund", args={"amount": 450}),
    ]
    changes = {(c.kind, c.name): c for c in diff_tool_calls(base, cand)}
    assert set(changes) == {("changed", "book"), ("disappeared", "check"), ("appeared", "refund")}
    assert changes[("changed", "book")].changed == {
        "date": ("2026-12-03", "2026-12-04"),
        "outcome": ("ok", "error"),
    }
    assert diff_tool_calls(base, base) == []


def test_a_question_newly_failing_is_a_regression_by_default():
    base = _stored(_result("a"), _result("b"))
    cand = _stored(_result("a", passed=False, composite=4.0), _result("b"))
    compared = compare_runs(base, cand)
    assert compared.exit_code == 2
    assert compared.regressions == ["1 question(s) newly fail the gate's pass rule: a"]
    text = render_comparison_console(compared)
    assert "newly failing (1)" in text and "REGRESSED (EXIT 2)" in text
    # --fail-on significant alone (noisy repeated runs): the statistics decide, and the verdict
    # says why the newly failing question does not count.
    noisy = compare_runs(base, cand, fail_on=["significant"])
    assert noisy.exit_code == 0
    text = render_comparison_console(noisy)
    assert "newly failing (1)" in text and "no regression" in text
    assert (
        "1 question(s) newly failing (a) are not counted under --fail-on significant: the "
        "composite interval does not lie wholly below zero" in text
    )


def test_fail_on_any_counts_a_grader_newly_below_its_bar_on_a_question_failing_in_both():
    def result(passed: bool) -> QuestionResult:
        graders = [
            # fails in both runs: the question's status does not change
            GraderVerdict(id="g", score=0.0, max=1.0, binary=True),
            # not must-pass, bar >= 2 on 0-5: met in the baseline, missed in the candidate
            GraderVerdict(id="h", score=2.0 if passed else 1.0, spec=GraderSpec(threshold=2.0)),
        ]
        return QuestionResult(target="t", id="a", composite=4.0, graders=graders)

    base, cand = _stored(result(True)), _stored(result(False))
    assert compare_runs(base, cand).exit_code == 0
    compared = compare_runs(base, cand, fail_on=["any"])
    assert compared.exit_code == 2
    assert compared.regressions == ["1 grader verdict(s) newly below their bar: a (h)"]


def test_run_with_a_baseline_joins_the_gate_and_every_report(tmp_path, capsys):
    # No must-pass grader and no pass-rate bar: the run's own gate passes whatever it does.
    graders = [
        {"id": "contains", "match_on": ["expected", "keyword"]},
        {"id": "tool_usage_grader", "threshold": 5, "must_pass": False},
    ]
    gate = {"max_errored": 0, "min_pass_rate": 0}
    config = write_project(tmp_path, target={"graders": graders, "gate": gate})
    base = _run(config)
    _stop_looking_up(config)
    out = tmp_path / "out"
    capsys.readouterr()
    argv = ["run", "--config", str(config), "--quiet", "--baseline", base]
    reports = ["--json", str(out / "r.json"), "--junit", str(out / "r.xml")]
    reports += ["--markdown", str(out / "r.md")]
    code = main([*argv, *reports])
    console = capsys.readouterr().out
    assert "against the baseline:" in console
    assert "1 question(s) newly fail the gate's pass rule: paris" in console
    assert code == 2
    report = json.loads((out / "r.json").read_text())
    assert report["gate"]["exit_code"] == 2
    assert report["gate"]["targets"]["t"]["passed"] is True  # the run alone passed
    assert report["comparison"]["format"] == "tracegrade.comparison"
    assert report["comparison"]["reasons"] == [
        "1 question(s) newly fail the gate's pass rule: paris"
    ]
    assert "## tracegrade compare: regressed (exit 2)" in (out / "r.md").read_text()
    root = ET.parse(out / "r.xml").getroot()
    (suite,) = [s for s in root.iter("testsuite") if s.get("name") == "baseline comparison"]
    assert suite.get("failures") == "1"
    # Under --fail-on significant (one question of two: no significant drop) it is none.
    assert main([*argv, "--fail-on", "significant"]) == 0


def test_a_bad_baseline_is_exit_4_before_anything_runs(tmp_path, capsys):
    config = write_project(tmp_path)
    bogus = tmp_path / "nope.json"
    bogus.write_text('{"format": "something else"}')
    assert main(["run", "--config", str(config), "--baseline", str(bogus)]) == 4
    assert not (tmp_path / "runs").exists()
    assert "not a tracegrade JSON results report" in capsys.readouterr().err


def test_runs_lists_newest_first_and_show_prints_without_regrading(tmp_path, capsys):
    config = write_project(tmp_path, target={"graders": MUST_PASS})
    first = _run(config)
    second = _run(config)
    old = tmp_path / "runs" / V0_ID  # a run of the first release, among today's
    shutil.copytree(FIXTURE, old)
    capsys.readouterr()
    assert main(["runs", "--config", str(config)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:5] == ["run", "started", "targets", "questions", "gate"]
    ids = [line.split()[0] for line in lines[1:]]
    assert ids == [second, first, V0_ID]
    assert "failed (2)" in lines[1] and "3.33" not in lines[1]
    assert main(["runs", "--config", str(config), "--json", "--limit", "1"]) == 0
    (record,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert record["run_id"] == second and record["exit_code"] == 2 and record["questions"] == 2

    store = old / "results.sqlite"
    before = store.read_bytes()
    code = main(["show", str(old), "--json", str(tmp_path / "s.json")])
    out = capsys.readouterr().out
    assert code == 2
    assert "rome: composite 3.33" in out and "gate: FAILED (exit 2)" in out
    assert store.read_bytes() == before
    shown = json.loads((tmp_path / "s.json").read_text())
    assert [q["id"] for q in shown["questions"]] == ["paris", "rome", "crash"]
    # By id under the config's runs_dir, and an unknown grading is exit 4.
    assert main(["show", "--config", str(config), first]) == 2
    assert main(["show", "--config", str(config), first, "--grading", "9"]) == 4
    assert "has no grading 9" in capsys.readouterr().err
