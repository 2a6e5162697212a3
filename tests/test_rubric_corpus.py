"""The rubric schema's example corpus: every valid example validates (schema and model agree),
every invalid example fails for the rule it names, and every rule has an invalid example."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tracegrade.graders import Rubric, validate_rubric_file
from tracegrade.inputs.sourcefile import load_document, load_schema

ROOT = Path(__file__).resolve().parents[1]
VALID = sorted((ROOT / "schema/examples/rubrics/valid").iterdir())
INVALID = sorted((ROOT / "schema/examples/rubrics/invalid").iterdir())
DEMO = sorted((ROOT / "examples/rubrics").iterdir())

RULES = {
    "thresholds-sum",
    "thresholds-range",
    "custom-outcomes",
    "llm-judge-criterion",
    "unknown-kind",
    "bad-severity",
    "missing-id",
    "missing-version",
    "unknown-key",
    "bad-scoring-mode",
    "duplicate-check-id",
    "weights-unknown-check",
    "negative-weight",
    "tool-claim-params",
    "escalation-params",
    "bad-regex",
    "bad-json-schema",
    "empty-checks",
    "empty-values",
    "uncovered-is",
    "bad-requires",
    "unknown-params-key",
    "bad-version",
    "bad-id",
    "not-a-mapping",
}
"""Every rule a rubric file can break; each needs an invalid example naming it."""

_RULE = re.compile(r"rule: (?P<rule>[a-z-]+) \| expect: (?P<expect>.+)$")


def declared(path: Path) -> tuple[str, str]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        line = json.loads(text)["$comment"]
    else:
        line = text.splitlines()[0]
        assert line.startswith("# rule: "), f"{path.name}: first line must be '# rule: ...'"
    match = _RULE.search(line.strip())
    assert match, f"{path.name}: no 'rule: <name> | expect: <text>' declaration"
    return match["rule"], match["expect"]


def test_the_schema_is_draft_2020_12():
    from jsonschema import Draft202012Validator

    schema = load_schema("rubric")
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("path", VALID + DEMO, ids=lambda p: p.name)
def test_valid_examples_validate(path: Path):
    assert validate_rubric_file(path) == []
    rubric = Rubric.from_data(load_document(path).data)
    assert rubric.checks


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_invalid_examples_fail_for_their_rule(path: Path):
    rule, expect = declared(path)
    assert rule in RULES, f"{path.name} names unknown rule {rule!r}"
    problems = validate_rubric_file(path)
    assert problems, f"{path.name} validated"
    assert any(expect in p.message for p in problems), [str(p) for p in problems]
    assert all(p.file == str(path) and p.line is not None for p in problems)


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_the_model_rejects_every_invalid_example_too(path: Path):
    # The store validates through the model: it must never accept what the schema rejects.
    with pytest.raises(ValueError):
        Rubric.from_data(load_document(path).data)


def test_every_rule_has_an_invalid_example():
    covered = {declared(p)[0] for p in INVALID}
    assert covered == RULES, f"rules without an example: {sorted(RULES - covered)}"


def test_the_seed_booking_claim_example_is_kept_verbatim_as_json():
    data = json.loads((ROOT / "schema/examples/rubrics/valid/booking-claim.json").read_text())
    assert data == {
        "id": "booking-claim",
        "version": "1.0.0",
        "kind": "tool-claim",
        "severity": "critical",
        "description": "A claimed booking is backed by a successful book_appointment tool result.",
        "criterion": "Consider only statements about whether the booking was completed.",
        "params": {
            "toolName": "book_appointment",
            "action": "booking the appointment",
            "successWhen": {"path": "status", "equals": "confirmed"},
        },
    }
    rubric = Rubric.from_data(data)
    assert (rubric.id, rubric.version, len(rubric.checks)) == ("booking-claim", "1.0.0", 1)
    assert rubric.single_check and rubric.checks[0].severity == "critical"


def test_a_problem_names_file_line_and_key(tmp_path: Path):
    path = tmp_path / "r.yaml"
    path.write_text(
        "id: r\nversion: 1.0.0\nchecks:\n  - id: c\n    kind: custom\n    criterion: ok?\n"
        "    outcomes: {acceptable: a, unacceptable: b}\n    thresholds: {pass: 0.4, fail: 0.3}\n"
    )
    (problem,) = validate_rubric_file(path)
    assert problem.file == str(path)
    assert problem.line == 8
    assert problem.pointer == "/checks/0/thresholds"
    assert "must be greater than 1" in problem.message


def test_a_syntax_error_is_a_problem_not_an_exception(tmp_path: Path):
    path = tmp_path / "broken.yaml"
    path.write_text("id: r\nchecks: [\n")
    (problem,) = validate_rubric_file(path)
    assert "YAML syntax error" in problem.message and problem.line is not None
