"""Dataset sources: where a target's questions come from, as plugins.

A target's `dataset:` is a reference `<source>:<what>`: `file:path/to/questions.yaml` (the
default when there is no prefix: a plain path), `store:NAME` (a dataset in the writable SQLite
dataset store, `tracegrade.inputs.datastore`), or a third party's source. Every source registers
through the entry-point group `tracegrade.datasets` (the built-ins too, in tracegrade's own
pyproject) and turns its reference into a dataset file the run reads, after validating the whole
document against the dataset schema: a source never hands a run a half-read dataset.

A source is a class with `name` and
`materialize(reference, *, base_dir, store_path) -> Path`, raising `DatasetError` (exit 4,
naming file, line and key) for a document that does not validate.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, ClassVar, Protocol

from ..errors import DatasetError, PluginError, suggest
from ..usercode.plugins import DATASETS_GROUP, load_plugins
from .files import not_a_file

__all__ = [
    "GROUP",
    "DatasetSource",
    "FileSource",
    "dataset_sources",
    "plugin_classes",
    "resolve_dataset",
    "split_reference",
]

GROUP = DATASETS_GROUP
"""The entry-point group every dataset source registers through."""

_SCHEME = re.compile(r"^([a-z][a-z0-9_\-]+):(.*)$", re.S)


class DatasetSource(Protocol):
    """What a dataset source plugin implements."""

    name: ClassVar[str]
    """The prefix a target's `dataset:` names it by (`file`, `store`)."""

    def materialize(self, reference: str, *, base_dir: Path, store_path: Path) -> Path:
        """The validated dataset file for `reference` (relative paths against `base_dir`;
        `store_path` is the config's dataset store)."""
        ...


class FileSource:
    """YAML, JSON or JSONL files: a path, relative to the config file's directory."""

    name: ClassVar[str] = "file"

    def materialize(self, reference: str, *, base_dir: Path, store_path: Path) -> Path:
        from .dataset import check_dataset
        from .sourcefile import raise_problems

        path = Path(reference).expanduser()
        path = path if path.is_absolute() else base_dir / path
        if problem := not_a_file(path):
            raise DatasetError(f"dataset {problem}", file=str(path))
        problems, _ = check_dataset(path)
        raise_problems(problems, DatasetError)
        return path


def split_reference(reference: str) -> tuple[str, str]:
    """(source name, what) of a `dataset:` reference; a plain path is `file`."""
    match = _SCHEME.match(reference)
    if match is None:
        return "file", reference
    return match.group(1), match.group(2)


@functools.cache
def dataset_sources() -> dict[str, Any]:
    """Every registered source class by name (entry-point group `tracegrade.datasets`), each
    validated as it registers; two distributions registering one name is a `PluginError`."""
    plugins = load_plugins(
        GROUP,
        kind="dataset source",
        validate=_validate_source,
        name_of=lambda cls, _entry_point: cls.name,
    )
    return {name: plugin.obj for name, plugin in plugins.items()}


def _validate_source(cls: Any, source: str) -> None:
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not callable(getattr(cls, "materialize", None)):
        raise PluginError(f"{source}: a dataset source needs `name` and `materialize()`")


def plugin_classes(group: str, *, kind: str, needs: tuple[str, ...]) -> dict[str, Any]:
    """Every class registered in entry-point `group` (the shared plugin loader), by its `name`;
    each must have `name` and the callables `needs`, or it is a `PluginError` (exit 4)."""

    def validate(cls: Any, source: str) -> None:
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not all(callable(getattr(cls, n, None)) for n in needs):
            wanted = " and ".join(["`name`", *(f"`{n}()`" for n in needs)])
            raise PluginError(f"{source}: a {kind} needs {wanted}")

    plugins = load_plugins(
        group, kind=kind, validate=validate, name_of=lambda cls, _entry_point: cls.name
    )
    return {name: plugin.obj for name, plugin in plugins.items()}


def resolve_dataset(reference: str, *, base_dir: Path, store_path: Path) -> Path:
    """The validated dataset file a `dataset:` reference names, through its source."""
    scheme, what = split_reference(reference)
    sources = dataset_sources()
    if scheme not in sources:
        close = suggest(scheme, list(sources))
        hint = f"did you mean {close}:?" if close else f"sources: {', '.join(sorted(sources))}"
        raise DatasetError(f"no dataset source {scheme!r} (in {reference!r})", hint=hint)
    return Path(sources[scheme]().materialize(what, base_dir=base_dir, store_path=store_path))
