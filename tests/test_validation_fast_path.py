"""The dataset loader's fast path (`sourcefile.conforms`, fastjsonschema) must never let through
a document the JSON Schema rejects: it skips jsonschema only when it says yes, so a yes where
jsonschema says no would load invalid input silently. The documents are generated from the
schema itself (its properties, types, enums, required keys), mostly plausible and sometimes
wrong at any depth, so they reach the deep rules as well as the shallow ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tracegrade import Dataset
from tracegrade.inputs.dataset import validate_dataset_file
from tracegrade.inputs.sourcefile import (
    Document,
    conforms,
    load_document,
    load_schema,
    validate_document,
)

SCHEMA = load_schema("dataset")
DEFS = SCHEMA["$defs"]
EXAMPLES = Path(__file__).resolve().parents[1] / "schema" / "examples"

_WORDS = ["", " ", "x", "id-1", "train", "test", "validation", "snake_case", "Not Snake",
          "rubric/policy@1", "rubric/Bad", "lookup", "user", "assistant", "system", "tool"]  # fmt: skip
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 3),
    st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, -0.5]),
    st.sampled_from(_WORDS),
)


def _resolve(schema: dict) -> dict:
    while "$ref" in schema:
        target = DEFS[schema["$ref"].removeprefix("#/$defs/")]
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _rarely_wrong(valid: st.SearchStrategy, wrong: st.SearchStrategy) -> st.SearchStrategy:
    """`valid` 24 times in 25, else `wrong`: near-valid documents, one or two faults deep
    inside, are the ones that tell two validators apart."""
    return st.integers(0, 24).flatmap(lambda i: wrong if i == 0 else valid)


def _plausible(schema: Any, depth: int) -> st.SearchStrategy:
    """Values the sub-schema probably accepts, now and then any scalar (probably not)."""
    if not isinstance(schema, dict):
        return _SCALARS
    schema = _resolve(schema)
    options: list[st.SearchStrategy] = []
    if "enum" in schema:
        options.append(st.sampled_from(schema["enum"]))
    if "const" in schema:
        options.append(st.just(schema["const"]))
    for key in ("anyOf", "oneOf", "allOf"):
        options += [_plausible(sub, depth) for sub in schema.get(key, [])]
    kinds = schema.get("type", [])
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if depth > 0 and ("object" in kinds or "properties" in schema):
        options.append(_objects(schema, depth - 1))
    if depth > 0 and "array" in kinds:
        options.append(st.lists(_plausible(schema.get("items", {}), depth - 1), max_size=3))
    if "string" in kinds:
        options.append(st.sampled_from(_WORDS))
    if "number" in kinds or "integer" in kinds:
        options.append(st.sampled_from([0, 1, 2, 0.5, 1.0]))
    if "boolean" in kinds:
        options.append(st.booleans())
    return _rarely_wrong(st.one_of(options), _SCALARS) if options else _SCALARS


def _objects(schema: dict, depth: int) -> st.SearchStrategy:
    props = schema.get("properties", {})
    if not props:
        values = _plausible(schema.get("additionalProperties", {}), depth)
        return st.dictionaries(st.sampled_from(["a", "b", "state"]), values, max_size=2)
    required = [k for k in schema.get("required", []) if k in props]
    optional = {k: _plausible(v, depth) for k, v in props.items() if k not in required}
    objects = st.fixed_dictionaries(
        {k: _plausible(props[k], depth) for k in required}, optional=optional
    )
    return _rarely_wrong(objects, objects.map(lambda o: {**o, "unknown_key": 1}))


def _questions() -> st.SearchStrategy:
    return _objects(_resolve({"$ref": "#/$defs/question"}), depth=3)


_documents = st.one_of(
    st.fixed_dictionaries({"questions": st.lists(_questions(), max_size=3)}),
    _objects(SCHEMA, depth=4),
)


def _check(doc: Document) -> None:
    schema_problems = validate_document(doc, "dataset")
    if conforms(doc, "dataset"):
        if schema_problems:  # only the `x-` checks may be left, and the models enforce them
            with pytest.raises(ValidationError):
                Dataset.model_validate(doc.data)
    else:
        assert schema_problems, "the fast path rejected a document the schema accepts"


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_documents)
def test_the_fast_path_agrees_with_the_schema(data):
    _check(Document(Path("generated.yaml"), data, {"": 1}))


@pytest.mark.parametrize(
    "path",
    sorted(EXAMPLES.glob("valid/dataset-*")) + sorted(EXAMPLES.glob("invalid/dataset-*")),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_the_fast_path_agrees_with_the_schema_on_the_corpus(path):
    from tracegrade import DatasetError

    try:
        doc = load_document(path, error_cls=DatasetError)
    except DatasetError:
        return  # a parse error never reaches either validator
    if doc.format == "jsonl":
        doc = doc.wrapped("questions")
    _check(doc)
    # and the loader still reports what it reported before the fast path existed
    assert bool(validate_dataset_file(path)) == (path.parent.name == "invalid")
