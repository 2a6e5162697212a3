"""Judge validation on gold labels: for each LLM judge dimension in a run, how far the judge's
scores agree with people's (exact agreement, Cohen's kappa — quadratic-weighted on ordinal
scales —, mean absolute error, the confusion matrix, the questions that disagree most), and a
verdict against a floor, so a judge prompt change is gated like an agent change.

Works on question results in the JSON report's shape (`questions[*].graders[*]`), from a
results file or a stored run. A judge's dimension is the one its class declares; a person's
ordinal score is compared on the judge's own scale (judge scores rounded to the nearest step),
a pass/fail label with the judge's pass bar."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import InputError, suggest
from ..inputs.gold import GoldLabel, GoldLabels
from ..verdicts.scoring import passes
from .agreement import Agreement, agreement

__all__ = ["DimensionReport", "JudgeValidation", "validate_judges", "with_panel_members"]


@dataclass(frozen=True, slots=True)
class Disagreement:
    """A question where the judge and the person differ."""

    target: str
    question: str
    gold: Any
    judged: Any
    distance: float


@dataclass(frozen=True, slots=True)
class DimensionReport:
    """Agreement of one judge dimension with its gold labels."""

    dimension: str
    """The judge's dimension (what gold labels key on)."""
    graders: list[str]
    """Grader ids in the run that judge this dimension."""
    kind: str
    """`ordinal` (scores on the judge's scale) or `pass/fail`."""
    agreement: Agreement
    """The statistics."""
    labels: int
    """Gold labels for this dimension."""
    unmatched: list[str] = field(default_factory=list)
    """Labelled questions the run has no judge score for (not run, skipped or errored)."""
    disagreements: list[Disagreement] = field(default_factory=list)
    """The questions that disagree most, largest distance first."""
    passed: bool | None = None
    """Against the floor: True/False; None when no floor was set."""
    reason: str = ""
    """Why it failed the floor, in words."""


@dataclass(frozen=True, slots=True)
class JudgeValidation:
    """The result of `tracegrade judges validate`."""

    dimensions: list[DimensionReport]
    min_kappa: float | None

    @property
    def exit_code(self) -> int:
        return 2 if any(d.passed is False for d in self.dimensions) else 0


def _judge_scores(
    questions: Sequence[Mapping[str, Any]], judges: Mapping[str, str]
) -> dict[str, dict[tuple[str, str], dict[str, Any]]]:
    """dimension -> (target, question) -> the judge's grader entry (scored ones only)."""
    out: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
    for q in questions:
        for g in q.get("graders", ()):
            dimension = judges.get(g["id"])
            if dimension is None or g.get("score") is None or g.get("error"):
                continue
            out.setdefault(dimension, {})[(q["target"], str(q["id"]))] = g
    return out


def _scale(judged: Mapping[str, Any]) -> tuple[int, int]:
    return round(float(judged.get("min", 0))), round(float(judged.get("max", 5)))


def _pair(label: GoldLabel, judged: Mapping[str, Any]) -> tuple[Any, Any, float]:
    if label.score is not None:
        low, high = _scale(judged)
        score = min(max(round(float(judged["score"])), low), high)
        return label.score, score, abs(label.score - float(judged["score"]))
    judged_pass = bool(judged.get("passed"))
    return label.passed, judged_pass, 0.0 if label.passed == judged_pass else 1.0


