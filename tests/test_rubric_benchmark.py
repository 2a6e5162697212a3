"""Rubric threshold tuning (`tracegrade rubrics benchmark`): a run whose rubric judge answered
from the loopback server with outcome probabilities (logprobs), people's pass/fail labels on
a tuning and a held-out split, and the figures worked out by hand below."""

from __future__ import annotations

import json
import math

import pytest
import yaml

from tests import openai_server as loopback
from tests.openai_server import Answer
from tests.runs_support import write_project
from tracegrade.cli import main
from tracegrade.curation.rubric_benchmark import grid
from tracegrade.graders.rubrics.model import Thresholds

openai_server = loopback.openai_server  # the fixture

RUBRIC = {
    "id": "tone",
    "version": "1.0.0",
    "checks": [
        {
            "id": "polite",
            "kind": "custom",
            "criterion": "Is the reply polite?",
            "outcomes": {"acceptable": "Polite.", "unacceptable": "Rude."},
        }
    ],
}
# question -> (p(A acceptable), p(B unacceptable), p(C insufficient)), split, person's verdict
CASES = {
    "t1": ((0.70, 0.25, 0.05), "validation", True),
    "t2": ((0.65, 0.30, 0.05), "validation", True),
    "t3": ((0.40, 0.55, 0.05), "validation", False),
    "t4": ((0.90, 0.05, 0.05), "validation", True),
    "h1": ((0.72, 0.23, 0.05), "test", True),
    "h2": ((0.35, 0.45, 0.20), "test", False),
    "h3": ((0.95, 0.03, 0.02), "test", True),
    "h4": ((0.60, 0.38, 0.02), "test", False),
}


def _answer(dist):
    letters = dict(zip("ABC", dist, strict=True))
    letter = max(letters, key=letters.get)
    top = [(f" {x}", math.log(p)) for x, p in sorted(letters.items(), key=lambda kv: -kv[1])]
    tokens = [("Q1", 0.0, []), (":", 0.0, []), (f" {letter}", math.log(letters[letter]), top)]
    return Answer(content=f"Q1: {letter}\n", logprobs=tokens)


def _responder(body):
    prompt = "\n".join(str(m.get("content")) for m in body["messages"])
    for qid, (dist, _, _) in CASES.items():
        if f"case {qid}." in prompt:
            return _answer(dist)
    raise AssertionError("unknown question in the judge prompt")


@pytest.fixture
def benchmarked_run(tmp_path, openai_server):
    openai_server.responder = _responder
    rows = [
        {
            "id": qid,
            "split": split,
            "rubric_ref": "rubric/tone@1.0.0",
            # the agent echoes its system message, so each answer names its case
            "input": [
                {"role": "system", "content": f"case {qid}."},
                {"role": "user", "content": "echo system"},
            ],
        }
        for qid, (_, split, _) in CASES.items()
    ]
    (tmp_path / "rubrics").mkdir()
    (tmp_path / "rubrics" / "tone.yaml").write_text(yaml.safe_dump(RUBRIC, sort_keys=False))
    config = write_project(
        tmp_path,
        questions=[],
        extra_questions=rows,
        target={"graders": ["rubric_judge"], "gate": {"allow_review": True}},
        config={
            "rubrics": "rubrics",
            "judge": {
                "provider": "openai-compatible",
                "base_url": openai_server.base_url,
                "model": "loopback-judge",
                "max_attempts": 1,
            },
        },
    )
    main(["run", "--config", str(config), "--quiet"])
    (run_dir,) = (d for d in (tmp_path / "runs").iterdir() if (d / "identity.json").is_file())
    gold = tmp_path / "gold.yaml"
    labels = [
        {"question": q, "dimension": "polite", "pass": verdict}
        for q, (_, _, verdict) in CASES.items()
    ]
    gold.write_text(yaml.safe_dump({"labels": labels}))
    return config, run_dir, gold


