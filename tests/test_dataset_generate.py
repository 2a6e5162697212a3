"""Synthetic question drafts against the loopback judge server, end to end with the real CLI:
the prompt carries the dimensions and seed examples, every draft is schema-validated (invalid
ones rejected with the reason, never stored), valid ones land disabled and marked as drafts,
and count only after `tracegrade dataset review` accepts them."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests import openai_server as loopback
from tests.openai_server import reply, server_error
from tests.runs_support import write_project
from tracegrade.cli import main
from tracegrade.inputs.datastore import DatasetStore

openai_server = loopback.openai_server  # the fixture, by the name tests request

DRAFTS = {
    "questions": [
        {"id": "paris_again", "input": "weather in Paris?", "goal": "Gives the weather."},
        {"id": "rome_again", "input": "weather in Rome?"},
        {"id": "no_input", "goal": "missing its input"},
        {"id": "typo", "input": "hello", "expecteed_facts": {"a": 1}},
        {"id": "blank", "input": "   "},
        "not an object",
    ]
}


def project(tmp_path: Path, server) -> Path:
    judge = {
        "provider": "openai-compatible",
        "base_url": server.base_url,
        "model": "loopback-judge",
        "max_attempts": 1,
    }
    return write_project(tmp_path, config={"judge": judge})


def test_generate_validates_each_draft_and_review_makes_them_count(openai_server, tmp_path, capsys):
    openai_server.default = reply(json.dumps(DRAFTS))
    config = project(tmp_path, openai_server)
    examples = tmp_path / "data" / "questions.yaml"
    code = main(
        [
            "dataset",
            "generate",
            "--to",
            "synthetic",
            "--count",
            "6",
            "--dimension",
            "city: Paris, Rome, Oslo",
            "--examples",
            str(examples),
            "--config",
            str(config),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    (request,) = openai_server.requests
    assert "Draft 6 new" in request.prompt and "city: Paris, Rome, Oslo" in request.prompt
    assert "weather in Paris?" in request.prompt  # a seed example, shown as the shape
    assert "2 draft(s) stored" in out and "4 rejected" in out
    assert "rejected no_input: a question needs id and input: 'input' is missing" in out
    assert "rejected typo: unknown key 'expecteed_facts'" in out
    assert "rejected blank: input must not be blank" in out
    assert "rejected #5: a draft must be a JSON object" in out

    with DatasetStore(tmp_path / "datasets.sqlite") as store:
        stored = {q.id: q for q in store.questions("synthetic")}
    assert set(stored) == {"paris_again", "rome_again"}  # rejected drafts never stored
    assert all(q.row["disabled"] is True and q.needs_review == ["draft"] for q in stored.values())
    assert all(q.row["metadata"]["draft"] is True for q in stored.values())

    # Drafts do not count: a target reading the dataset has nothing to run (exit 5).
    cfg = yaml.safe_load(config.read_text())
    cfg["targets"]["t"]["dataset"] = "store:synthetic"
    cfg["targets"]["t"]["graders"] = [{"id": "contains", "match_on": ["input"]}]
    config.write_text(yaml.safe_dump(cfg))
    assert main(["run", "--config", str(config), "--quiet"]) == 5

    # Review: accept one, drop the other; the accepted one runs.
    code = main(
        [
            "dataset",
            "review",
            "synthetic",
            "--accept",
            "paris_again",
            "--drop",
            "rome_again",
            "--config",
            str(config),
        ]
    )
    assert code == 0
    assert "accepted 1, dropped 1; 0 waiting" in capsys.readouterr().out
    assert main(["dataset", "export", "synthetic", "--config", str(config)]) == 0
    doc = yaml.safe_load(capsys.readouterr().out)
    (question,) = doc["questions"]
    assert question["id"] == "paris_again" and "disabled" not in question
    assert "draft" not in question.get("metadata", {})
    code = main(["run", "--config", str(config), "--quiet"])
    assert code in (0, 2)  # it ran: graded, whatever the verdict
    assert "over 1 question(s)" in capsys.readouterr().out
    # Reviewing an id that is not a draft is exit 4.
    assert (
        main(["dataset", "review", "synthetic", "--accept", "nope", "--config", str(config)]) == 4
    )


def test_an_answer_without_questions_or_an_outage_is_exit_3_and_stores_nothing(
    openai_server, tmp_path, capsys
):
    config = project(tmp_path, openai_server)
    openai_server.default = reply("I cannot help with that.")
    argv = ["dataset", "generate", "--to", "s", "--count", "2", "--config", str(config)]
    assert main(argv) == 3
    assert 'no JSON object with a "questions" list' in capsys.readouterr().err
    openai_server.default = server_error(503)
    assert main(argv) == 3
    with DatasetStore(tmp_path / "datasets.sqlite") as store:
        assert not store.has("s")
