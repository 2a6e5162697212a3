"""The check plan: before any agent runs, which expectation of which question is checked by which
grader from which evidence. Built once per target and run by `check_plan`; every entry point
(`run`, the pytest plugin, `grade-traces`, `receive`, the API) prepares its run through it, the
run's identity keeps it, and every report shows it.

The rules, the same for every source:
- a dataset key a question carries whose owning grader (`Grader.owns`) is not attached attaches
  an owner with the safe defaults (must pass, full score), announced in one line; a target opts
  out only by naming the key in `unchecked:`, and every report then names it unchecked;
- a grader whose evidence (`Grader.evidence`) the source cannot give is "not applicable here",
  with the reason: it is not run (never an error, never a silent pass) and every report says so;
- a target where nothing at all can be checked is nothing to run (exit 5), with the reason.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..graders.declarations import (
    SOURCES,
    evidence_of,
    keys_of_row,
    missing_reason,
    owned_keys,
    source_evidence,
)
from ..inputs.config import GraderEntry, TargetConfig
from ..records import GraderSpec

__all__ = ["CheckPlan", "PlannedKey", "check_plan", "plan_lines", "plan_notes"]


@dataclass(frozen=True, slots=True)
class PlannedKey:
    """One dataset key of a target's questions, and how the plan checks it."""

    key: str
    questions: tuple[str, ...]
    """The ids of the questions that carry it."""
    status: str
    """"checked" (an attached grader owns it), "attached" (the plan attached its owner),
    "unchecked" (the target's `unchecked:` names it), "not applicable" (no owner can be
    given the evidence it needs here) or "not checked" (only a judge owns it, and the plan
    attaches no judge)."""
    graders: tuple[str, ...] = ()
    """The graders that check it (none when unchecked or not applicable)."""
    reason: str = ""
    """Why it is unchecked or not applicable."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "questions": list(self.questions),
            "status": self.status,
            "graders": list(self.graders),
            "reason": self.reason,
        }


@dataclass(slots=True)
class CheckPlan:
    """One target's check plan (`check_plan`)."""

    target: str
    source: str
    """"run", "pytest", "grade" or "traces" (`tracegrade.graders.declarations.SOURCES`)."""
    evidence: tuple[str, ...]
    """What the source gives this target's graders."""
    keys: list[PlannedKey] = field(default_factory=list)
    graders: list[str] = field(default_factory=list)
    """The graders that run: attached by the target, or by the plan."""
    not_applicable: dict[str, str] = field(default_factory=dict)
    """Attached graders that do not run here, by id, with the reason."""
    unchecked_questions: list[str] = field(default_factory=list)
    """Questions carrying expectations none of which can be checked here."""
    additions: list[GraderEntry] = field(default_factory=list)
    """What the plan attaches (the safe defaults: must pass at full score)."""

    @property
    def attached(self) -> list[str]:
        return [e.id for e in self.additions]

    @property
    def unchecked(self) -> list[str]:
        """The keys the target leaves unchecked on purpose."""
        return [k.key for k in self.keys if k.status == "unchecked"]

    @property
    def nothing_checkable(self) -> str | None:
        """Why nothing at all can be checked on this target here, or None."""
        if self.graders:
            return None
        reasons = [f"{g} {why}" for g, why in self.not_applicable.items()]
        reasons += [f"{k.key}: {k.reason}" for k in self.keys if k.reason]
        detail = "; ".join(reasons) or "no grader is attached"
        return f"target {self.target}: nothing can be checked from {self.source} ({detail})"

    def notes(self) -> list[str]:
        """What every report says about the plan (`plan_notes`)."""
        return plan_notes(self.target, self.as_dict())

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "evidence": list(self.evidence),
            "graders": list(self.graders),
            "attached": self.attached,
            "unchecked": self.unchecked,
            "not_applicable": dict(self.not_applicable),
            "unchecked_questions": list(self.unchecked_questions),
            "keys": [k.as_dict() for k in self.keys],
        }


def _safe_default(cls: Any) -> GraderEntry:
    return GraderEntry(id=cls.id, spec=GraderSpec(must_pass=True, threshold=float(cls.max_score)))


def _check_unchecked(target: TargetConfig, known: Sequence[str]) -> None:
    for index, key in enumerate(target.unchecked):
        if key in known:
            continue
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        raise ConfigError(
            f"target {target.name!r}: unchecked names {key!r}, which no grader checks",
            **target.where("unchecked", index),
            hint=f"did you mean {close[0]!r}?" if close else f"keys: {', '.join(known)}",
        )


