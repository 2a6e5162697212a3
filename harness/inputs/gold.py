"""Gold labels: people's verdicts on questions, keyed by judge dimension or rubric id (the
`dimension` an LLM judge declares; a rubric's id), read from YAML or JSON and validated
against `schema/gold.schema.json` with the file and line of every problem."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from .sourcefile import (
    load_document,
    pointer_of,
    problem_at,
    raise_problems,
    validate_document,
)

__all__ = ["GoldLabel", "GoldLabels", "load_gold"]


@dataclass(frozen=True, slots=True)
class GoldLabel:
    """One person's verdict on one question for one dimension."""

    question: str
    """Question id."""
    dimension: str
    """Judge dimension (e.g. `relevance`) or rubric id (e.g. `booking-claim`)."""
    score: int | None
    """An ordinal label on the judge's own scale; None for a pass/fail label."""
    passed: bool | None
    """A pass/fail label; None for an ordinal one."""
    target: str | None = None
    """Only this target of the run; None: any target with the question."""
    line: int | None = None
    """Line of the label in its file, for messages."""


@dataclass(frozen=True, slots=True)
class GoldLabels:
    """A gold-label file, loaded."""

    path: Path
    labels: tuple[GoldLabel, ...]

    def dimensions(self) -> list[str]:
        return sorted({label.dimension for label in self.labels})

    def of(self, dimension: str) -> list[GoldLabel]:
        return [label for label in self.labels if label.dimension == dimension]


def load_gold(path: str | Path) -> GoldLabels:
    """Load and validate a gold-label file; `InputError` (exit 4) naming file, line and key. A
    second label for the same (target, question, dimension) is rejected, not silently used."""
    doc = load_document(path, error_cls=InputError)
    problems = validate_document(doc, "gold")
    labels: list[GoldLabel] = []
    if not problems:
        seen: dict[tuple, int] = {}
        for index, raw in enumerate(doc.data["labels"]):
            pointer = pointer_of(["labels", index])
            key = (raw.get("target"), raw["question"], raw["dimension"])
            if key in seen:
                problems.append(
                    problem_at(
                        doc,
                        pointer,
                        f"a second label for question {raw['question']!r}, dimension "
                        f"{raw['dimension']!r}",
                        hint=f"the first is item {seen[key]}",
                    )
                )
                continue
            seen[key] = index
            labels.append(
                GoldLabel(
                    question=str(raw["question"]),
                    dimension=str(raw["dimension"]),
                    score=raw.get("score"),
                    passed=raw.get("pass"),
                    target=raw.get("target"),
                    line=doc.line_of(pointer),
                )
            )
    raise_problems(problems, InputError)
    return GoldLabels(path=Path(path), labels=tuple(labels))
