"""Rubric files: validation (schema, then the model's own rules) and the store that resolves
`rubric_ref: rubric/<id>@<version>` to exactly that version.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ...errors import RubricError
from ...inputs.sourcefile import (
    Document,
    Problem,
    load_document,
    pointer_of,
    problem_at,
    raise_problems,
    validate_document,
)
from .model import Rubric

__all__ = [
    "RUBRIC_SUFFIXES",
    "RubricStore",
    "load_rubric_file",
    "parse_ref",
    "validate_rubric_file",
]

RUBRIC_SUFFIXES = (".yaml", ".yml", ".json")
_REF = re.compile(r"^rubric/(?P<id>[^@/\s]+)@(?P<version>[^@/\s]+)$")


def _model_problems(doc: Document, exc: ValidationError) -> list[Problem]:
    problems = []
    errors = exc.errors()
    # A tuple whose only item failed also reports "too short": noise beside the real error.
    real = [e for e in errors if e["type"] != "too_short"] or errors
    for error in real:
        loc = list(error["loc"])
        pointer = pointer_of(loc)
        message = str(error["msg"]).removeprefix("Value error, ")
        problems.append(problem_at(doc, pointer, message))
    return problems


def _check_document(doc: Document) -> tuple[Rubric | None, list[Problem]]:
    problems = validate_document(doc, "rubric")
    if problems:
        return None, problems
    try:
        rubric = Rubric.from_data(doc.data)
    except ValidationError as exc:
        return None, _model_problems(doc, exc)
    except ValueError as exc:
        return None, [problem_at(doc, "", str(exc))]
    return rubric, []


def validate_rubric_file(path: Path) -> list[Problem]:
    """Every problem of one rubric file (syntax, schema, then thresholds and other rules the
    schema cannot express); empty when the file is a valid rubric. The `tracegrade validate`
    hook for kind "rubric"."""
    try:
        doc = load_document(path, error_cls=RubricError)
    except RubricError as exc:
        return list(exc.context.get("problems") or [Problem(str(path), exc.line, "", exc.message)])
    return _check_document(doc)[1]


def load_rubric_file(path: Path) -> Rubric:
    """One rubric file as a Rubric; `RubricError` (exit 4) listing every problem otherwise."""
    doc = load_document(path, error_cls=RubricError)
    rubric, problems = _check_document(doc)
    raise_problems(problems, RubricError)
    assert rubric is not None
    return rubric


def parse_ref(ref: str) -> tuple[str, str]:
    """(`id`, `version`) of `rubric/<id>@<version>`; ValueError for any other shape."""
    match = _REF.match(ref.strip()) if isinstance(ref, str) else None
    if match is None:
        raise ValueError(f"rubric_ref {ref!r} is not of the form rubric/<id>@<version>")
    return match["id"], match["version"]


class RubricStore:
    """The rubrics of one directory (YAML and JSON files, searched recursively), by id and
    version. Every file is validated when the store is built: one bad file is an input error
    (exit 4), not a rubric silently missing later."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        """The configured rubric directory."""
        self._rubrics: dict[tuple[str, str], Rubric] = {}
        self._files: dict[tuple[str, str], Path] = {}
        if not self.directory.is_dir():
            raise RubricError("rubric directory not found", file=str(self.directory))
        problems: list[Problem] = []
        for path in sorted(self.directory.rglob("*")):
            if path.suffix.lower() not in RUBRIC_SUFFIXES or not path.is_file():
                continue
            doc = load_document(path, error_cls=RubricError)
            rubric, found = _check_document(doc)
            problems.extend(found)
            if rubric is None:
                continue
            key = (rubric.id, rubric.version)
            if key in self._files:
                problems.append(
                    problem_at(
                        doc,
                        "",
                        f"rubric {rubric.id}@{rubric.version} is also defined in "
                        f"{self._files[key]}",
                    )
                )
                continue
            self._rubrics[key] = rubric
            self._files[key] = path
        raise_problems(problems, RubricError)

    def __len__(self) -> int:
        return len(self._rubrics)

    def rubrics(self) -> list[Rubric]:
        """Every rubric, sorted by id then version."""
        return [self._rubrics[k] for k in sorted(self._rubrics)]

    def versions(self, rubric_id: str) -> list[str]:
        return sorted(v for i, v in self._rubrics if i == rubric_id)

    def file_of(self, rubric: Rubric) -> Path:
        return self._files[(rubric.id, rubric.version)]

    def resolve(self, ref: str, *, question_id: str | None = None) -> Rubric:
        """Exactly the rubric `ref` names. Unknown id or version: `RubricError` naming the ref,
        the question and what is available."""
        try:
            rubric_id, version = parse_ref(ref)
        except ValueError as exc:
            raise RubricError(str(exc), key="rubric_ref", question_id=question_id) from None
        found = self._rubrics.get((rubric_id, version))
        if found is not None:
            return found
        versions = self.versions(rubric_id)
        if versions:
            hint = f"versions available: {', '.join(versions)}"
            message = f"rubric_ref {ref!r}: rubric {rubric_id!r} has no version {version!r}"
        else:
            ids = sorted({i for i, _ in self._rubrics})
            hint = f"rubrics available: {', '.join(ids) or '(none)'}"
            message = f"rubric_ref {ref!r}: no rubric {rubric_id!r} in {self.directory}"
        raise RubricError(
            message,
            key="rubric_ref",
            question_id=question_id,
            hint=hint,
            ref=ref,
            versions=versions,
        )

    def resolve_questions(self, rows: list[Mapping[str, Any]]) -> dict[str, Rubric]:
        """Resolve the `rubric_ref` of every row up front (before any agent runs), keyed by
        question id; every unresolvable ref is reported in one `RubricError`."""
        resolved: dict[str, Rubric] = {}
        errors: list[RubricError] = []
        for row in rows:
            ref = row.get("rubric_ref")
            if ref is None:
                continue
            try:
                resolved[str(row.get("id"))] = self.resolve(ref, question_id=str(row.get("id")))
            except RubricError as exc:
                errors.append(exc)
        if len(errors) == 1:
            raise errors[0]
        if errors:
            listing = "\n".join(f"  {e}" for e in errors)
            raise RubricError(
                f"{len(errors)} unresolvable rubric_ref(s):\n{listing}",
                key="rubric_ref",
                errors=errors,
            )
        return resolved
