"""The trajectory vocabulary: the Python checks and the JSON Schema word every rule alike, the
example corpus shows every mode and matcher, and invalid vocabulary stops both `validate` and
`run` with exit 4 naming file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.runs_support import write_project
from tracegrade.cli import main
from tracegrade.inputs.blocks.trajectory import (
    MATCHER_KEYWORDS,
    MODES,
    is_matcher,
    tool_names,
    trajectory_problems,
)
from tracegrade.inputs.sourcefile import load_document, validate_document

EXAMPLES = Path(__file__).resolve().parents[1] / "schema" / "examples"
VALID = sorted((EXAMPLES / "valid").glob("dataset-trajectory-*.yaml"))
INVALID = sorted((EXAMPLES / "invalid").glob("dataset-trajectory-*.yaml"))


def trajectories(path: Path) -> list[dict]:
    data = yaml.safe_load(path.read_text())
    return [q["trajectory"] for q in data["questions"] if "trajectory" in q]


def matcher_keywords(value) -> set[str]:
    """Every matcher keyword used anywhere in an argument value."""
    found: set[str] = set()
    if isinstance(value, dict):
        if is_matcher(value) or set(value) & set(MATCHER_KEYWORDS):
            found |= set(value) & set(MATCHER_KEYWORDS)
            if "eq" in value:
                return found
        for item in value.values():
            found |= matcher_keywords(item)
    elif isinstance(value, list):
        for item in value:
            found |= matcher_keywords(item)
    return found


def used_keywords(paths) -> set[str]:
    found: set[str] = set()
    for path in paths:
        for trajectory in trajectories(path):
            for call in trajectory.get("calls") or []:
                for value in (call.get("args") or {}).values():
                    found |= matcher_keywords(value)
    return found


def test_valid_corpus_shows_every_mode_and_matcher():
    modes = {t.get("match", "superset") for p in VALID for t in trajectories(p)}
    assert modes == set(MODES)
    assert used_keywords(VALID) == set(MATCHER_KEYWORDS)


def test_invalid_corpus_misuses_every_matcher_keyword():
    assert used_keywords(INVALID) >= set(MATCHER_KEYWORDS) - {"max"}  # max: with min above it


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_python_checks_accept_the_valid_corpus(path):
    for trajectory in trajectories(path):
        assert trajectory_problems(trajectory) == []


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_python_checks_and_schema_name_the_same_rule_at_the_same_key(path):
    rule = path.read_text().splitlines()[0].removeprefix("# rule: ")
    (trajectory,) = trajectories(path)
    ours = trajectory_problems(trajectory)
    assert any(rule in message for _, message in ours), ours
    schema = validate_document(load_document(path), "dataset")
    prefix = "/questions/0/trajectory"
    assert {prefix + p for p, m in ours if rule in m} & {
        p.pointer for p in schema if rule in p.message
    }


def test_tool_names_lists_every_name_with_its_path():
    trajectory = {
        "calls": [{"tool": "a"}, {"tool": "desk:b"}],
        "forbid": ["c"],
        "only": ["a", "d"],
        "count": {"e": {"max": 1}},
    }
    assert tool_names(trajectory) == [
        (("calls", 0, "tool"), "a"),
        (("calls", 1, "tool"), "desk:b"),
        (("forbid", 0), "c"),
        (("only", 0), "a"),
        (("only", 1), "d"),
        (("count", "e"), "e"),
    ]


BAD_REGEX = {
    "id": "bad",
    "input": "weather in Paris?",
    "trajectory": {"calls": [{"tool": "lookup", "args": {"city": {"regex": "(Paris"}}}]},
}


def test_validate_exits_4_naming_file_line_and_key(tmp_path, capsys):
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump({"questions": [BAD_REGEX]}, sort_keys=False))
    assert main(["validate", str(path)]) == 4
    out = capsys.readouterr()
    text = out.out + out.err
    line = next(n for n, row in enumerate(path.read_text().splitlines(), 1) if "regex:" in row)
    assert f"{path}:{line}:" in text
    assert "/questions/0/trajectory/calls/0/args/city/regex: regex does not compile" in text


def test_run_exits_4_naming_file_line_and_key(tmp_path, capsys):
    config = write_project(
        tmp_path,
        questions=["paris"],
        extra_questions=[BAD_REGEX],
        target={"graders": ["trajectory_grader"]},
    )
    assert main(["run", "--config", str(config), "--quiet"]) == 4
    err = capsys.readouterr().err
    dataset = tmp_path / "data" / "questions.yaml"
    assert f"{dataset}:" in err
    assert "/questions/1/trajectory/calls/0/args/city/regex" in err
    assert "regex does not compile" in err


def test_run_grades_a_trajectory_from_the_record(tmp_path, capsys):
    paris = {
        "id": "paris_trajectory",
        "input": "weather in Paris?",
        "trajectory": {
            "match": "strict",
            "calls": [{"tool": "lookup", "args": {"city": {"regex": "Par.*"}}, "outcome": "ok"}],
            "forbid": ["stall"],
        },
    }
    rome = {
        "id": "rome_trajectory",
        "input": "weather in Rome?",
        "trajectory": {"calls": [{"tool": "lookup", "args": {"city": "Rome"}}]},
    }
    config = write_project(
        tmp_path,
        questions=[],
        extra_questions=[paris, rome],
        target={"graders": [{"id": "trajectory_grader", "must_pass": True}]},
    )
    code = main(["run", "--config", str(config), "--quiet", "--json", str(tmp_path / "r.json")])
    assert code == 2  # rome never looked anything up: the must-pass grader fails the gate
    import json

    report = json.loads((tmp_path / "r.json").read_text())
    results = {
        q["id"]: next(g for g in q["graders"] if g["id"] == "trajectory_grader")
        for q in report["questions"]
    }
    assert results["paris_trajectory"]["score"] == 1.0
    assert results["rome_trajectory"]["score"] == 0.0
    assert (
        "calls[0] `lookup`: expected to run, never called" in results["rome_trajectory"]["reason"]
    )


def test_trajectory_tool_names_are_checked_against_the_graph(capsys, tmp_path):
    row = {
        "id": "names",
        "input": "weather in Rome?",
        "trajectory": {
            "calls": [{"tool": "lokup"}, {"tool": "helper:lookup"}],
            "forbid": ["stal"],
            "only": ["lookup", "helper:stall"],
            "count": {"lookups": {"max": 1}},
        },
    }
    config = write_project(tmp_path, questions=[], extra_questions=[row])
    assert main(["validate", str(config)]) == 4
    err = capsys.readouterr().err
    dataset = tmp_path / "data" / "questions.yaml"
    lines = dataset.read_text().splitlines()
    line_of_lokup = next(n for n, text in enumerate(lines, 1) if "lokup" in text)
    assert (
        f"{dataset}:{line_of_lokup}: question 'names': at /questions/0/trajectory/calls/0/tool: "
        "the target's graph has no tool 'lokup' (did you mean 'lookup'?)"
    ) in err
    assert "at /questions/0/trajectory/forbid/0: the target's graph has no tool 'stal'" in err
    assert (
        "at /questions/0/trajectory/count/lookups: the target's graph has no tool 'lookups'" in err
    )
    for fine in ("calls/1/tool", "only/0", "only/1"):
        assert f"trajectory/{fine}:" not in err
    assert main(["validate", "--no-build", str(config)]) == 0
