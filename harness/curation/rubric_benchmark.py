"""Rubric threshold tuning on gold labels: the rubric judge's stored outcome probabilities are
re-decided under candidate pass/fail thresholds (by the same code that decided them in the run),
the pair agreeing best with people's pass/fail labels on a tuning split is chosen, and the same
figures are reported on a held-out split that tuning never saw.

Agreement is the share of labelled checks whose decision equals the person's: a Review is never
agreement (it hands the check to a person), so tuning trades Review against wrong decisions.
Only pairs with pass + fail > 1 are searched (Pass and Fail can then never both fire)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..graders.rubrics.model import Thresholds

__all__ = [
    "BenchmarkItem",
    "BenchmarkResult",
    "Figures",
    "benchmark",
    "benchmark_items",
    "describe",
    "figures",
    "grid",
]


@dataclass(frozen=True, slots=True)
class BenchmarkItem:
    """One labelled check of one question."""

    question: str
    split: str | None
    check: str
    gold_pass: bool
    decide: Callable[[Thresholds], str]
    """The check's status (`pass`/`fail`/`review`/`skipped`) under given thresholds."""


@dataclass(frozen=True, slots=True)
class Figures:
    """How decisions under one threshold pair compare with the gold labels."""

    n: int
    """Labelled checks the rubric applied to (skipped ones left out)."""
    agreement: float | None
    """Share decided as the person decided."""
    review_rate: float | None
    """Share left in Review."""
    decided_error_rate: float | None
    """Of the decided checks, the share decided against the person."""
    false_pass_rate: float | None
    """Of the checks the person failed, the share decided Pass."""
    false_fail_rate: float | None
    """Of the checks the person passed, the share decided Fail."""
    skipped: int = 0
    """Labelled checks the rubric skipped as not applicable."""


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def figures(items: Iterable[BenchmarkItem], thresholds: Thresholds) -> Figures:
    decided = agree = review = skipped = false_pass = false_fail = 0
    gold_fail = gold_pass = 0
    for item in items:
        status = item.decide(thresholds)
        if status == "skipped":
            skipped += 1
            continue
        gold_pass += item.gold_pass
        gold_fail += not item.gold_pass
        if status == "review":
            review += 1
            continue
        decided += 1
        if (status == "pass") == item.gold_pass:
            agree += 1
        elif status == "pass":
            false_pass += 1
        else:
            false_fail += 1
    n = decided + review
    return Figures(
        n=n,
        agreement=_share(agree, n),
        review_rate=_share(review, n),
        decided_error_rate=_share(decided - agree, decided),
        false_pass_rate=_share(false_pass, gold_fail),
        false_fail_rate=_share(false_fail, gold_pass),
        skipped=skipped,
    )


def grid(step: float = 0.05) -> list[Thresholds]:
    """Every (pass, fail) on a `step` grid in [0.5, 1) x (0, 1) with pass + fail > 1."""
    count = round(1 / step)
    values = [round(i * step, 6) for i in range(1, count)]
    return [
        Thresholds.model_validate({"pass": p, "fail": f})
        for p in values
        if p >= 0.5
        for f in values
        if p + f > 1 + 1e-9
    ]


@dataclass(frozen=True, slots=True)
class BenchmarkResult:
    defaults: Thresholds
    tuned: Thresholds
    tune_split: str
    confirm_split: str
    tune: dict[str, Figures] = field(default_factory=dict)
    """`defaults` and `tuned` figures on the tuning split."""
    confirm: dict[str, Figures] = field(default_factory=dict)
    """The same on the held-out split."""


def _key(f: Figures, t: Thresholds, defaults: Thresholds) -> tuple:
    # Best agreement; then fewer wrong decisions; then the pair nearest the defaults.
    distance = abs(t.pass_ - defaults.pass_) + abs(t.fail - defaults.fail)
    return (-(f.agreement or 0.0), f.decided_error_rate or 0.0, distance, t.pass_, t.fail)


