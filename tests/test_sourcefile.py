"""Source files: parsing with a line map, parse errors with their line, and schema problems that
name file, line, question id, pointer and the closest known key."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade import ConfigError, DatasetError, ExitCode
from tracegrade.inputs.sourcefile import (
    Problem,
    load_document,
    load_schema,
    raise_problems,
    schema_dir,
    validate_document,
)

YAML_TEXT = """\
# a comment
questions:
  - id: q1
    input: "first"
  - id: q2
    input:
      - role: user
        content: hi
    tags: [a, b]
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_yaml_line_map(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path, "d.yaml", YAML_TEXT))
    assert doc.format == "yaml"
    assert doc.data["questions"][1]["input"][0]["content"] == "hi"
    assert doc.line_of("/questions") == 2
    assert doc.line_of("/questions/0") == 3
    assert doc.line_of("/questions/0/input") == 4
    assert doc.line_of("/questions/1/input/0/content") == 8
    assert doc.line_of("/questions/1/tags/1") == 9
    # An unknown pointer falls back to its nearest known ancestor.
    assert doc.line_of("/questions/1/input/0/nothing/here") == 7


def test_json_line_map_and_escaped_keys(tmp_path: Path) -> None:
    text = '{\n  "questions": [\n    {"id": "q1",\n     "input": "x",\n     "a/b": 1}\n  ]\n}\n'
    doc = load_document(write(tmp_path, "d.json", text))
    assert doc.format == "json"
    assert doc.line_of("/questions/0") == 3
    assert doc.line_of("/questions/0/input") == 4
    assert doc.line_of("/questions/0/a~1b") == 5


def test_jsonl_rows_and_lines(tmp_path: Path) -> None:
    text = '{"id": "q1", "input": "x"}\n\n{"id": "q2", "input": "y"}\n'
    doc = load_document(write(tmp_path, "d.jsonl", text))
    assert doc.data == [{"id": "q1", "input": "x"}, {"id": "q2", "input": "y"}]
    assert doc.line_of("/1/input") == 3
    wrapped = doc.wrapped("questions")
    assert wrapped.data == {"questions": doc.data}
    assert wrapped.line_of("/questions/1/id") == 3


@pytest.mark.parametrize(
    ("name", "text", "line", "fragment"),
    [
        ("bad.yaml", "questions:\n  - id: q1\n    input: [unclosed\n", 4, "YAML syntax error"),
        ("bad.yaml", "questions:\n  - id: q1\n   input: x\n", 3, "YAML syntax error"),
        ("bad.json", '{\n  "questions": [\n    {"id": "q1",}\n  ]\n}\n', 3, "JSON syntax error"),
        ("bad.jsonl", '{"id": "q1", "input": "x"}\n{"id": "q2", \n', 2, "JSON syntax error"),
    ],
)
def test_syntax_error_is_an_error_with_its_line(
    tmp_path: Path, name: str, text: str, line: int, fragment: str
) -> None:
    with pytest.raises(DatasetError) as info:
        load_document(write(tmp_path, name, text))
    error = info.value
    assert error.exit_code == ExitCode.INVALID_INPUT
    assert error.line == line
    assert fragment in error.message
    assert f"{name}:{line}:" in str(error)
    [problem] = error.context["problems"]
    assert problem.line == line


def test_error_class_is_the_callers(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        load_document(write(tmp_path, "c.yaml", "a: [\n"), error_cls=ConfigError)


def test_missing_file_and_unknown_suffix(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="file not found"):
        load_document(tmp_path / "absent.yaml")
    with pytest.raises(DatasetError, match=r"unsupported file type '\.txt'"):
        load_document(write(tmp_path, "d.txt", "questions: []\n"))


def test_timestamps_stay_strings(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path, "d.yaml", "questions:\n  - {id: 2024-01-01, input: x}\n"))
    assert doc.data["questions"][0]["id"] == "2024-01-01"


def test_empty_file_is_invalid_not_an_empty_dataset(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path, "d.yaml", "# nothing\n"))
    [problem] = validate_document(doc, "dataset")
    assert "a dataset must be a mapping" in problem.message


def test_duplicate_keys_are_problems_with_both_lines(tmp_path: Path) -> None:
    yaml_doc = load_document(write(tmp_path, "d.yaml", "questions:\n  - id: a\n    id: b\n"))
    json_doc = load_document(write(tmp_path, "d.json", '{"questions": [],\n "questions": []}'))
    [yaml_problem] = [p for p in validate_document(yaml_doc, "dataset") if "duplicate" in p.message]
    assert (yaml_problem.line, yaml_problem.pointer) == (3, "/questions/0/id")
    assert "first at line 2" in yaml_problem.message
    [json_problem] = validate_document(json_doc, "dataset")
    assert json_problem.line == 2 and "duplicate key 'questions' (first at line 1)" in str(
        json_problem
    )


