"""Promotion into the writable dataset store, end to end with the real CLI: promote a run's
question (its actual tool calls as a draft marked for review) -> export -> validate -> run, with
`dataset: store:NAME` and with the exported file; `dataset list/show`; dataset sources as
plugins of the entry-point group `tracegrade.datasets`; every source validating the whole
document before the run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import yaml

from tests.runs_support import write_project
from tracegrade import DatasetError
from tracegrade.cli import main
from tracegrade.inputs.datastore import DatasetStore
from tracegrade.inputs.sources import GROUP, dataset_sources, resolve_dataset


def first_run(tmp_path: Path, capsys) -> tuple[Path, str]:
    config = write_project(tmp_path, questions=["paris", "rome"])
    main(["run", "--config", str(config), "--quiet"])
    out = capsys.readouterr().out
    return config, out.split("run ", 1)[1].split(" ", 1)[0]


def test_promote_export_validate_run_round_trip(tmp_path, capsys):
    config, run_id = first_run(tmp_path, capsys)
    rows = yaml.safe_load((tmp_path / "data" / "questions.yaml").read_text())
    assert rows["questions"][0]["expected_tools"]
    code = main(
        [
            "dataset",
            "promote",
            run_id,
            "--id",
            "paris",
            "--to",
            "regressions",
            "--config",
            str(config),
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "promoted paris into dataset 'regressions'" in out
    # paris had authored expected_tools: they are kept, nothing drafted.
    assert "draft" not in out

    store_path = tmp_path / "datasets.sqlite"
    with DatasetStore(store_path) as store:
        assert [q.id for q in store.questions("regressions")] == ["paris"]

    # Export, validate, and run from both the exported file and the store.
    assert main(["dataset", "export", "regressions", "--config", str(config)]) == 0
    exported = capsys.readouterr().out
    path = tmp_path / "data" / "regressions.yaml"
    path.write_text(exported)
    assert main(["validate", str(path)]) == 0
    doc = yaml.safe_load(exported)
    assert doc["questions"][0]["id"] == "paris"
    assert doc["questions"][0]["metadata"]["promoted_from"].startswith(f"run {run_id}")

    cfg = yaml.safe_load(config.read_text())
    cfg["targets"]["from_store"] = {**cfg["targets"]["t"], "dataset": "store:regressions"}
    cfg["targets"]["from_file"] = {**cfg["targets"]["t"], "dataset": "file:data/regressions.yaml"}
    del cfg["targets"]["t"]
    config.write_text(yaml.safe_dump(cfg, sort_keys=False))
    capsys.readouterr()
    assert main(["run", "--config", str(config), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "target from_store (agent)" in out and "target from_file (agent)" in out
    assert "regressions.yaml" in out


def test_the_agents_actual_calls_become_draft_expected_tools_marked_for_review(tmp_path, capsys):
    config = write_project(
        tmp_path,
        questions=[],
        extra_questions=[
            {"id": "plain", "input": "weather in Paris?", "expected": {"keyword": "sunny"}}
        ],
        target={"graders": [{"id": "contains", "match_on": ["expected", "keyword"]}]},
    )
    main(["run", "--config", str(config), "--quiet"])
    run_id = capsys.readouterr().out.split("run ", 1)[1].split(" ", 1)[0]
    assert main(["dataset", "promote", run_id, "--id", "plain", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "draft expected_tools from the agent's actual calls (lookup)" in out
    assert main(["dataset", "list", "--config", str(config)]) == 0
    listed = capsys.readouterr().out
    assert "promoted\t1 question(s)" in listed or "questions\t1 question(s)" in listed
    name = listed.split("\t", 1)[0]
    assert main(["dataset", "show", name, "--config", str(config)]) == 0
    assert "[review: expected_tools]" in capsys.readouterr().out
    assert main(["dataset", "export", name, "--config", str(config)]) == 0
    doc = yaml.safe_load(capsys.readouterr().out)
    (question,) = doc["questions"]
    # The secret argument was redacted on export: it is left out of the draft, never copied.
    assert question["expected_tools"] == [
        {"tool": "lookup", "should_run": True, "args": {"city": "Paris"}}
    ]
    assert question["metadata"]["needs_review"] == ["expected_tools"]
    # Promoting the same id again is refused (exit 4) with the way out.
    assert main(["dataset", "promote", run_id, "--id", "plain", "--config", str(config)]) == 4
    assert "--as NEW_ID" in capsys.readouterr().err
    assert (
        main(
            [
                "dataset",
                "promote",
                run_id,
                "--id",
                "plain",
                "--as",
                "plain2",
                "--config",
                str(config),
            ]
        )
        == 0
    )


def test_unknown_question_or_dataset_is_exit_4(tmp_path, capsys):
    config, run_id = first_run(tmp_path, capsys)
    assert main(["dataset", "promote", run_id, "--id", "nope", "--config", str(config)]) == 4
    assert "no question 'nope'" in capsys.readouterr().err
    cfg = yaml.safe_load(config.read_text())
    cfg["targets"]["t"]["dataset"] = "store:missing"
    config.write_text(yaml.safe_dump(cfg))
    assert main(["run", "--config", str(config), "--quiet"]) == 4
    err = capsys.readouterr().err
    assert "no dataset store" in err and "tracegrade.yaml" in err
    cfg["targets"]["t"]["dataset"] = "stor:missing"
    config.write_text(yaml.safe_dump(cfg))
    assert main(["run", "--config", str(config), "--quiet"]) == 4
    assert "did you mean store:?" in capsys.readouterr().err


def test_sources_are_entry_point_plugins_and_validate_the_whole_document(tmp_path):
    assert {"file", "store"} <= set(dataset_sources())
    from importlib import metadata

    names = {e.name for e in metadata.entry_points(group=GROUP)}
    assert {"file", "store"} <= names
    # A stored row the schema rejects (written behind the store's back) stops the run's read:
    # the whole document is validated, nothing silently dropped.
    store_path = tmp_path / "datasets.sqlite"
    with DatasetStore(store_path) as store:
        store.add("d", {"id": "ok", "input": "hello"})
        store.add("d", {"id": "ok2", "input": "hello again"})
    with sqlite3.connect(store_path) as db:
        db.execute('UPDATE questions SET row = \'{"id": "ok2", "inptu": "x"}\' WHERE id = \'ok2\'')
    with pytest.raises(DatasetError) as info:
        resolve_dataset("store:d", base_dir=tmp_path, store_path=store_path)
    assert "inptu" in str(info.value) or "inptu" in str(info.value.context.get("problems"))
    # The file source too: a bad file is an error, never an empty dataset.
    bad = tmp_path / "bad.yaml"
    bad.write_text("questions:\n  - id: q1\n    expecteed_facts: {}\n    input: hi\n")
    with pytest.raises(DatasetError):
        resolve_dataset("file:bad.yaml", base_dir=tmp_path, store_path=store_path)
    # And the store refuses an invalid row when it is written.
    with DatasetStore(store_path) as store, pytest.raises(DatasetError):
        store.add("d", {"id": "x", "input": ""})