def check_plan(
    target: TargetConfig,
    questions: Iterable[Any],
    attached: Sequence[Any],
    *,
    source: str,
    judge: bool,
    registry: Any = None,
) -> CheckPlan:
    """The check plan of `target` over `questions` (rows, or `Question`s) with `attached` (the
    grader classes or instances the target attaches) on `source`. A key in `unchecked:` that no
    grader owns is invalid input (exit 4)."""
    if registry is None:
        from ..graders.registry import load_registry

        registry = load_registry()
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r}")
    given = source_evidence(
        source,
        judge=judge,
        environment=source not in ("run", "pytest") or target.environment is not None,
    )
    # A target's own graders lack only what the source never gives: a missing judge block or
    # environment factory for a grader the target names is its config's error (exit 4).
    source_given = SOURCES[source] | ({"judge"} if not judge else set())
    plan = CheckPlan(target=target.name, source=source, evidence=tuple(sorted(given)))
    running: list[Any] = []
    for grader in attached:
        lacking = sorted(evidence_of(grader) - source_given)
        if lacking:
            plan.not_applicable[grader.id] = missing_reason(source, lacking[0])
        else:
            running.append(grader)
    known = registry.owned_keys()
    _check_unchecked(target, known)
    rows = [q.row() if hasattr(q, "row") else dict(q) for q in questions]
    carried = {str(r.get("id")): keys_of_row(r, known) for r in rows}
    checkable_questions: set[str] = set()
    for key in known:
        ids = tuple(qid for qid, keys in carried.items() if key in keys)
        if not ids:
            continue
        own = [g.id for g in running if key in owned_keys(g)]
        if own:  # an attached grader checks it, whatever `unchecked:` says
            planned = PlannedKey(key, ids, "checked", tuple(own))
        elif key in target.unchecked:
            planned = PlannedKey(key, ids, "unchecked", reason="the target's unchecked:")
        else:
            planned = _attach_owner(key, ids, registry, given, source, plan, attached)
            if planned.status == "attached":
                running.append(registry.get(planned.graders[0]))
        if planned.status in ("checked", "attached"):
            checkable_questions.update(ids)
        plan.keys.append(planned)
    plan.graders = [g.id for g in running]
    plan.unchecked_questions = [
        qid for qid, keys in carried.items() if keys and qid not in checkable_questions
    ]
    return plan


def _attach_owner(
    key: str,
    ids: tuple[str, ...],
    registry: Any,
    given: frozenset[str],
    source: str,
    plan: CheckPlan,
    attached: Sequence[Any],
) -> PlannedKey:
    owners = registry.owners(key)
    already = {g.id: g for g in attached}
    lacking_of = {c.id: sorted(evidence_of(c) - given) for c in owners}
    for cls in owners:
        if cls.id in already:  # attached, and not applicable here
            return PlannedKey(key, ids, "not applicable", (cls.id,), plan.not_applicable[cls.id])
    for cls in owners:
        if not lacking_of[cls.id] and not cls.llm:
            if cls.id not in plan.attached:
                plan.additions.append(_safe_default(cls))
            return PlannedKey(key, ids, "attached", (cls.id,))
    if all(c.llm for c in owners):
        # A judge is never attached behind the config's back (it costs a model call per
        # question, and must pass at 5 of 5 would fail most good answers): said, not silent.
        names = " or ".join(c.id for c in owners)
        why = f"its graders ask a judge model: attach {names}, or name it in `unchecked:`"
        return PlannedKey(key, ids, "not checked", (), why)
    first = owners[0]
    why = f"{first.id} {missing_reason(source, lacking_of[first.id][0])}"
    return PlannedKey(key, ids, "not applicable", (), why)


def plan_notes(target: str, plan: Mapping[str, Any] | None) -> list[str]:
    """What every report says about a target's plan (a `CheckPlan.as_dict()`, as the run's
    identity keeps it): one line per kind of decision; nothing for a plan that decided
    nothing a person must know (every key checked by a grader the target attached)."""
    if not plan:
        return []
    out = []
    keys = list(plan.get("keys") or [])
    attached = [k for k in keys if k["status"] == "attached"]
    if attached:
        owners = list(dict.fromkeys(g for k in attached for g in k["graders"]))
        out.append(
            f"{target}: the dataset's {', '.join(k['key'] for k in attached)} had no attached "
            f"grader: attached {', '.join(owners)} (must pass, full score); name a key in the "
            "target's `unchecked:` to leave it unchecked"
        )
    unchecked = [k["key"] for k in keys if k["status"] == "unchecked"]
    if unchecked:
        out.append(f"{target}: unchecked: {', '.join(unchecked)} (the target's `unchecked:`)")
    not_applicable = dict(plan.get("not_applicable") or {})
    for grader_id, why in not_applicable.items():
        out.append(f"{target}: {grader_id} not applicable here: {why}")
    for k in keys:
        if k["status"] == "not applicable" and not set(k["graders"]) & set(not_applicable):
            out.append(f"{target}: {k['key']} not applicable here: {k['reason']}")
        elif k["status"] == "not checked":
            out.append(f"{target}: {k['key']} not checked: {k['reason']}")
    questions = list(plan.get("unchecked_questions") or [])
    if questions:
        more = "..." if len(questions) > 5 else ""
        out.append(
            f"{target}: {len(questions)} question(s) have no expectation that can be checked "
            f"here: {', '.join(questions[:5])}{more}"
        )
    return out


def plan_lines(plans: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The plan as `tracegrade targets --plan` and `validate` print it: per target, each key
    with its questions and grader, then what does not run and why (`CheckPlan.as_dict()`s)."""
    lines = []
    for name, plan in plans.items():
        lines.append(f"{name} (from {plan['source']}: {', '.join(plan['evidence'])})")
        for k in plan["keys"]:
            n = len(k["questions"])
            what = f"{k['key']} ({n} question{'s' if n != 1 else ''})"
            if k["status"] in ("checked", "attached"):
                by = ", ".join(k["graders"])
                extra = (
                    " [attached by the plan: must pass, full score]"
                    if k["status"] == "attached"
                    else ""
                )
                lines.append(f"  {what} -> {by}{extra}")
            else:
                lines.append(f"  {what} -> {k['status']}: {k['reason']}")
        others = [g for g in plan["graders"] if not any(g in k["graders"] for k in plan["keys"])]
        if others:
            lines.append(f"  every question -> {', '.join(others)}")
        for grader_id, why in plan["not_applicable"].items():
            lines.append(f"  {grader_id}: not applicable here: {why}")
        if not plan["graders"]:
            lines.append("  nothing can be checked")
    return lines