def test_typo_hint_names_line_question_and_pointer(tmp_path: Path) -> None:
    text = "questions:\n  - id: Q01\n    input: x\n    expecteed_facts: {a: b}\n"
    path = write(tmp_path, "d.yaml", text)
    [problem] = validate_document(load_document(path), "dataset")
    assert problem.line == 4
    assert problem.question_id == "Q01"
    assert problem.pointer == "/questions/0/expecteed_facts"
    assert problem.hint == "did you mean 'expected_facts'?"
    assert str(problem) == (
        f"{path}:4: question 'Q01': at /questions/0/expecteed_facts: unknown key "
        "'expecteed_facts' (did you mean 'expected_facts'?)"
    )


def test_every_problem_is_reported(tmp_path: Path) -> None:
    text = """\
questions:
  - id: q1
    input: x
    split: holdout
  - id: q2
    input: y
    expected_tools:
      - tool: t
        should_run: false
        after: u
        args: {}
  - input: z
"""
    problems = validate_document(load_document(write(tmp_path, "d.yaml", text)), "dataset")
    messages = [p.message for p in problems]
    assert messages == [
        "split must be one of train, validation, test",
        "after must not be combined with should_run: false",
        "args must not be empty",
        "a question needs id and input: 'id' is missing",
    ]
    assert [p.line for p in problems] == [4, 8, 11, 12]
    assert [p.question_id for p in problems] == ["q1", "q2", "q2", None]


def test_raise_problems_one_and_many() -> None:
    one = Problem("f.yaml", 3, "/questions/0/x", "unknown key 'x'", "q1", "did you mean 'y'?")
    two = Problem("f.yaml", 9, "/questions/1/id", "id must not be blank")
    raise_problems([], DatasetError)  # nothing to raise
    with pytest.raises(DatasetError) as info:
        raise_problems([one], DatasetError)
    assert str(info.value) == str(one)
    assert info.value.context["problems"] == [one]
    with pytest.raises(DatasetError) as info:
        raise_problems([one, two], DatasetError)
    assert info.value.context["problems"] == [one, two]
    assert str(one) in str(info.value) and str(two) in str(info.value)
    assert "2 problems" in str(info.value)


def test_load_schema_reads_the_repository_schema() -> None:
    schema = load_schema("dataset")
    on_disk = json.loads((Path(__file__).parents[1] / "schema/dataset.schema.json").read_text())
    assert schema == on_disk
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_every_repository_schema_ships_in_the_package() -> None:
    # An installed wheel reads the schemas from the package (importlib.resources), not from a
    # checkout: each of schema/*.schema.json must be there, unchanged, and declared as package
    # data so the wheel carries it.
    repo = Path(__file__).parents[1] / "schema"
    names = sorted(p.name for p in repo.glob("*.schema.json"))
    assert names == [
        "config.schema.json",
        "dataset.schema.json",
        "gold.schema.json",
        "rubric.schema.json",
    ]
    packaged = sorted(p.name for p in schema_dir().iterdir() if p.name.endswith(".schema.json"))
    assert packaged == names
    for name in names:
        assert (schema_dir() / name).read_text() == (repo / name).read_text()
    pyproject = tomllib.loads((repo.parent / "pyproject.toml").read_text())
    package_data = pyproject["tool"]["setuptools"]["package-data"]
    assert "*.schema.json" in package_data["tracegrade.schemas"]
    assert "py.typed" in package_data["tracegrade"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)


def pointers(value: object, prefix: str = "") -> list[str]:
    found = [prefix]
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else []
    )
    for key, child in items:
        token = str(key).replace("~", "~0").replace("/", "~1")
        found += pointers(child, f"{prefix}/{token}")
    return found


@settings(max_examples=60, deadline=None)
@given(
    value=json_values,
    indent=st.sampled_from([None, 1, 4]),
    suffix=st.sampled_from([".json", ".yaml"]),
)
def test_every_pointer_has_a_line_in_the_file(tmp_path_factory, value, indent, suffix) -> None:
    import yaml

    path = tmp_path_factory.mktemp("doc") / f"d{suffix}"
    text = json.dumps(value, indent=indent) if suffix == ".json" else yaml.safe_dump(value)
    path.write_text(text)
    doc = load_document(path)
    assert doc.data == value
    total = len(text.splitlines()) or 1
    for pointer in pointers(value):
        line = doc.line_of(pointer)
        assert line is not None and 1 <= line <= total
