"""The grader registry: built-ins and third-party graders, found the same way.

Every grader reaches the registry through an entry point of group `tracegrade.graders` (the
built-ins are declared in tracegrade's own pyproject). An entry point names a `Grader` subclass
or a list of them. Each declaration is validated at registration; a bad one raises `PluginError`
naming the distribution and the entry point, so a broken plugin is reported, never half-loaded.
"""

from __future__ import annotations

import functools
import math
import numbers
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from importlib import metadata
from typing import Any

from ..errors import InputError, PluginError, suggest
from ..records import scale_label
from ..usercode.plugins import GRADERS_GROUP, installed_entry_points, load_plugins
from .base import Grader, GraderServices
from .declarations import declaration_problem, evidence_of

__all__ = [
    "GROUP",
    "CatalogRow",
    "GraderRegistry",
    "load_registry",
    "validate_grader_class",
]

GROUP = GRADERS_GROUP
"""The entry-point group every grader registers through."""

_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")
_BOOL_FLAGS = ("llm", "sees_tool_calls", "observes_actions", "binary")
# Built-in entry points in catalog order (judges first, as seed 000 lists them); plugins follow.
_BUILTIN_ORDER = (
    "judges",
    "format",
    "rubrics",
    "tool_usage",
    "trajectory",
    "interrupts",
    "state",
    "code",
)


