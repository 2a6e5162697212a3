"""The config file: schema corpus, errors naming file/line/key, path resolution, references."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from tests.runs_support import write_project
from tracegrade import ConfigError, load_config
from tracegrade.inputs.config import load_object, validate_config_file
from tracegrade.inputs.sourcefile import load_document, validate_document

CORPUS = Path(__file__).resolve().parents[1] / "schema" / "examples" / "config"
VALID = sorted((CORPUS / "valid").glob("*.yaml"))
INVALID = sorted((CORPUS / "invalid").glob("*.yaml"))


def _rule(path: Path) -> str:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# rule: "), f"{path.name} must start with `# rule: ...`"
    return first.removeprefix("# rule: ")


def test_corpus_is_not_empty():
    assert len(VALID) >= 3 and len(INVALID) >= 5


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_valid_examples_satisfy_the_schema(path):
    _rule(path)
    assert validate_document(load_document(path, error_cls=ConfigError), "config") == []


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_invalid_examples_fail_naming_their_rule(path):
    rule = _rule(path)
    problems = validate_config_file(path)
    assert problems, f"{path.name} validated"
    assert any(rule in p.message or rule in p.pointer for p in problems), [str(p) for p in problems]
    assert all(p.line is not None for p in problems)


def _write(tmp_path, data) -> Path:
    path = tmp_path / "tracegrade.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_error_names_file_line_and_key(tmp_path):
    path = write_project(tmp_path, target={"concurency": 3})
    with pytest.raises(ConfigError) as info:
        load_config(path)
    err = info.value
    assert err.file == str(path)
    assert err.key == "/targets/t/concurency"
    text = path.read_text().splitlines()
    assert "concurency" in text[err.line - 1]
    assert "did you mean 'concurrency'" in str(err)


def test_missing_files_are_reported_with_their_resolved_path(tmp_path):
    path = write_project(tmp_path, target={"dataset": "data/nope.yaml"})
    problems = validate_config_file(path)
    assert [p.pointer for p in problems] == ["/targets/t/dataset"]
    assert str(tmp_path / "data" / "nope.yaml") in problems[0].message


def test_relative_paths_resolve_against_the_config_directory(tmp_path, monkeypatch):
    write_project(tmp_path / "project", grading_module=True)
    monkeypatch.chdir(tmp_path)
    config = load_config(Path("project") / "tracegrade.yaml")
    target = config.targets["t"]
    assert target.dataset == (tmp_path / "project" / "data" / "questions.yaml").resolve()
    assert config.runs_dir == (tmp_path / "project" / "runs").resolve()
    # graders.py beside the dataset is discovered
    assert target.grading_module == target.dataset.parent / "graders.py"


def test_defaults_apply_and_targets_override(tmp_path):
    path = write_project(
        tmp_path,
        config={"defaults": {"concurrency": 3, "timeout_s": 9}},
        target={"concurrency": None, "timeout_s": 2},
    )
    config = load_config(path)
    target = config.targets["t"]
    assert target.concurrency == 3
    assert target.timeout_s == 2  # the target's own
    assert target.gate.max_errored == 0 and target.gate.zero_critical_failures is True
    assert [g.id for g in target.graders] == ["tool_usage_grader", "contains"]
    assert target.graders[1].options == {"match_on": ["expected", "keyword"]}


def test_unknown_target_is_input_error(tmp_path):
    config = load_config(write_project(tmp_path))
    with pytest.raises(ConfigError, match="unknown target 'x'"):
        config.select_targets(["x"])


def test_file_reference_is_loaded_by_path_never_as_the_agents_package(tmp_path):
    folder = tmp_path / "agents"
    folder.mkdir()
    (folder / "mine.py").write_text("VALUE = 42\n")
    before = sys.modules.get("agents")
    value = load_object("agents/mine.py:VALUE", base_dir=tmp_path)
    assert value == 42
    assert sys.modules.get("agents") is before  # the name `agents` is not claimed
    assert "agents.mine" not in sys.modules


def test_module_reference_and_attribute_errors(tmp_path):
    assert load_object("json:dumps", base_dir=tmp_path) is __import__("json").dumps
    with pytest.raises(ConfigError, match="has no attribute 'nope'"):
        load_object("json:nope", base_dir=tmp_path, file="c.yaml", line=3, key="/targets/t/agent")
    (tmp_path / "broken.py").write_text("raise ValueError('bad import')\n")
    with pytest.raises(ConfigError, match="bad import") as info:
        load_object("broken.py:x", base_dir=tmp_path, file="c.yaml", line=3, key="/targets/t/agent")
    assert (info.value.file, info.value.line, info.value.key) == ("c.yaml", 3, "/targets/t/agent")


def test_a_target_without_graders_is_left_to_the_goal_judge(tmp_path):
    # The config itself is valid: the goal judge scores such a target against each question's
    # goal, and the run's pre-flight rejects questions without one (tests/test_goal_judge.py).
    path = write_project(tmp_path, target={"graders": []})
    assert validate_config_file(path) == []


def test_config_not_found_is_exit_4(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "missing.yaml")
    assert info.value.exit_code == 4
