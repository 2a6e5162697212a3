"""The dataset example corpus: every valid file passes, every invalid file fails naming its rule,
every rule of the format has an invalid example, and the JSON Schema and the pydantic models
give the same verdict on every file."""

from __future__ import annotations

import re
from pathlib import Path

import pydantic
import pytest
from jsonschema import Draft202012Validator

from tracegrade import Dataset, DatasetError, load_dataset
from tracegrade.inputs.dataset import validate_dataset_file
from tracegrade.inputs.sourcefile import _validator, load_document, load_schema

EXAMPLES = Path(__file__).resolve().parents[1] / "schema" / "examples"
VALID = sorted((EXAMPLES / "valid").glob("dataset-*.yaml"))
INVALID = sorted((EXAMPLES / "invalid").glob("dataset-*.yaml"))
SCHEMA_COMMENT = "# yaml-language-server: $schema=../../dataset.schema.json"

# The seed's valid examples, by name.
SEED_EXAMPLES = {
    "dataset-minimal",
    "dataset-multi-turn",
    "dataset-tool-assertions",
    "dataset-split-rule",
    "dataset-split-explicit",
    "dataset-with-rubric-ref",
    "dataset-expected-yaml",
    "dataset-mcq",
    "dataset-metadata",
    "dataset-with-files",
}

# Every rule of the dataset format, worded as the validation message words it. Each must have
# at least one invalid example whose first line is `# rule: <rule>`.
RULES = {
    # the five rejected expected_tools shapes
    "args values must be scalars",
    "args must not be empty",
    "after must not be blank",
    "after must not be combined with should_run: false",
    "an expected_tools entry needs tool and should_run",
    # questions
    "unknown key",
    "a question needs id and input",
    "input must not be blank",
    "goal must not be blank",
    "input must not be an empty list",
    "input must be a string or a list of messages",
    "role must be one of system, user, assistant, tool",
    "a message needs role and content",
    "rubric_ref must look like rubric/<id>@<version>",
    "split must be one of train, validation, test",
    "bundle must be snake_case",
    "expected.format must be one of text, json, yaml, markdown",
    "expected must be a mapping",
    "expected_facts values must be strings, numbers, or lists of them",
    "must_not_contain must be a list of strings",
    # metadata.state (state_grader's assertions)
    "state assertion kind must be sql or key",
    "a sql assertion needs exactly one of equals, rows, count",
    # the document
    "a dataset must be a mapping with a 'questions' list",
    "missing required key",
    "duplicate question id",
    "duplicate key",
    "YAML syntax error",
    # the trajectory block (tracegrade.inputs.blocks.trajectory words each rule the same way)
    "a trajectory needs calls, forbid, only, count or max_calls",
    "trajectory.match must be one of strict, unordered, subset, superset, subsequence",
    "trajectory.args must be one of subset, exact, ignore",
    "a trajectory call needs tool",
    "outcome must be one of ok, error, command, handoff",
    "unknown matcher keyword",
    "a matcher takes one keyword (or min with max, approx with tol)",
    "tol needs approx",
    "regex does not compile",
    "min must not be above max",
    "min and max must be numbers or strings",
    "in must be a non-empty list",
    "type must be one of string, integer, number, boolean, null, array, object",
    "any must be true",
    "absent must be true",
    "approx must be a number",
    "tol must be a non-negative number",
    "schema must be a valid JSON Schema",
    "count names a tool in forbid",
    "a count needs min or max, each a non-negative integer",
    "max_calls must be a non-negative integer",
    "forbid and only must be lists of tool names",
    # agents that stop to ask and talk over turns
    "a question takes input or turns, not both",
    "a question takes turns or a simulated user, not both",
    "turns must be a non-empty list of user turns",
    "a turn needs content",
    "a turn is its text or a mapping with content",
    "resume must be a list of answers",
    "a resume entry with when needs value",
    "a payload matcher must be a mapping of payload keys to values or matchers",
    "an interrupt step takes only interrupt",
    "expected_interrupts.count must be a non-negative integer or {min, max}",
    "expected_interrupts needs count, includes or ends_interrupted",
    "ends_interrupted must be true or false",
    "node, tool, before and after must be non-blank names",
    "a simulated user needs goal",
    "user.max_turns must be an integer from 1 to 50",
    # checks that need no expected answer, and the path through the graph
    "unknown check",
    "nodes takes path or steps",
    # the agent's world
    "fail must be one of error, timeout, rate_limit",
    # splits
    "ratios must sum to 1.0",
    "ratios may only name train, validation, test",
    "splits.rule must be hash",
}

# Files whose fault is in the text itself, before there is data for a schema or model to judge.
PARSE_LEVEL = {"dataset-yaml-syntax", "dataset-duplicate-key"}


def rule_of(path: Path) -> str:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# rule: "), f"{path.name}: first line must be '# rule: <rule>'"
    return first.removeprefix("# rule: ").strip()


def test_seed_examples_exist() -> None:
    assert {p.stem for p in VALID} >= SEED_EXAMPLES


def test_every_rule_has_an_invalid_example() -> None:
    covered = {rule_of(p) for p in INVALID}
    assert RULES - covered == set(), "rules without an invalid example"
    assert covered - RULES == set(), "invalid examples naming a rule not in RULES"


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_valid_example_passes(path: Path) -> None:
    assert path.read_text().splitlines()[0] == SCHEMA_COMMENT
    assert validate_dataset_file(path) == []
    assert load_dataset(path).questions
    # Portable: a plain Draft 2020-12 validator (no tracegrade extensions) agrees.
    assert (
        list(Draft202012Validator(load_schema("dataset")).iter_errors(load_document(path).data))
        == []
    )


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_invalid_example_fails_naming_its_rule(path: Path) -> None:
    rule = rule_of(path)
    assert SCHEMA_COMMENT in path.read_text().splitlines()[1]
    problems = validate_dataset_file(path)
    assert problems, f"{path.name} validated"
    assert any(rule in p.message for p in problems), [str(p) for p in problems]
    assert all(p.line is not None and p.file == str(path) for p in problems)
    with pytest.raises(DatasetError, match=re.escape(rule)):
        load_dataset(path)


@pytest.mark.parametrize("path", VALID + INVALID, ids=lambda p: p.parent.name + "/" + p.name)
def test_schema_and_models_agree(path: Path) -> None:
    if path.stem == "dataset-yaml-syntax":
        with pytest.raises(DatasetError):
            load_document(path)
        return
    data = load_document(path).data
    schema_ok = not list(_validator("dataset").iter_errors(data))
    try:
        Dataset.model_validate(data)
        model_ok = True
    except pydantic.ValidationError:
        model_ok = False
    assert schema_ok == model_ok
    expected = path.parent.name == "valid" or path.stem in PARSE_LEVEL
    assert schema_ok == expected
