"""Grading modules (seed 003 "Where the graders come from"): a user `graders.py` beside a
dataset, or named in the target, imported by file path and turned into attachments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import InputError
from ..usercode.loading import import_file
from .base import Attachment, Grader, GraderServices
from .code import FunctionGrader, _short, attachment_of, grader

__all__ = ["GRADING_MODULE_NAME", "find_grading_module", "load_grading_module"]

GRADING_MODULE_NAME = "graders.py"
"""The grading module picked up beside a dataset file."""


def find_grading_module(dataset_path: str | Path) -> Path | None:
    """`graders.py` beside the dataset file, when there is one."""
    candidate = Path(dataset_path).resolve().parent / GRADING_MODULE_NAME
    return candidate if candidate.is_file() else None


def load_grading_module(
    path: str | Path, *, services: GraderServices | None = None
) -> list[Attachment]:
    """Import a user grading module by file path and attach its graders.

    The module exports `GRADERS` (a list of Grader instances, Grader subclasses, `@grader`
    functions or Attachments); without it, every `@grader` function and Grader instance defined
    at module level is collected, in definition order. Any failure to import it, or an item that
    is not a grader, is an `InputError` naming the file (and the line, for a syntax error).
    """
    file = Path(path)
    # Not cached: a grading module edited between two runs in one process runs anew.
    module = import_file(
        file, namespace="tracegrade_grading", what="the grading module", cache=False
    )
    module_name = module.__name__
    if hasattr(module, "GRADERS"):
        items = list(module.GRADERS)
        key = "GRADERS"
    else:
        items = [
            value
            for value in vars(module).values()
            if isinstance(value, Grader)
            or (
                isinstance(value, type)
                and issubclass(value, FunctionGrader)
                and value.__module__ == module_name
            )
        ]
        key = None
    attachments = []
    for index, item in enumerate(items):
        attachments.append(
            _attach(item, services, file=file, key=f"{key}[{index}]" if key else None)
        )
    seen: set[str] = set()
    for attachment in attachments:
        if attachment.grader.id in seen:
            raise InputError(
                f"two graders named {attachment.grader.id!r}; give one a distinct name=",
                file=str(file),
            )
        seen.add(attachment.grader.id)
    return attachments


def _attach(
    item: Any, services: GraderServices | None, *, file: Path, key: str | None
) -> Attachment:
    if isinstance(item, Attachment):
        _validate(type(item.grader), file=file, key=key)
        return item
    if isinstance(item, Grader):
        _validate(type(item), file=file, key=key)
        if services is not None:
            item.services = services
        return attachment_of(item)
    if isinstance(item, type) and issubclass(item, Grader):
        _validate(item, file=file, key=key)
        return attachment_of(item(services=services))
    if callable(item):
        return attachment_of(grader(item)(services=services))
    raise InputError(
        f"not a grader: {_short(item)} (expected a Grader, a @grader function or an Attachment)",
        file=str(file),
        key=key,
    )


def _validate(cls: type[Grader], *, file: Path, key: str | None) -> None:
    """A grader class of the module declares what a plugin's must (a scale with its min below
    its max, an id, a label...): refused at load, never a division by zero at grading."""
    from .registry import validate_grader_class

    try:
        validate_grader_class(cls, source=f"grading module {file.name}")
    except InputError as exc:
        raise InputError(exc.message, file=str(file), key=key) from None
