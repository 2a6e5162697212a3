"""A question's `state:` seeds graph state keys beside the messages and `start_at:` starts the
run after a node (its state written as that node's output), each checked against the built
graph at validate time: an unknown key or node is invalid input at its line."""

from __future__ import annotations

from tests.test_world_tools import project, run
from tracegrade.cli import main
from tracegrade.rundir.store import ResultStore


def answers(outcome) -> dict[str, str]:
    with ResultStore.in_run_dir(outcome.run_dir) as store:
        return {r.id: r.answer.response for r in store.load_runs()}


def test_a_seeded_key_reaches_the_graph_and_start_at_skips_the_node(tmp_path):
    questions = [
        {"id": "plain", "input": "Tier?"},
        {"id": "seeded", "input": "Tier?", "state": {"tier": "gold"}},
        {"id": "after_greet", "input": "Tier?", "state": {"tier": "gold"}, "start_at": "greet"},
    ]
    for q in questions:
        q["expected"] = {"keyword": "tier="}
    graders = [{"id": "contains", "match_on": ["expected", "keyword"], "must_pass": True}]
    outcome, _, _ = run(project(tmp_path, questions, graders=graders))
    assert outcome.exit_code == 0
    assert answers(outcome) == {
        "plain": "tier=None trail=greet",
        "seeded": "tier=gold trail=greet",  # a key no message carries
        "after_greet": "tier=gold trail=",  # greet counted as done: the run began after it
    }


def test_an_unknown_state_key_or_node_is_invalid_input_at_its_line(tmp_path, capsys):
    questions = [
        {"id": "a", "input": "Tier?", "state": {"teir": "gold"}},
        {"id": "b", "input": "Tier?", "start_at": "gret"},
    ]
    path = project(tmp_path, questions)
    assert main(["run", "--config", str(path), "--quiet"]) == 4
    err = capsys.readouterr().err
    assert (
        "questions.yaml:5: question 'a': at /questions/0/state/teir" in err
        and "no key 'teir'" in err
        and "did you mean 'tier'" in err
    )
    assert "questions.yaml:8: question 'b': at /questions/1/start_at" in err
    assert "no node 'gret'" in err and "did you mean 'greet'" in err
    assert main(["validate", str(path)]) == 4
    assert "no key 'teir'" in capsys.readouterr().err
