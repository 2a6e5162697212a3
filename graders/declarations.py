"""What a grader checks and what it needs to check it: the typed declarations the check plan
reads (`owns`, `evidence`), and the evidence each source of question runs can give.

A grader declares the dataset keys it owns (`owns = ("trajectory",)`: a question carrying the
key is checked by it) and the evidence it grades from (`evidence = ("tool_calls",)`). Both are
validated when the grader registers (`tracegrade.graders.registry`), built-ins and plugins alike.
Before any agent runs, the check plan (`tracegrade.verdicts.plan`) matches every key a question
carries to an attached grader that owns it, attaching the key's owner when none is, and marks a
grader whose evidence the source cannot give "not applicable here".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "EVIDENCE",
    "SOURCES",
    "declaration_problem",
    "evidence_of",
    "keys_of_row",
    "owned_keys",
    "source_evidence",
]

EVIDENCE: dict[str, str] = {
    "answer": "the agent's answer",
    "tool_calls": "the tool-call record",
    "environment": "the live environment the agent's tools changed",
    "usage": "the tokens and cost the agent's model calls reported",
    "interrupts": "the interrupts the agent stopped on",
    "judge": "a judge model (the config's judge: block)",
}
"""Every kind of evidence a grader may need, with how reports name it."""

SOURCES: dict[str, frozenset[str]] = {
    # a run, and the pytest plugin (a run one question at a time): everything
    "run": frozenset(EVIDENCE),
    "pytest": frozenset(EVIDENCE),
    # a stored run graded again: what the store and trace file kept; a live environment's
    # verdict is carried over from the run's own grading (it closed with the question)
    "grade": frozenset(EVIDENCE),
    # traces made elsewhere (grade-traces, receive): never a live environment; usage only where
    # the spans carry token counts (decided per trace)
    "traces": frozenset({"answer", "tool_calls", "interrupts", "usage", "judge"}),
}
"""The evidence each source of question runs can give (the judge only with a `judge:` block)."""

_WHY_NOT: dict[tuple[str, str], str] = {
    ("traces", "environment"): "a trace carries no live environment to check state against",
}

_KEY = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*")


def source_evidence(source: str, *, judge: bool, environment: bool = True) -> frozenset[str]:
    """What `source` gives a grader: its evidence, less the judge without a `judge:` block and
    the environment for a target without an `environment:` factory."""
    given = set(SOURCES[source])
    if not judge:
        given.discard("judge")
    if not environment:
        given.discard("environment")
    return frozenset(given)


def missing_reason(source: str, kind: str) -> str:
    """Why `source` cannot give evidence `kind`, in the words every report uses."""
    known = _WHY_NOT.get((source, kind))
    if known:
        return known
    if kind == "judge":
        return "it asks a judge model and the config has no judge: block"
    if kind == "environment":
        return "the target declares no environment: factory"
    return f"{EVIDENCE.get(kind, kind)} is not available from {source}"


def evidence_of(grader: Any) -> frozenset[str]:
    """What a grader (class or instance) needs: its declared `evidence`, plus a judge for an
    LLM grader, plus the live environment for one that says it `reads_environment`."""
    declared = set(getattr(grader, "evidence", ()) or ())
    if getattr(grader, "llm", False):
        declared.add("judge")
    if getattr(grader, "reads_environment", False):
        declared.add("environment")
    return frozenset(declared or {"answer"})


def owned_keys(grader: Any) -> tuple[str, ...]:
    """The dataset keys a grader (class or instance) owns."""
    return tuple(getattr(grader, "owns", ()) or ())


def declaration_problem(cls: Any) -> str | None:
    """What is wrong with a grader class's `owns` / `evidence` declarations, or None."""
    for name in ("owns", "evidence"):
        value = getattr(cls, name, ())
        if isinstance(value, str) or not isinstance(value, Iterable):
            return f"`{name}` must be a tuple of strings, got {value!r}"
        if not all(isinstance(v, str) for v in value):
            return f"`{name}` must be a tuple of strings, got {value!r}"
    bad_keys = [k for k in cls.owns if not _KEY.fullmatch(k)]
    if bad_keys:
        return (
            f"`owns` names {bad_keys[0]!r}: a dataset key is lower-case letters, digits and "
            "'_', dotted for a nested key (metadata.state)"
        )
    unknown = [e for e in cls.evidence if e not in EVIDENCE]
    if unknown:
        return f"`evidence` names {unknown[0]!r}: one of {', '.join(EVIDENCE)}"
    return None


def keys_of_row(row: Mapping[str, Any], owned: Iterable[str]) -> list[str]:
    """Which of the `owned` keys a question row carries (a nested key by its dotted path; the
    keys a multi-turn question's turns carry count as the question's)."""
    rows = [row]
    turns = row.get("turns")
    if isinstance(turns, list):
        rows += [t for t in turns if isinstance(t, Mapping)]
    found = []
    for key in owned:
        for r in rows:
            value: Any = r
            for part in key.split("."):
                value = value.get(part) if isinstance(value, Mapping) else None
                if value is None:
                    break
            if value is not None:
                found.append(key)
                break
    return found