def test_tuning_picks_the_best_pair_and_confirms_on_held_out(tmp_path, benchmarked_run, capsys):
    config, run_dir, gold = benchmarked_run
    out = tmp_path / "bench.json"
    argv = ["rubrics", "benchmark", "tone", "--gold", str(gold), "--run", str(run_dir)]
    assert main([*argv, "--config", str(config), "--json", str(out)]) == 0
    console = capsys.readouterr().out
    data = json.loads(out.read_text())
    # Current (pass 0.75, fail 0.5) on the tuning split: t1, t2 Review (p(A) .70, .65 < .75), t3 Fail
    # (p(B) .55 >= .5), t4 Pass -> agreement 2/4, Review 2/4, no wrong decision.
    assert data["current"] == {"pass": 0.75, "fail": 0.5}
    assert data["tune"]["defaults"]["agreement"] == pytest.approx(0.5)
    assert data["tune"]["defaults"]["review_rate"] == pytest.approx(0.5)
    # Every pair with pass <= .65, .30 < fail <= .55 (and pass + fail > 1) decides all four
    # as the person did; the nearest to the current pair is (0.65, 0.5).
    assert data["tuned"] == {"pass": 0.65, "fail": 0.5}
    assert data["tune"]["tuned"]["agreement"] == pytest.approx(1.0)
    # Held out, current: only h3 decided (Pass) -> 1/4; tuned: h1 and h3 Pass (right), h2
    # (p(B) .45 < .5, p(A) .35) and h4 (p(B) .38, p(A) .60 < .65) Review -> 2/4, none wrong.
    assert data["confirm"]["defaults"]["agreement"] == pytest.approx(0.25)
    assert data["confirm"]["defaults"]["review_rate"] == pytest.approx(0.75)
    assert data["confirm"]["tuned"]["agreement"] == pytest.approx(0.5)
    assert data["confirm"]["tuned"]["review_rate"] == pytest.approx(0.5)
    assert data["confirm"]["tuned"]["decided_error_rate"] == pytest.approx(0.0)
    assert "held-out split 'test' (not tuned on)" in console
    assert not list((config.parent / "rubrics").glob("tone-*"))  # nothing written unasked


def test_tuning_never_reads_the_held_out_split(benchmarked_run, capsys):
    # Flip every held-out label: the tuned pair must not move.
    config, run_dir, gold = benchmarked_run
    data = yaml.safe_load(gold.read_text())
    for label in data["labels"]:
        if label["question"].startswith("h"):
            label["pass"] = not label["pass"]
    gold.write_text(yaml.safe_dump(data))
    out = gold.parent / "flipped.json"
    argv = ["rubrics", "benchmark", "rubric/tone@1.0.0", "--gold", str(gold)]
    assert main([*argv, "--run", run_dir.name, "--config", str(config), "--json", str(out)]) == 0
    assert json.loads(out.read_text())["tuned"] == {"pass": 0.65, "fail": 0.5}


def test_write_makes_a_new_rubric_version(benchmarked_run, capsys):
    config, run_dir, gold = benchmarked_run
    argv = ["rubrics", "benchmark", "tone", "--gold", str(gold), "--run", str(run_dir)]
    assert main([*argv, "--config", str(config), "--write"]) == 0
    written = config.parent / "rubrics" / "tone-1.1.0.yaml"
    data = yaml.safe_load(written.read_text())
    assert (data["version"], data["thresholds"]) == ("1.1.0", {"pass": 0.65, "fail": 0.5})
    assert yaml.safe_load((config.parent / "rubrics" / "tone.yaml").read_text()) == RUBRIC
    assert main(["validate", str(written)]) == 0


def test_a_split_without_labelled_checks_is_invalid_input(benchmarked_run, capsys):
    config, run_dir, gold = benchmarked_run
    argv = ["rubrics", "benchmark", "tone", "--gold", str(gold), "--run", str(run_dir)]
    assert main([*argv, "--config", str(config), "--confirm-split", "train"]) == 4
    err = capsys.readouterr().err
    assert "split 'train'" in err and "test, validation" in err
    assert main([*argv, "--config", str(config).replace("tracegrade", "nope")]) == 4
    assert (
        main(
            [
                "rubrics",
                "benchmark",
                "tonne",
                "--gold",
                str(gold),
                "--run",
                str(run_dir),
                "--config",
                str(config),
            ]
        )
        == 4
    )


def test_the_grid_only_holds_pairs_that_cannot_both_fire():
    pairs = grid()
    assert pairs and all(t.pass_ + t.fail > 1 for t in pairs)
    assert Thresholds.model_validate({"pass": 0.75, "fail": 0.5}) in pairs
