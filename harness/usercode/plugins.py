"""Plugins: one loader for tracegrade's entry-point groups.

Third-party code reaches tracegrade through three entry-point groups: `tracegrade.graders`
(grader classes), `tracegrade.datasets` (dataset sources) and `tracegrade.providers` (judge
provider backends). tracegrade's own built-ins register through the same groups. All three are
read by `load_plugins`, with one set of rules:

- each entry point is loaded and each object it names is validated when it registers; a plugin
  that cannot be imported or whose declaration is invalid is a `PluginError` (exit 4) naming
  the distribution and the entry point, never a traceback and never half-loaded;
- two plugins claiming the same name is an error naming both distributions (never "the first
  one wins silently");
- the same entry point seen twice (an editable install beside its source tree) counts once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from ..errors import PluginError

__all__ = [
    "DATASETS_GROUP",
    "GRADERS_GROUP",
    "PROVIDERS_GROUP",
    "Plugin",
    "installed_entry_points",
    "load_plugins",
    "source_of",
]

GRADERS_GROUP = "tracegrade.graders"
DATASETS_GROUP = "tracegrade.datasets"
PROVIDERS_GROUP = "tracegrade.providers"


@dataclass(frozen=True, slots=True)
class Plugin:
    """One registered object of an entry-point group."""

    name: str
    """The name it registered under (a grader id, a source name, a provider kind)."""
    obj: Any
    """The loaded, validated object."""
    source: str
    """Where it came from: `plugin '<distribution>', entry point <name> = <value>`."""
    distribution: str
    """The distribution that declared it (or "unknown distribution")."""


def _distribution(entry_point: metadata.EntryPoint) -> str:
    dist = getattr(entry_point, "dist", None)
    return dist.metadata["Name"] if dist is not None else "unknown distribution"


def source_of(entry_point: metadata.EntryPoint) -> str:
    """How messages name an entry point: its distribution, name and value."""
    return (
        f"plugin {_distribution(entry_point)!r}, entry point "
        f"{entry_point.name} = {entry_point.value}"
    )


def installed_entry_points(group: str) -> list[metadata.EntryPoint]:
    """The group's installed entry points, each (name, value) once: the same distribution can
    be visible twice (an editable install beside its source tree)."""
    seen: dict[tuple[str, str], metadata.EntryPoint] = {}
    for entry_point in metadata.entry_points(group=group):
        seen.setdefault((entry_point.name, entry_point.value), entry_point)
    return list(seen.values())


def load_plugins(
    group: str,
    *,
    kind: str,
    validate: Callable[[Any, str], None],
    name_of: Callable[[Any, metadata.EntryPoint], str] | None = None,
    many: bool = False,
    entry_points: Iterable[metadata.EntryPoint] | None = None,
) -> dict[str, Plugin]:
    """Every object the group's entry points name, by name, in entry-point order.

    `validate(obj, source)` raises `PluginError` for an invalid declaration; `name_of(obj,
    entry_point)` is the name it registers under (default: the entry point's name); `many`
    accepts an entry point naming a list or tuple of objects. `kind` ("grader", "dataset
    source", "judge provider") words the messages. `entry_points` defaults to the installed
    ones of `group`. The same object registered twice under one name counts once; two objects
    under one name is a `PluginError` naming both distributions.
    """
    found: dict[str, Plugin] = {}
    points = installed_entry_points(group) if entry_points is None else list(entry_points)
    for entry_point in points:
        source = source_of(entry_point)
        try:
            loaded = entry_point.load()
        except Exception as exc:  # isolation point: any plugin import failure is a PluginError
            raise PluginError(
                f"{source}: cannot be loaded: {type(exc).__name__}: {exc}", plugin=source
            ) from exc
        items = list(loaded) if many and isinstance(loaded, list | tuple) else [loaded]
        for item in items:
            validate(item, source)
            name = name_of(item, entry_point) if name_of is not None else entry_point.name
            if name in found:
                if found[name].obj is item:
                    continue
                raise PluginError(
                    f"duplicate {kind} {name!r}: {source} and {found[name].source} both "
                    f"register it (uninstall one of {found[name].distribution!r} and "
                    f"{_distribution(entry_point)!r})",
                    plugin=source,
                )
            found[name] = Plugin(name, item, source, _distribution(entry_point))
    return found
