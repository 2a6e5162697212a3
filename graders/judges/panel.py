"""Judge panels: several judge models score one response independently, and the panel's score is
their aggregate. A panel whose members disagree beyond a set spread sends the question to Review
(a required check a person decides with `tracegrade label`) instead of deciding.

A judge grader takes a panel through its options:

    graders:
      - id: relevance_grader
        judges: [{model: judge-a}, {model: judge-b}, {model: judge-c, base_url: http://...}]
        aggregate: median        # median (default) | mean | majority (pass/fail judges: majority)
        max_spread: 2            # on the grader's scale; default half of it
      - id: accuracy_grader
        panel: strict            # a named panel from the config's `judge_panels:`

Each member is a `judge:` block laid over the config's own (so `{model: b}` changes only the
model); `name:` labels a member (default: its model). Each member is cached, rate-limited,
retried and redacted like a single judge, and a member's outage is the grader's error (never a
decision by the members that answered)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import ConfigError

__all__ = [
    "AGGREGATES",
    "PANEL_CHECK_SUFFIX",
    "Panel",
    "PanelDecision",
    "PanelMember",
    "panel_from_options",
]

AGGREGATES = ("median", "mean", "majority")
PANEL_OPTIONS = ("judges", "panel", "aggregate", "max_spread")
PANEL_CHECK_SUFFIX = ":panel"
"""The Review check a split panel leaves: `<grader id>:panel`."""


@dataclass(frozen=True, slots=True)
class PanelMember:
    """One judge of a panel."""

    label: str
    """How reports name it: its `name:`, else its model."""
    block: Mapping[str, Any]
    """Its judge block: the config's `judge:` block with the member's keys laid over it."""


@dataclass(frozen=True, slots=True)
class PanelDecision:
    """What a panel concluded from its members' scores."""

    score: float | None
    """The aggregate on the grader's scale; None when the panel sends the question to Review."""
    spread: float
    """Highest minus lowest member score."""
    review: str | None = None
    """Why a person must decide (the members disagree too much); None when the panel decided."""


@dataclass(frozen=True, slots=True)
class Panel:
    """A judge grader's panel: its members, how their scores combine, how far they may differ."""

    members: tuple[PanelMember, ...]
    aggregate: str
    """`median`, `mean` or `majority` (each member a pass/fail vote at the scale's midpoint)."""
    max_spread: float | None
    """Largest spread the panel decides on; beyond it, Review. None: majority alone decides
    (a pass/fail panel's default), a tie goes to Review."""
    name: str | None = None
    """The named panel (`judge_panels:`) it came from, if any."""

    def decide(
        self, scores: Sequence[float], *, min_score: float, max_score: float
    ) -> PanelDecision:
        spread = max(scores) - min(scores)
        shown = ", ".join(f"{m.label}={s:g}" for m, s in zip(self.members, scores, strict=True))
        if self.max_spread is not None and spread > self.max_spread:
            return PanelDecision(
                None,
                spread,
                f"the panel disagrees ({shown}): spread {spread:g} is over {self.max_spread:g}",
            )
        if self.aggregate == "majority":
            midpoint = (min_score + max_score) / 2
            votes = sum(1 for s in scores if s > midpoint)
            if 2 * votes == len(scores):
                return PanelDecision(None, spread, f"the panel is split evenly ({shown})")
            return PanelDecision(max_score if 2 * votes > len(scores) else min_score, spread)
        if self.aggregate == "mean":
            return PanelDecision(statistics.fmean(scores), spread)
        return PanelDecision(float(statistics.median(scores)), spread)

    def identity(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "aggregate": self.aggregate,
            "max_spread": self.max_spread,
            "members": [m.label for m in self.members],
        }


def panel_from_options(
    options: Mapping[str, Any],
    *,
    grader_id: str,
    binary: bool,
    min_score: float,
    max_score: float,
    judge_block: Mapping[str, Any] | None,
    named_panels: Mapping[str, Any],
) -> Panel | None:
    """The panel a judge grader's options ask for (None: a single judge). Bad options raise
    `ConfigError` naming the option."""
    given = [k for k in PANEL_OPTIONS if k in options]
    if not given:
        return None
    if "judges" in options and "panel" in options:
        raise ConfigError(
            f"{grader_id}: give either judges: (a panel of its own) or panel: (a named one)",
            key="panel",
        )
    spec: Mapping[str, Any] = options
    name = None
    if "panel" in options:
        name = options["panel"]
        if not isinstance(name, str) or name not in named_panels:
            known = ", ".join(sorted(named_panels)) or "none"
            raise ConfigError(
                f"{grader_id}: no judge panel named {name!r} (judge_panels: {known})",
                key="panel",
            )
        spec = {**named_panels[name], **{k: options[k] for k in given if k != "panel"}}
    elif "judges" not in options:
        raise ConfigError(
            f"{grader_id}: {', '.join(given)} without a panel; add judges: [...] or panel: NAME",
            key=given[0],
        )
    members = _members(spec.get("judges"), grader_id=grader_id, judge_block=judge_block)
    aggregate = spec.get("aggregate", "majority" if binary else "median")
    if aggregate not in AGGREGATES:
        raise ConfigError(
            f"{grader_id}: aggregate must be one of {', '.join(AGGREGATES)}, not {aggregate!r}",
            key="aggregate",
        )
    if binary and aggregate != "majority":
        raise ConfigError(
            f"{grader_id} answers pass/fail: its panel votes (aggregate: majority)",
            key="aggregate",
        )
    max_spread = spec.get("max_spread")
    if max_spread is None:
        max_spread = None if aggregate == "majority" else (max_score - min_score) / 2
    elif (
        isinstance(max_spread, bool)
        or not isinstance(max_spread, (int, float))
        or not 0 <= max_spread <= max_score - min_score
    ):
        raise ConfigError(
            f"{grader_id}: max_spread must be a number from 0 to {max_score - min_score:g} "
            "(on the grader's scale)",
            key="max_spread",
        )
    return Panel(
        members=members,
        aggregate=aggregate,
        max_spread=None if max_spread is None else float(max_spread),
        name=name,
    )


def _members(
    raw: Any, *, grader_id: str, judge_block: Mapping[str, Any] | None
) -> tuple[PanelMember, ...]:
    if not isinstance(raw, list) or len(raw) < 2:
        raise ConfigError(
            f"{grader_id}: judges must list at least two judge blocks (one judge is not a panel)",
            key="judges",
        )
    members = []
    for index, entry in enumerate(raw):
        if not isinstance(entry, Mapping):
            raise ConfigError(
                f"{grader_id}: judges[{index}] must be a judge block ({{model: ...}})",
                key=f"judges.{index}",
            )
        block = {**(judge_block or {}), **{k: v for k, v in entry.items() if k != "name"}}
        label = entry.get("name") or block.get("model") or block.get("chat_model")
        if not isinstance(label, str) or not label:
            label = f"judge {index + 1}"
        members.append(PanelMember(label=label, block=block))
    labels = [m.label for m in members]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise ConfigError(
            f"{grader_id}: two panel members are both {twice[0]!r}; give them distinct name:s",
            key="judges",
        )
    return tuple(members)
