"""Source files (datasets, configs, rubrics): parsing with a line map (in `sourceparse`,
re-exported here), JSON Schema validation, and problems that name file, line, question id and
JSON pointer.

Every source is validated; nothing here returns an empty document on a parse error. The schemas
(Draft 2020-12) are the repository's `schema/<name>.schema.json`, shipped inside the package as
`tracegrade.schemas` and read with `importlib.resources`, so an installed wheel validates exactly
as a checkout does. Two annotations extend them, both
ignored by other validators so the schemas stay portable:

- `errorMessage` (as in ajv-errors): a string, or a mapping of keyword -> string, that replaces
  jsonschema's wording for a failure of that sub-schema, so a message names the rule it enforces.
- `x-sumsTo` (number) on an object of numbers, and `x-uniqueBy` (key) on an array of objects:
  checks JSON Schema cannot express (ratios summing to 1.0, unique question ids). Other
  validators skip them; `tracegrade validate` and the loaders enforce them. The trajectory
  block adds four: `x-ordered` ([low, high] keys: low not above high), `x-disjoint` (pairs of
  keys: no name of a mapping's keys in the list), `x-regex` (compiles on RE2, the linear-time engine) and
  `x-jsonSchema` (a valid Draft 2020-12 schema). `x-payloadMatcher` on a payload matcher (a
  resume entry's `when`, an expected interrupt's `payload`): no literal mapping keyed by a
  misspelt matcher keyword (`{equals: x}` for `{eq: x}`). `x-example` (a string) is shown as
  the hint of any problem of the value it annotates: the expected shape, by example.

`conforms` is the quick yes/no a loader asks first: the same schema compiled to Python by
fastjsonschema (draft-07 semantics, which covers every keyword these schemas use; the `x-`
checks are left to the caller's models). Only a document it rejects goes through jsonschema,
whose errors name the rule, line and pointer. jsonschema walking every question of a large
dataset cost more per question than capturing the question's run.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import math
import sys
from collections.abc import Iterable, Iterator
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

import fastjsonschema
import jsonschema
from jsonschema import Draft202012Validator, ValidationError

from ..errors import InputError, suggest
from .blocks.trajectory import (
    BAD_REGEX,
    BAD_SCHEMA,
    MATCHER_KEYWORDS,
    MIN_ABOVE_MAX,
    bounds_problem,
    misspelt_keyword_message,
    misspelt_keywords,
    regex_problem,
    schema_problem,
)
from .sourceparse import (
    Document,
    Problem,
    escape_pointer_token,
    load_document,
    pointer_of,
)

__all__ = [
    "Document",
    "Problem",
    "compile_validators",
    "conforms",
    "escape_pointer_token",
    "load_document",
    "load_schema",
    "pointer_of",
    "problem_at",
    "raise_problems",
    "schema_dir",
    "validate_document",
]


def schema_dir() -> Traversable:
    """The folder of the packaged schemas (`tracegrade.schemas`: the repository's `schema/`)."""
    return resources.files("tracegrade.schemas")


# ------------------------------------------------------------------------------- validation


@functools.cache
def _schema_text(name: str) -> str:
    return (schema_dir() / f"{name}.schema.json").read_text(encoding="utf-8")


def load_schema(name: str) -> dict:
    """The schema `schema/<name>.schema.json` (`dataset`, `config`, `rubric`); a fresh copy,
    so a caller may change it."""
    return json.loads(_schema_text(name))


def _sums_to(
    validator: Any, total: float, instance: Any, schema: dict
) -> Iterator[ValidationError]:
    if not isinstance(instance, dict):
        return
    values = [
        v for v in instance.values() if isinstance(v, int | float) and not isinstance(v, bool)
    ]
    if len(values) == len(instance) and not math.isclose(sum(values), total, abs_tol=1e-9):
        yield ValidationError(f"values sum to {sum(values):g}, not {total:g}")


def _unique_by(validator: Any, key: str, instance: Any, schema: dict) -> Iterator[ValidationError]:
    if not isinstance(instance, list):
        return
    first: dict[Any, int] = {}
    for index, item in enumerate(instance):
        if not isinstance(item, dict) or not isinstance(item.get(key), str | int):
            continue
        value = item[key]
        if value in first:
            error = ValidationError(f"duplicate {key} {value!r}", path=[index, key])
            error.related_pointer = f"/{first[value]}/{escape_pointer_token(key)}"
            error.duplicate_value = value
            yield error
        else:
            first[value] = index


def _ordered(validator: Any, keys: list, instance: Any, schema: dict) -> Iterator[ValidationError]:
    if isinstance(instance, dict):
        why = bounds_problem(instance.get(keys[0]), instance.get(keys[1]))
        if why == MIN_ABOVE_MAX:
            yield ValidationError(f"{instance[keys[0]]!r} is above {instance[keys[1]]!r}")


def _disjoint(
    validator: Any, pairs: list, instance: Any, schema: dict
) -> Iterator[ValidationError]:
    if not isinstance(instance, dict):
        return
    for first, second in pairs:
        names, others = instance.get(first), instance.get(second)
        if isinstance(names, dict) and isinstance(others, list):
            for name in names:
                if name in others:
                    yield ValidationError(f"{name!r} is in {second}", path=[first, name])


def _regex(validator: Any, on: bool, instance: Any, schema: dict) -> Iterator[ValidationError]:
    why = regex_problem(instance) if on and isinstance(instance, str) else None
    if why:
        yield ValidationError(why.removeprefix(BAD_REGEX + ": "))


def _json_schema(
    validator: Any, on: bool, instance: Any, schema: dict
) -> Iterator[ValidationError]:
    why = schema_problem(instance) if on and isinstance(instance, dict | bool) else None
    if why:
        yield ValidationError(why.removeprefix(BAD_SCHEMA + ": "))


def _payload_matcher(
    validator: Any, on: bool, instance: Any, schema: dict
) -> Iterator[ValidationError]:
    if not on or not isinstance(instance, dict):
        return
    for key, item in instance.items():
        for path, word, close in misspelt_keywords(item, (key,)):
            error = ValidationError(misspelt_keyword_message(word), path=list(path))
            error.hint = f"did you mean {close!r}? matchers: {', '.join(MATCHER_KEYWORDS)}"
            yield error


_Validator = jsonschema.validators.extend(
    Draft202012Validator,
    {
        "x-sumsTo": _sums_to,
        "x-uniqueBy": _unique_by,
        # the trajectory block's rules (tracegrade.inputs.blocks.trajectory words them the same way)
        "x-ordered": _ordered,
        "x-disjoint": _disjoint,
        "x-regex": _regex,
        "x-jsonSchema": _json_schema,
        "x-payloadMatcher": _payload_matcher,
    },
)


@functools.cache
def _validator(name: str) -> Any:
    schema = load_schema(name)
    Draft202012Validator.check_schema(schema)
    return _Validator(schema)


@functools.cache
def _compiled(name: str) -> Any:
    schema = load_schema(name)
    schema.pop("$id", None)  # refs are all local; nothing to resolve against a URL
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    validate = fastjsonschema.compile(schema)
    # Compiling the Python fastjsonschema generates (560 KB of it for the dataset's schema)
    # takes ~30 MB of C heap that the compiler frees and glibc keeps; given back, that
    # process is ~25 MB smaller from here on (the grading workers' peak was this).
    _give_back_freed_heap()
    return validate


def _give_back_freed_heap() -> None:
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        ctypes.CDLL(None).malloc_trim(0)


def compile_validators(*names: str) -> None:
    """The fast-path validators of `names` (schema names, as `conforms` takes) compiled now,
    once for the process: what a fork server loads before it forks, so its children share
    the compiled code instead of each compiling it again."""
    for name in names:
        _compiled(name)


def conforms(doc: Document, schema_name: str) -> bool:
    """Whether `doc` parsed cleanly and satisfies `schema/<schema_name>.schema.json`, apart from
    the `x-` checks: the fast path. False means: ask `validate_document` for the problems."""
    if doc.problems:
        return False
    try:
        _compiled(schema_name)(doc.data)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


_TYPE_NAMES = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "boolean": "true or false",
    "integer": "an integer",
    "null": "null",
}
_PY_TYPES = (
    (bool, "boolean"),
    (int | float, "number"),
    (str, "string"),
    (list, "list"),
    (dict, "mapping"),
)


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    return next((name for cls, name in _PY_TYPES if isinstance(value, cls)), type(value).__name__)


