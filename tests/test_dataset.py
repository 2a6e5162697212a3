"""Loading datasets from every source with validation, the question models and selection."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade import (
    Dataset,
    DatasetError,
    ExitCode,
    InputError,
    Question,
    load_dataset,
    select_questions,
)
from tracegrade.inputs.dataset import validate_dataset_file
from tracegrade.inputs.sourcefile import load_schema

QUESTIONS = [
    {"id": "q1", "input": "What is LangGraph?", "bundle": "basics", "tags": ["smoke"]},
    {
        "id": "q2",
        "input": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Reset my password."},
        ],
        "bundle": "accounts",
        "tags": ["smoke", "auth"],
        "split": "test",
    },
    {"id": "q3", "input": "Old question.", "disabled": True},
    {"id": "q4", "input": "Close my account.", "bundle": "accounts", "tags": ["auth"]},
]


def write_all_formats(tmp_path: Path) -> list[Path]:
    import yaml

    yaml_path = tmp_path / "support.yaml"
    yaml_path.write_text(yaml.safe_dump({"questions": QUESTIONS}, sort_keys=False))
    json_path = tmp_path / "support.json"
    json_path.write_text(json.dumps({"questions": QUESTIONS}, indent=2))
    jsonl_path = tmp_path / "support.jsonl"
    jsonl_path.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    return [yaml_path, json_path, jsonl_path]


def test_every_source_loads_the_same_questions(tmp_path: Path) -> None:
    loaded = [load_dataset(p) for p in write_all_formats(tmp_path)]
    rows = [[q.row() for q in d.questions] for d in loaded]
    assert rows[0] == rows[1] == rows[2] == [q for q in QUESTIONS if not q.get("disabled")]
    for dataset, path in zip(loaded, write_all_formats(tmp_path), strict=True):
        assert dataset.name == "support"
        assert dataset.path == path
        assert dataset.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
        assert dataset.disabled_ids == ["q3"]


@pytest.mark.parametrize("suffix", ["yaml", "json", "jsonl"])
def test_every_source_is_validated(tmp_path: Path, suffix: str) -> None:
    bad = [{"id": "q1", "input": "x", "expecteed_facts": {"a": "b"}}]
    path = tmp_path / f"d.{suffix}"
    if suffix == "jsonl":
        path.write_text('{"id": "q0", "input": "ok"}\n' + json.dumps(bad[0]) + "\n")
        line, pointer = 2, "/questions/1/expecteed_facts"
    else:
        path.write_text(json.dumps({"questions": bad}, indent=1))
        line, pointer = 6, "/questions/0/expecteed_facts"  # `{`, `"questions": [`, `{`, id, input
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    [problem] = info.value.context["problems"]
    assert (problem.line, problem.pointer, problem.question_id) == (line, pointer, "q1")
    assert problem.hint == "did you mean 'expected_facts'?"
    assert info.value.exit_code == ExitCode.INVALID_INPUT


def test_duplicate_ids_name_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(
        "questions:\n  - id: a\n    input: x\n  - id: b\n    input: y\n  - id: a\n    input: z\n"
    )
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert str(info.value) == (
        f"{path}:6: question 'a': at /questions/2/id: duplicate question id 'a' (first at line 2)"
    )


def test_duplicate_id_of_a_disabled_row_is_still_an_error(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": "a", "input": "x", "disabled": true}\n{"id": "a", "input": "y"}\n')
    assert [p.line for p in validate_dataset_file(path)] == [2]


def test_validate_dataset_file_returns_parse_and_schema_problems(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("questions:\n  - {id: q1, input: x}\n")
    broken = tmp_path / "broken.yaml"
    broken.write_text("questions:\n  - id: q1\n    input: 'x\n")
    assert validate_dataset_file(good) == []
    [problem] = validate_dataset_file(broken)
    assert problem.message.startswith("YAML syntax error") and problem.line == 4


def test_input_messages_and_flattened_input() -> None:
    plain = Question.model_validate({"id": "a", "input": "Hello"})
    assert plain.input_messages() == [{"role": "user", "content": "Hello"}]
    assert plain.flattened_input() == "Hello"
    multi = Question.model_validate(QUESTIONS[1])
    assert multi.input_messages() == QUESTIONS[1]["input"]
    assert multi.flattened_input() == "system: Be brief.\nuser: Reset my password."


def test_row_is_the_question_as_authored() -> None:
    row = {"id": "a", "input": "x", "expected": {"format": "json", "answer": "{}"}}
    question = Question.model_validate(row)
    assert question.row() == row
    assert "disabled" not in question.row()  # defaults are not invented


@pytest.fixture
def dataset(tmp_path: Path) -> Dataset:
    return load_dataset(write_all_formats(tmp_path)[0])


def ids(questions: list[Question]) -> list[str]:
    return [q.id for q in questions]


def test_select_by_split(dataset: Dataset) -> None:
    # No splits block: unlabeled rows are train and validation, never test.
    assert ids(select_questions(dataset, split="test")) == ["q2"]
    assert ids(select_questions(dataset, split="train")) == ["q1", "q4"]
    assert ids(select_questions(dataset, split="validation")) == ["q1", "q4"]
    assert ids(select_questions(dataset)) == ["q1", "q2", "q4"]


def test_select_by_bundle_tag_and_limit(dataset: Dataset) -> None:
    assert ids(select_questions(dataset, bundles=["accounts"])) == ["q2", "q4"]
    assert ids(select_questions(dataset, bundles=["basics", "accounts"])) == ["q1", "q2", "q4"]
    assert ids(select_questions(dataset, tags=["smoke"])) == ["q1", "q2"]
    assert ids(select_questions(dataset, tags=["smoke", "auth"])) == ["q1", "q2", "q4"]
    assert ids(select_questions(dataset, bundles=["accounts"], tags=["smoke"])) == ["q2"]
    assert ids(select_questions(dataset, limit=2)) == ["q1", "q2"]
    assert ids(select_questions(dataset, split="train", bundles=["accounts"], limit=5)) == ["q4"]
    assert select_questions(dataset, bundles=["nothing"]) == []


def test_select_rejects_bad_split_and_limit(dataset: Dataset) -> None:
    with pytest.raises(InputError, match="unknown split 'holdout'"):
        select_questions(dataset, split="holdout")
    with pytest.raises(InputError, match="--limit must be at least 1"):
        select_questions(dataset, limit=0)


# ---------------------------------------------------------------- round trip of valid questions

text = st.text(max_size=20)
non_blank = st.text(min_size=1, max_size=20).filter(lambda s: s.strip() != "")
scalar = st.one_of(
    text, st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.booleans(), st.none()
)
fact_scalar = st.one_of(text, st.integers(), st.floats(allow_nan=False, allow_infinity=False))
keys = st.text(min_size=1, max_size=12)
snake = st.from_regex(r"[a-z][a-z0-9]{0,6}(_[a-z0-9]{1,4}){0,2}", fullmatch=True)


@st.composite
def expected_tool(draw: st.DrawFn) -> dict:
    entry = {"tool": draw(non_blank), "should_run": draw(st.booleans())}
    if draw(st.booleans()):
        entry["args"] = draw(st.dictionaries(keys, scalar, min_size=1, max_size=3))
    if entry["should_run"] and draw(st.booleans()):
        entry["after"] = draw(non_blank)
    return entry


message = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user", "assistant", "tool"]), "content": text}
)
optional = {
    "criteria": text,
    "expected": st.fixed_dictionaries(
        {},
        optional={"format": st.sampled_from(["text", "json", "yaml", "markdown"]), "answer": text},
    ),
    "expected_facts": st.dictionaries(
        keys.filter(lambda k: k != "must_not_contain"),
        st.one_of(fact_scalar, st.lists(fact_scalar, max_size=3)),
        max_size=3,
    ).flatmap(
        lambda facts: st.one_of(
            st.just(facts),
            st.lists(text, max_size=3).map(lambda b: {**facts, "must_not_contain": b}),
        )
    ),
    "expected_tools": st.lists(expected_tool(), max_size=3),
    "rubric_ref": st.from_regex(
        r"rubric/[a-z0-9][a-z0-9_.-]{0,8}@[0-9][0-9A-Za-z.+-]{0,5}", fullmatch=True
    ),
    "choices": st.lists(text, min_size=1, max_size=4),
    "files": st.dictionaries(keys, text, max_size=2),
    "disabled": st.booleans(),
    "split": st.sampled_from(["train", "validation", "test"]),
    "bundle": snake,
    "tags": st.lists(non_blank, max_size=3),
    "metadata": st.dictionaries(keys, st.one_of(scalar, st.lists(scalar, max_size=2)), max_size=3),
}
question = st.fixed_dictionaries(
    {"id": non_blank, "input": st.one_of(non_blank, st.lists(message, min_size=1, max_size=3))},
    optional=optional,
)


@settings(max_examples=150, deadline=None)
@given(row=question)
def test_valid_questions_round_trip_and_agree_with_the_schema(row: dict) -> None:
    from tracegrade.inputs.sourcefile import (
        _validator,  # the same validator `tracegrade validate` uses
    )

    assert list(_validator("dataset").iter_errors({"questions": [row]})) == []
    assert Question.model_validate(row).row() == row


def test_schema_and_models_name_the_same_question_keys() -> None:
    schema_keys = set(load_schema("dataset")["$defs"]["question"]["properties"])
    assert schema_keys == set(Question.model_fields)


def test_model_errors_are_located_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Should the schema ever let through what the models reject, the error still names the line.
    import tracegrade.inputs.dataset

    monkeypatch.setattr(tracegrade.inputs.dataset, "validate_document", lambda doc, name: [])
    path = tmp_path / "d.yaml"
    path.write_text(
        "questions:\n  - id: q1\n    input: x\n    expected_tools:\n"
        "      - {tool: t, should_run: false, after: u}\n"
    )
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    [problem] = info.value.context["problems"]
    assert (problem.line, problem.question_id) == (5, "q1")
    assert problem.pointer == "/questions/0/expected_tools/0"
    assert problem.message == "after must not be combined with should_run: false"
