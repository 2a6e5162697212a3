"""Judge validation on gold labels (`tracegrade judges validate`): the statistics against tables
worked out by hand, gold-file errors with their line, and the command end to end on a run whose
judges answered from the loopback OpenAI-compatible server."""

from __future__ import annotations

import json

import pytest

from tests import openai_server as loopback
from tests.openai_server import score
from tests.runs_support import write_project
from tracegrade.cli import main
from tracegrade.curation.agreement import agreement, cohen_kappa

openai_server = loopback.openai_server  # the fixture


# -- statistics against hand-computed tables ------------------------------------------------
def test_unweighted_kappa_of_a_textbook_table():
    # 50 items: agree 20 (yes/yes) + 15 (no/no) = 0.70 observed; row sums 25/25, column sums
    # 30/20 -> chance 0.5*0.6 + 0.5*0.4 = 0.50; kappa = (0.70 - 0.50) / (1 - 0.50) = 0.40.
    assert cohen_kappa([[20, 5], [10, 15]]) == pytest.approx(0.40)


def test_quadratic_kappa_of_an_ordinal_table():
    # rows (person) [3,3,3], columns (judge) [2,3,4], weights (i-j)^2/4.
    # observed disagreement: (1 * 1/4 + 1 * 1/4) / 9 = 1/18
    # expected: (9/4 + 12 + 6/4 + 12/4 + 6 + 9/4) / 81 = 27/81 = 1/3
    # kappa = 1 - (1/18) / (1/3) = 5/6
    assert cohen_kappa([[2, 1, 0], [0, 2, 1], [0, 0, 3]], weights="quadratic") == pytest.approx(
        5 / 6
    )


def test_kappa_is_undefined_without_variation_or_pairs():
    assert cohen_kappa([[4, 0], [0, 0]]) is None  # both raters said "yes" every time
    assert cohen_kappa([[0, 0], [0, 0]]) is None


def test_agreement_gives_exact_share_mae_and_matrix():
    result = agreement([(5, 5), (3, 2), (4, 4)], categories=[2, 3, 4, 5], ordinal=True)
    assert result.exact == pytest.approx(2 / 3)
    assert result.mae == pytest.approx(1 / 3)
    assert result.matrix == [[0, 0, 0, 0], [1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
    # rows (gold) 3,4,5; columns (judge) 2,4,5; weights (i-j)^2/9 over 4 steps (cancel out):
    # observed 1/3 * 1/9 = 1/27; expected (1+1+4+4+0+1+9+1+0)/9/9 = 21/81 -> kappa 1 - 3/21 = 6/7
    assert result.kappa == pytest.approx(6 / 7)


# -- end to end ------------------------------------------------------------------------------
RELEVANCE = {"weather in Paris?": 5, "weather in Rome?": 2, "remember it": 4}
GROUNDED = {"weather in Paris?": 1, "weather in Rome?": 0, "remember it": 1}


def _responder(body):
    prompt = "\n".join(str(m.get("content")) for m in body["messages"])
    table = GROUNDED if "groundedness" in prompt else RELEVANCE
    for question, value in table.items():
        if question in prompt:
            return score(value, "scripted by question")
    return score(3, "unknown question")


@pytest.fixture
def judged_run(tmp_path, openai_server):
    openai_server.responder = _responder
    path = write_project(
        tmp_path,
        questions=["paris", "rome", "remember"],
        target={"graders": ["relevance_grader", "groundedness_grader"]},
        config={
            "judge": {
                "provider": "openai-compatible",
                "base_url": openai_server.base_url,
                "model": "loopback-judge",
                "max_attempts": 1,
            }
        },
    )
    results = tmp_path / "results.json"
    assert main(["run", "--config", str(path), "--quiet", "--json", str(results)]) in (0, 2)
    (run_dir,) = (d for d in (tmp_path / "runs").iterdir() if (d / "identity.json").is_file())
    return path, run_dir, results


def _gold(tmp_path, labels) -> str:
    path = tmp_path / "gold.yaml"
    path.write_text(json.dumps({"labels": labels}))
    return str(path)


GOLD = [
    {"question": "paris", "dimension": "relevance", "score": 5},
    {"question": "rome", "dimension": "relevance", "score": 3},
    {"question": "remember", "dimension": "relevance", "score": 4},
    {"question": "paris", "dimension": "groundedness", "pass": True},
    {"question": "rome", "dimension": "groundedness", "pass": False},
    {"question": "remember", "dimension": "groundedness", "pass": True},
]


@pytest.mark.parametrize("source", ["run_dir", "results_file"])
def test_validate_reports_agreement_per_dimension(tmp_path, judged_run, capsys, source):
    _, run_dir, results = judged_run
    target = str(run_dir) if source == "run_dir" else str(results)
    out_json = tmp_path / "validation.json"
    capsys.readouterr()
    code = main(
        ["judges", "validate", target, "--gold", _gold(tmp_path, GOLD), "--json", str(out_json)]
    )
    assert code == 0  # no floor configured: report only
    out = capsys.readouterr().out
    assert "relevance" in out and "groundedness" in out and "most disagreement: t:rome" in out
    data = {d["dimension"]: d for d in json.loads(out_json.read_text())["dimensions"]}
    relevance = data["relevance"]
    assert (relevance["n"], relevance["kind"], relevance["weights"]) == (3, "ordinal", "quadratic")
    assert relevance["exact"] == pytest.approx(2 / 3)
    assert relevance["mae"] == pytest.approx(1 / 3)
    assert relevance["kappa"] == pytest.approx(6 / 7)  # worked out in the test above
    assert relevance["disagreements"] == [
        {"target": "t", "question": "rome", "gold": 3, "judge": 2}
    ]
    grounded = data["groundedness"]
    assert (grounded["exact"], grounded["kappa"], grounded["mae"]) == (1.0, 1.0, None)
    assert grounded["confusion_matrix"] == [[1, 0], [0, 2]]


def test_a_floor_gates_the_judge(tmp_path, judged_run, capsys):
    path, run_dir, _ = judged_run
    gold = _gold(tmp_path, GOLD)
    assert main(["judges", "validate", str(run_dir), "--gold", gold, "--min-kappa", "0.8"]) == 0
    assert main(["judges", "validate", str(run_dir), "--gold", gold, "--min-kappa", "0.9"]) == 2
    out = capsys.readouterr().out
    assert "FAIL: kappa 0.857 < floor 0.9" in out and "judge validation: FAILED" in out
    # the floor from the config file
    path.write_text(path.read_text() + "judge_validation: {min_kappa: 0.95}\n")
    run_id = run_dir.name
    assert main(["judges", "validate", run_id, "--gold", gold, "--config", str(path)]) == 2


def test_gold_file_problems_are_invalid_input_with_their_line(tmp_path, judged_run, capsys):
    _, run_dir, _ = judged_run
    typo = _gold(tmp_path, [{"question": "paris", "dimension": "relevence", "score": 5}])
    assert main(["judges", "validate", str(run_dir), "--gold", typo]) == 4
    err = capsys.readouterr().err
    assert "relevence" in err and "did you mean 'relevance'" in err
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "labels:\n"
        "  - {question: paris, dimension: relevance, score: 5}\n"
        "  - {question: rome, dimension: relevance, score: 3, pass: true}\n"
    )
    assert main(["judges", "validate", str(run_dir), "--gold", str(bad)]) == 4
    err = capsys.readouterr().err
    assert f"{bad}:3" in err and "exactly one of score" in err
    assert main(["judges", "validate", str(tmp_path / "nope"), "--gold", str(bad)]) == 4