def benchmark(
    items: Sequence[BenchmarkItem],
    *,
    tune_split: str,
    confirm_split: str,
    defaults: Thresholds,
    candidates: Sequence[Thresholds] | None = None,
) -> BenchmarkResult:
    """Tune on `tune_split` only; report both splits for the defaults and the tuned pair."""
    tune = [i for i in items if i.split == tune_split]
    held = [i for i in items if i.split == confirm_split]
    pairs = list(candidates) if candidates is not None else grid()
    scored = [(figures(tune, t), t) for t in pairs]
    best = min(scored, key=lambda ft: _key(ft[0], ft[1], defaults))[1]
    return BenchmarkResult(
        defaults=defaults,
        tuned=best,
        tune_split=tune_split,
        confirm_split=confirm_split,
        tune={"defaults": figures(tune, defaults), "tuned": figures(tune, best)},
        confirm={"defaults": figures(held, defaults), "tuned": figures(held, best)},
    )


def describe(figures_: Figures) -> dict[str, Any]:
    return {
        "n": figures_.n,
        "agreement": figures_.agreement,
        "review_rate": figures_.review_rate,
        "decided_error_rate": figures_.decided_error_rate,
        "false_pass_rate": figures_.false_pass_rate,
        "false_fail_rate": figures_.false_fail_rate,
        "skipped": figures_.skipped,
    }


def _stored_checks(run_dir: Any, rubric: Any) -> Iterable[tuple[Any, dict[str, Any]]]:
    """(question score, check entry) of every judged check of `rubric` in the run's latest
    grading."""
    from ..rundir.directory import RunDirectory

    with RunDirectory(run_dir).read_store() as store:
        questions = store.load_scores()
    for q in questions:
        for g in q.graders:
            for c in g.checks:
                if (
                    c.get("rubric") == rubric.id
                    and c.get("rubric_version") == rubric.version
                    and c.get("questions")
                    and c.get("status") != "error"
                ):
                    yield q, c


def benchmark_items(
    run_dir: Any, *, rubric: Any, gold: Any, run_thresholds: Thresholds | None = None
) -> tuple[list[BenchmarkItem], list[str]]:
    """The labelled judged checks of `rubric` in a stored run, each able to re-decide itself
    under other thresholds; and notes (labels with no judged check, checks whose own threshold
    override keeps them out of tuning). Tool-claim and escalation checks read the question's
    tool-call record back from the run's trace file, as they did in the run."""

    from ..capture.tracefile import read_records
    from ..graders.rubrics.evidence import Evidence, gather_evidence
    from ..graders.rubrics.judge_kinds import interpret
    from ..rundir.directory import RunDirectory

    labels = {(label.target, label.question, label.dimension): label for label in gold.labels}
    checks = {c.id: c for c in rubric.checks}
    records: dict[str, dict] = {}
    items: list[BenchmarkItem] = []
    notes: list[str] = []
    used: set[tuple] = set()
    for q, entry in _stored_checks(run_dir, rubric):
        label = labels.get((q.target, q.id, entry["id"])) or labels.get((None, q.id, entry["id"]))
        check = checks.get(entry["id"])
        if label is None or check is None or label.passed is None:
            continue
        used.add((label.target, label.question, label.dimension))
        if check.thresholds is not None:
            notes.append(f"{q.id}/{check.id}: the check's own thresholds are kept")
        by_role = {s["role"]: s["probabilities"] for s in entry["questions"]}
        evidence = Evidence()
        if check.kind in ("tool-claim", "escalation"):
            if q.target not in records:
                path = RunDirectory(run_dir).trace_file(q.target)
                records[q.target] = read_records(path) if path.is_file() else {}
            evidence = gather_evidence({"tool_calls": records[q.target].get(q.id)})

        def decide(
            t: Thresholds, check: Any = check, by_role: Any = by_role, evidence: Any = evidence
        ) -> str:
            return str(interpret(check, by_role, evidence, check.thresholds or t).status)

        items.append(
            BenchmarkItem(
                question=q.id,
                split=q.split,
                check=check.id,
                gold_pass=bool(label.passed),
                decide=decide,
            )
        )
    for key, label in labels.items():
        if key not in used and label.dimension in checks:
            notes.append(f"{label.question}/{label.dimension}: labelled, but no judged check")
    return items, notes