@dataclass(frozen=True, slots=True)
class CatalogRow:
    """One row of `tracegrade graders`, generated from a grader's declarations."""

    id: str
    """The grader id targets name."""
    label: str
    """Human-readable name."""
    kind: str
    """"LLM judge" or "Deterministic"."""
    scale: str
    """"(binary, 0-1)" for a pass/fail grader, else "(min-max)": "(0-5)", "(0-1)"."""
    selection_label: str
    """The label followed by its scale, as a person picks the grader: "Groundedness (binary, 0-1)"."""
    observes_actions: bool
    """The verdict rests on what the agent did (record or real state)."""
    sees_tool_calls: bool | None
    """For a judge: shown the tool-call record; None ("n/a") for deterministic graders."""
    needs: str
    """What it needs from the question."""
    description: str
    """What it measures."""
    source: str
    """Where it came from: `<distribution> (<entry point>)`."""
    owns: tuple[str, ...] = ()
    """The dataset keys it checks."""
    evidence: tuple[str, ...] = ()
    """What it grades from (answer, tool_calls, environment, usage, interrupts, judge)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def validate_grader_class(cls: Any, *, source: str) -> None:
    """Raise `PluginError` naming `source` when `cls` is not a valid grader declaration."""

    def fail(problem: str) -> PluginError:
        name = getattr(cls, "__qualname__", repr(cls))
        return PluginError(f"{source}: {name}: {problem}", plugin=source)

    if not isinstance(cls, type) or not issubclass(cls, Grader):
        raise fail("not a Grader subclass (an entry point names a Grader subclass or a list)")
    grader_id = getattr(cls, "id", None)
    if not isinstance(grader_id, str) or not grader_id:
        raise fail("missing `id` declaration (a non-empty string)")
    if not _ID_PATTERN.fullmatch(grader_id):
        raise fail(f"id {grader_id!r} must be letters, digits, '_', '.' or '-'")
    label = getattr(cls, "label", None)
    if not isinstance(label, str) or not label.strip():
        raise fail(f"grader {grader_id!r} is missing a `label` declaration (a non-empty string)")
    if not isinstance(cls.description, str):
        raise fail(f"grader {grader_id!r}: `description` must be a string")
    if not isinstance(cls.needs, str):
        raise fail(f"grader {grader_id!r}: `needs` must be a string")
    for flag in _BOOL_FLAGS:
        if not isinstance(getattr(cls, flag), bool):
            raise fail(f"grader {grader_id!r}: `{flag}` must be true or false")
    bounds = {"min_score": cls.min_score, "max_score": cls.max_score}
    for key, value in bounds.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise fail(f"grader {grader_id!r}: `{key}` must be a number, got {value!r}")
        if not math.isfinite(value):
            raise fail(f"grader {grader_id!r}: `{key}` must be finite, got {value!r}")
    if cls.min_score >= cls.max_score:
        raise fail(
            f"grader {grader_id!r}: min_score ({cls.min_score}) must be below "
            f"max_score ({cls.max_score})"
        )
    if cls.sees_tool_calls and not cls.llm:
        raise fail(
            f"grader {grader_id!r}: sees_tool_calls is only meaningful for an LLM judge "
            "(declare llm too, or drop sees_tool_calls)"
        )
    if cls.grade is Grader.grade and cls.agrade is Grader.agrade:
        raise fail(f"grader {grader_id!r} implements neither grade() nor agrade()")
    problem = declaration_problem(cls)
    if problem is not None:
        raise fail(f"grader {grader_id!r}: {problem}")


class GraderRegistry:
    """Grader classes by id, each validated once at registration."""

    def __init__(self) -> None:
        self._classes: dict[str, type[Grader]] = {}
        self._sources: dict[str, str] = {}

    # -- registration --------------------------------------------------------------------
    def register(self, cls: Any, *, source: str) -> None:
        """Validate and add one grader class; `source` names where it came from."""
        validate_grader_class(cls, source=source)
        if cls.id in self._classes:
            if self._classes[cls.id] is cls:
                return
            raise PluginError(
                f"{source}: duplicate grader id {cls.id!r}, already registered by "
                f"{self._sources[cls.id]}",
                plugin=source,
            )
        self._classes[cls.id] = cls
        self._sources[cls.id] = source

    @classmethod
    def from_entry_points(cls, entry_points: Iterable[metadata.EntryPoint]) -> GraderRegistry:
        """A registry of the grader classes the entry points name (a class or a list each),
        built-ins first in catalog order; see `tracegrade.usercode.plugins.load_plugins`."""
        registry = cls()
        plugins = load_plugins(
            GROUP,
            kind="grader id",
            validate=lambda item, source: validate_grader_class(item, source=source),
            name_of=lambda item, _entry_point: item.id,
            many=True,
            entry_points=sorted(entry_points, key=_entry_point_order),
        )
        for plugin in plugins.values():
            registry.register(plugin.obj, source=plugin.source)
        return registry

    @classmethod
    def from_classes(cls, classes: Iterable[Any], *, source: str = "direct") -> GraderRegistry:
        registry = cls()
        for item in classes:
            registry.register(item, source=source)
        return registry

    # -- lookup --------------------------------------------------------------------------
    def ids(self) -> list[str]:
        """Registered ids, in catalog order."""
        return list(self._classes)

    def __contains__(self, grader_id: object) -> bool:
        return grader_id in self._classes

    def __len__(self) -> int:
        return len(self._classes)

    def get(self, grader_id: str) -> type[Grader]:
        """The grader class registered as `grader_id`; `InputError` with a suggestion if none."""
        try:
            return self._classes[grader_id]
        except KeyError:
            pass
        close = suggest(str(grader_id), self._classes)
        hint = f"did you mean {close!r}?" if close else "run `tracegrade graders` for the list"
        raise InputError(f"unknown grader {grader_id!r}", key="graders", hint=hint)

    def source_of(self, grader_id: str) -> str:
        self.get(grader_id)
        return self._sources[grader_id]

    def create(
        self, grader_id: str, *, services: GraderServices | None = None, **options: Any
    ) -> Grader:
        """A new instance of grader `grader_id` with the runner's services and its options."""
        return self.get(grader_id)(services=services, **options)

    def owners(self, key: str) -> list[type[Grader]]:
        """The registered graders that own dataset key `key`, the one the check plan attaches
        first: a deterministic grader before a judge, a pass/fail one before a scale, then in
        catalog order."""
        found = [c for c in self._classes.values() if key in c.owns]
        return sorted(found, key=lambda c: (bool(c.llm), not c.binary))

    def owned_keys(self) -> list[str]:
        """Every dataset key some registered grader owns, in catalog order."""
        keys: dict[str, None] = {}
        for cls in self._classes.values():
            keys.update(dict.fromkeys(cls.owns))
        return list(keys)

    def catalog(self) -> list[CatalogRow]:
        """One row per grader: LLM judges first, then deterministic graders."""
        rows = [self._row(cls) for cls in self._classes.values()]
        return sorted(rows, key=lambda row: row.kind != "LLM judge")

    def _row(self, cls: type[Grader]) -> CatalogRow:
        return CatalogRow(
            id=cls.id,
            label=cls.label,
            kind="LLM judge" if cls.llm else "Deterministic",
            scale=scale_label(float(cls.min_score), float(cls.max_score), binary=cls.binary),
            selection_label=f"{cls.label} "
            + scale_label(float(cls.min_score), float(cls.max_score), binary=cls.binary),
            observes_actions=cls.observes_actions,
            sees_tool_calls=cls.sees_tool_calls if cls.llm else None,
            needs=cls.needs,
            description=cls.description,
            source=self._sources[cls.id],
            owns=tuple(cls.owns),
            evidence=tuple(sorted(evidence_of(cls))),
        )


def _entry_point_order(entry_point: metadata.EntryPoint) -> tuple[int, str, str]:
    dist = getattr(entry_point, "dist", None)
    own = dist is not None and dist.metadata["Name"] == "tracegrade"
    if own and entry_point.name in _BUILTIN_ORDER:
        return (0, f"{_BUILTIN_ORDER.index(entry_point.name):03d}", "")
    return (1, entry_point.value, entry_point.name)


@functools.cache
def load_registry() -> GraderRegistry:
    """Every grader installed in this environment, validated; cached for the process.

    Call `load_registry.cache_clear()` after installing a plugin in-process.
    """
    return GraderRegistry.from_entry_points(installed_entry_points(GROUP))