def validate_judges(
    questions: Sequence[Mapping[str, Any]],
    gold: GoldLabels,
    *,
    dimension_of: Callable[[str], str | None],
    min_kappa: float | None = None,
    worst: int = 5,
) -> JudgeValidation:
    """Agreement per judge dimension. `dimension_of(grader_id)` names an LLM judge's dimension
    (None for other graders). A gold dimension no judge in the run has is invalid input, with
    a did-you-mean; a dimension whose kappa is undefined or under `min_kappa` fails."""
    judges = {
        g["id"]: d
        for q in questions
        for g in q.get("graders", ())
        if (d := dimension_of(g["id"])) is not None
    }
    known = sorted(set(judges.values()))
    for dimension in gold.dimensions():
        if dimension not in known:
            close = suggest(dimension, known)
            label = gold.of(dimension)[0]
            raise InputError(
                f"gold labels name dimension {dimension!r}, which no LLM judge in the run has",
                file=str(gold.path),
                line=label.line,
                key="dimension",
                hint=(f"did you mean {close!r}? " if close else "")
                + f"judged dimensions: {', '.join(known) or '(none)'}",
            )
    scores = _judge_scores(questions, judges)
    reports = []
    for dimension in gold.dimensions():
        labels = gold.of(dimension)
        judged = scores.get(dimension, {})
        ordinal = any(label.score is not None for label in labels)
        pairs, unmatched, disagreements = [], [], []
        for label in labels:
            if ordinal != (label.score is not None):
                raise InputError(
                    f"dimension {dimension!r} mixes scores and pass/fail labels",
                    file=str(gold.path),
                    line=label.line,
                    key="score" if label.score is not None else "pass",
                )
            keys = [k for k in judged if k[1] == label.question]
            if label.target is not None:
                keys = [k for k in keys if k[0] == label.target]
            if not keys:
                unmatched.append(label.question)
            for key in keys:
                gold_value, judged_value, distance = _pair(label, judged[key])
                pairs.append((gold_value, judged_value))
                if distance:
                    disagreements.append(
                        Disagreement(key[0], key[1], gold_value, judged_value, distance)
                    )
        categories = None
        if ordinal and judged:
            any_entry = next(iter(judged.values()))
            low, high = _scale(any_entry)
            seen = {v for p in pairs for v in p}
            categories = sorted(set(range(low, high + 1)) | seen)
        elif not ordinal:
            categories = [False, True]
        stats = agreement(pairs, categories=categories, ordinal=ordinal)
        passed, reason = None, ""
        if min_kappa is not None:
            if stats.kappa is None:
                passed, reason = False, "kappa is undefined (no pairs, or no variation)"
            elif stats.kappa < min_kappa:
                passed, reason = False, f"kappa {stats.kappa:.3f} < floor {min_kappa:g}"
            else:
                passed = True
        disagreements.sort(key=lambda d: (-d.distance, d.target, d.question))
        reports.append(
            DimensionReport(
                dimension=dimension,
                graders=sorted(g for g, d in judges.items() if d == dimension),
                kind="ordinal" if ordinal else "pass/fail",
                agreement=stats,
                labels=len(labels),
                unmatched=unmatched,
                disagreements=disagreements[:worst],
                passed=passed,
                reason=reason,
            )
        )
    return JudgeValidation(dimensions=reports, min_kappa=min_kappa)


def with_panel_members(
    questions: Sequence[Mapping[str, Any]],
    gold: GoldLabels,
    dimension_of: Callable[[str], str | None],
) -> tuple[list[dict[str, Any]], GoldLabels, Callable[[str], str | None], set[str]]:
    """Each member of a judge panel as a judge of its own, so its agreement with the gold
    labels stands beside the panel's: grader `relevance_grader[judge-a]`, dimension
    `relevance [judge-a]`, labelled with the panel dimension's gold labels. Returns the
    questions, gold labels and `dimension_of` to validate with, and the member dimensions
    (reported, not gated: the panel is what the run uses)."""
    members: dict[str, str] = {}
    out = []
    for q in questions:
        graders = list(q.get("graders", ()))
        for g in list(graders):
            panel = (g.get("details") or {}).get("panel")
            dimension = dimension_of(g["id"])
            if not isinstance(panel, list) or dimension is None:
                continue
            for m in panel:
                if not isinstance(m, Mapping) or m.get("score") is None:
                    continue
                gid = f"{g['id']}[{m.get('judge')}]"
                members[gid] = f"{dimension} [{m.get('judge')}]"
                score = float(m["score"])
                passed = passes(  # the member's own verdict by the grader's pass rule
                    score,
                    min_score=float(g.get("min", 0)),
                    max_score=float(g.get("max", 5)),
                    binary=bool(g.get("binary")),
                    threshold=float(g.get("threshold", 0)),
                )
                graders.append(
                    {
                        **{k: v for k, v in g.items() if k not in ("details", "checks")},
                        "id": gid,
                        "score": score,
                        "error": False,
                        "passed": passed,
                    }
                )
        out.append({**q, "graders": graders})
    if not members:
        return out, gold, dimension_of, set()
    extra = [
        replace(label, dimension=member_dimension)
        for member_dimension in sorted(set(members.values()))
        for label in gold.of(member_dimension.split(" [", 1)[0])
    ]
    expanded = GoldLabels(path=gold.path, labels=(*gold.labels, *extra))

    def of(grader_id: str) -> str | None:
        return members.get(grader_id) or dimension_of(grader_id)

    return out, expanded, of, set(members.values())
