"""Promotion into the dataset file a target reads (issue 45, item 25): `tracegrade dataset
promote --into-file` and the app's Promote page append the question to the target's own
YAML (or JSONL) file, keeping every other line of it (comments, order) as it was, validate the
result before it replaces the file, and say where they wrote; a dataset that is not a file is
refused with the way to promote into the store."""

from __future__ import annotations

import difflib
import json
import textwrap

import pytest

from tests.runs_support import QUESTIONS, write_project
from tracegrade import InputError, load_config, load_dataset, start_run
from tracegrade.cli import main
from tracegrade.curation.promote_file import promote_into_file

COMMENTED = textwrap.dedent(
    """\
    # Weather questions: keep Paris first, it is the smoke test.
    questions:
      # the one that looks the city up
      - id: paris
        input: "weather in Paris?"
        expected: {keyword: sunny}      # flow style kept as written
        expected_tools:
          - {tool: lookup, should_run: true, args: {city: Paris}}

      - id: rome   # fails on purpose: it never looks anything up
        input: "weather in Rome?"
        expected_tools: [{tool: lookup, should_run: true}]
    # more to come
    """
)


def _run(tmp_path, text=COMMENTED, name="questions.yaml"):
    config = write_project(tmp_path, questions=["paris", "rome"])
    data = tmp_path / "data" / name
    data.write_text(text, encoding="utf-8")
    if name != "questions.yaml":
        config.write_text(config.read_text().replace("data/questions.yaml", f"data/{name}"))
    outcome = start_run(load_config(config))
    return config, data, outcome.run_dir


def _only_additions(before: str, after: str) -> list[str]:
    diff = list(difflib.ndiff(before.splitlines(), after.splitlines()))
    assert not [d for d in diff if d.startswith("- ")], "a line of the file changed"
    return [d[2:] for d in diff if d.startswith("+ ")]


def test_promote_appends_to_the_targets_own_yaml_keeping_comments_and_order(tmp_path):
    _config, data, run_dir = _run(tmp_path)
    path, row, review, line = promote_into_file(run_dir, question_id="rome", as_id="rome_again")
    assert path == data
    after = data.read_text(encoding="utf-8")
    added = _only_additions(COMMENTED, after)
    assert added[0] == "  - id: rome_again"
    assert after.splitlines()[line - 1] == "  - id: rome_again"
    assert after.rstrip().endswith("# more to come")  # the trailing comment stays last
    assert [q.id for q in load_dataset(data).questions] == ["paris", "rome", "rome_again"]
    promoted = load_dataset(data).questions[-1].row()
    assert promoted["metadata"]["promoted_from"].endswith("question rome")
    assert row["id"] == "rome_again" and review == []


def test_a_second_question_of_the_same_id_is_refused_and_nothing_written(tmp_path):
    _config, data, run_dir = _run(tmp_path)
    before = data.read_bytes()
    with pytest.raises(InputError) as refused:
        promote_into_file(run_dir, question_id="rome")
    assert "already has a question 'rome'" in refused.value.message
    assert data.read_bytes() == before
    assert not [p for p in data.parent.iterdir() if p.name.startswith(".promote-")]


def test_the_cli_promotes_into_a_jsonl_file_and_says_where(tmp_path, capsys):
    rows = [QUESTIONS["paris"], QUESTIONS["rome"]]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    config, data, run_dir = _run(tmp_path, text, name="questions.jsonl")
    capsys.readouterr()
    argv = ["dataset", "promote", run_dir.name, "--id", "rome", "--as", "r2", "--into-file"]
    assert main([*argv, "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert f"promoted rome into {data}:3 as 'r2'" in out
    assert _only_additions(text, data.read_text())[0].startswith('{"id": "r2"')


def test_a_store_dataset_is_no_file_to_promote_into(tmp_path, capsys):
    config, _data, run_dir = _run(tmp_path)
    # the store's promotion says where it went, and that a target reads it as store:NAME
    argv = ["dataset", "promote", run_dir.name, "--id", "rome", "--to", "weather"]
    assert main([*argv, "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "into dataset 'weather' of the store" in out and "dataset: store:weather" in out
    config.write_text(config.read_text().replace("data/questions.yaml", "store:weather"))
    outcome = start_run(load_config(config))
    argv = ["dataset", "promote", outcome.run_dir.name, "--id", "rome", "--as", "x"]
    assert main([*argv, "--into-file", "--config", str(config)]) == 4
    err = capsys.readouterr().err
    assert "reads the dataset 'store:weather', not a file" in err and "--to NAME" in err