_DETAILED = ("x-sumsTo", "x-ordered", "x-disjoint", "x-regex", "x-jsonSchema")
_NAMED = ("type", "enum", "const", "minLength", "minItems", "pattern")


def _label(path: Iterable[Any]) -> str:
    """How a generic message names its value: `disabled`, or `tags items` for `/tags/0`."""
    parts = list(path)
    key = next((p for p in reversed(parts) if isinstance(p, str)), "")
    return f"{key} items" if key and parts and not isinstance(parts[-1], str) else key


def _custom_message(error: ValidationError) -> str | None:
    spec = error.schema.get("errorMessage") if isinstance(error.schema, dict) else None
    if isinstance(spec, str):
        return spec
    if isinstance(spec, dict):
        return spec.get(error.validator)
    return None


def _leaf_errors(error: ValidationError) -> list[ValidationError]:
    """The errors to report for one failure. For oneOf/anyOf: when exactly one branch has the
    instance's type (a list of messages rather than a string), that branch's own errors, which
    are more precise than the alternatives; otherwise the sub-schema's message, or the branch
    jsonschema judges closest."""
    if error.validator not in ("oneOf", "anyOf") or not error.context:
        return [error]
    branches: dict[Any, list[ValidationError]] = {}
    for sub in error.context:
        branches.setdefault(sub.schema_path[0] if sub.schema_path else None, []).append(sub)
    typed = [
        errors
        for errors in branches.values()
        if not any(e.validator == "type" and not e.path for e in errors)
    ]
    if len(typed) == 1:
        return [leaf for e in typed[0] for leaf in _leaf_errors(e)]
    if _custom_message(error):
        return [error]
    best = jsonschema.exceptions.best_match(error.context)
    branch = best.schema_path[0] if best.schema_path else None
    return [leaf for e in branches.get(branch, [best]) for leaf in _leaf_errors(e)]


def _render(error: ValidationError, doc: Document) -> list[Problem]:
    pointer = pointer_of(error.absolute_path)
    custom = _custom_message(error)
    # `x-example` (an annotation): what a value of this shape looks like, shown with any error
    example = error.schema.get("x-example") if isinstance(error.schema, dict) else None
    hint = getattr(error, "hint", None) or example
    if error.validator in ("additionalProperties", "unevaluatedProperties") and isinstance(
        error.instance, dict
    ):
        known = list(error.schema.get("properties", {}))
        extras = [k for k in error.instance if k not in known]
        problems = []
        for key in extras:
            close = suggest(str(key), known)
            hint = f"did you mean {close!r}?" if close else example
            where = f"{pointer}/{escape_pointer_token(key)}"
            message = custom or f"unknown key {key!r}"
            if custom and "{key}" in custom:
                message = custom.replace("{key}", repr(key))
            problems.append(_problem(doc, where, message, hint))
        return problems
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        base = custom or "missing required key"
        return [_problem(doc, pointer, f"{base}: {missing!r} is missing", example)]
    if custom:
        message = custom
        if error.validator in _DETAILED:
            message = f"{custom} ({error.message})"
    elif error.validator == "type":
        wanted = error.validator_value
        wanted = wanted if isinstance(wanted, list) else [wanted]
        names = " or ".join(_TYPE_NAMES.get(w, f"a {w}") for w in wanted)
        message = f"must be {names}, not {_type_of(error.instance)}"
    elif error.validator == "enum":
        options = ", ".join(str(v) for v in error.validator_value)
        message = f"must be one of {options} (got {error.instance!r})"
    elif error.validator == "const":
        message = f"must be {error.validator_value!r} (got {error.instance!r})"
    elif error.validator == "minLength":
        message = "must not be empty"
    elif error.validator == "minItems":
        message = f"must have at least {error.validator_value} item(s)"
    elif error.validator == "pattern":
        message = f"{error.instance!r} does not match {error.validator_value!r}"
    else:
        message = error.message
    if not custom and error.validator in _NAMED:
        message = f"{_label(error.absolute_path)} {message}".lstrip()
    if error.validator == "x-uniqueBy":
        if custom:
            message = f"{custom} {getattr(error, 'duplicate_value', '')!r}"
        related = getattr(error, "related_pointer", None)
        base = pointer_of(list(error.absolute_path)[:-2])
        first_line = doc.line_of(base + related) if related else None
        if first_line is not None:
            message = f"{message} (first at line {first_line})"
    return [_problem(doc, pointer, message, hint)]


def _question_id(doc: Document, pointer: str) -> str | None:
    parts = pointer.split("/")
    if len(parts) < 3 or parts[1] != "questions" or not parts[2].isdigit():
        return None
    data = doc.data
    questions = data.get("questions") if isinstance(data, dict) else None
    index = int(parts[2])
    if isinstance(questions, list) and index < len(questions):
        row = questions[index]
        if isinstance(row, dict) and isinstance(row.get("id"), str | int):
            return str(row["id"])
    return None


def _problem(doc: Document, pointer: str, message: str, hint: str | None = None) -> Problem:
    return Problem(
        file=str(doc.path),
        line=doc.line_of(pointer),
        pointer=pointer,
        message=message,
        question_id=_question_id(doc, pointer),
        hint=hint,
    )


def problem_at(doc: Document, pointer: str, message: str, hint: str | None = None) -> Problem:
    """A Problem at `pointer` of `doc`, its line and question id filled in."""
    return _problem(doc, pointer, message, hint)


def validate_document(doc: Document, schema_name: str) -> list[Problem]:
    """Every problem of `doc` against `schema/<schema_name>.schema.json`, in document order."""
    problems = list(doc.problems)
    for error in _validator(schema_name).iter_errors(doc.data):
        for leaf in _leaf_errors(error):
            problems.extend(_render(leaf, doc))
    unique: dict[tuple, Problem] = {}
    for problem in problems:
        unique.setdefault((problem.pointer, problem.message), problem)
    return sorted(unique.values(), key=lambda p: (p.line or 0, p.pointer))


def raise_problems(problems: list[Problem], error_cls: type[InputError]) -> None:
    """Raise one `error_cls` listing every problem (none: return). The list is in
    `error.context["problems"]`; a single problem's location becomes the error's own."""
    if not problems:
        return
    if len(problems) == 1:
        p = problems[0]
        raise error_cls(
            p.message,
            file=p.file,
            line=p.line,
            key=p.pointer or "/",
            question_id=p.question_id,
            hint=p.hint,
            problems=list(problems),
        )
    listing = "\n".join(f"  {p}" for p in problems)
    raise error_cls(
        f"{len(problems)} problems:\n{listing}", file=problems[0].file, problems=list(problems)
    )
