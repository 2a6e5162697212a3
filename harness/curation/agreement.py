"""Agreement between a judge and people: exact agreement, Cohen's kappa (quadratic-weighted on
ordinal scales), mean absolute error and the confusion matrix. Plain functions over pairs of
labels, so the statistics are checked against tables computed by hand."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

__all__ = ["Agreement", "agreement", "cohen_kappa", "confusion_matrix"]


def confusion_matrix(
    pairs: Sequence[tuple[Hashable, Hashable]], categories: Sequence[Hashable]
) -> list[list[int]]:
    """rows: the person's label (gold); columns: the judge's label."""
    index = {c: i for i, c in enumerate(categories)}
    matrix = [[0] * len(categories) for _ in categories]
    for gold, judged in pairs:
        matrix[index[gold]][index[judged]] += 1
    return matrix


def cohen_kappa(matrix: Sequence[Sequence[int]], *, weights: str | None = None) -> float | None:
    """Cohen's kappa of a square confusion matrix; `weights="quadratic"` for ordinal categories
    (disagreement weighted by squared distance), None for nominal ones. None when undefined
    (no pairs, or both raters used one category only, so chance agreement is total)."""
    k = len(matrix)
    n = sum(sum(row) for row in matrix)
    if n == 0 or k < 2:
        return None
    rows = [sum(matrix[i]) for i in range(k)]
    cols = [sum(matrix[i][j] for i in range(k)) for j in range(k)]

    def weight(i: int, j: int) -> float:
        if weights == "quadratic":
            return (i - j) ** 2 / (k - 1) ** 2
        return 0.0 if i == j else 1.0

    observed = sum(weight(i, j) * matrix[i][j] for i in range(k) for j in range(k)) / n
    expected = sum(weight(i, j) * rows[i] * cols[j] for i in range(k) for j in range(k)) / n**2
    if expected == 0:
        return None
    return 1.0 - observed / expected


@dataclass(frozen=True, slots=True)
class Agreement:
    """How a judge's labels agree with people's on one dimension."""

    n: int
    """Questions with both a gold label and a judge score."""
    exact: float | None
    """Share of questions where the judge gave exactly the person's label."""
    kappa: float | None
    """Cohen's kappa (quadratic-weighted when `ordinal`); None when undefined."""
    mae: float | None
    """Mean absolute difference on the judge's scale (None for pass/fail labels)."""
    categories: list = field(default_factory=list)
    """The labels in matrix order."""
    matrix: list[list[int]] = field(default_factory=list)
    """Confusion matrix: rows are the person's label, columns the judge's."""
    ordinal: bool = False
    """Whether the labels are an ordered scale (quadratic weights) or pass/fail (unweighted)."""


def agreement(
    pairs: Sequence[tuple[Hashable, Hashable]],
    *,
    categories: Sequence[Hashable] | None = None,
    ordinal: bool = False,
) -> Agreement:
    """Agreement of (gold, judged) pairs. `categories` fixes the matrix order (default: the
    sorted labels seen)."""
    seen = {v for p in pairs for v in p}
    cats = list(categories) if categories is not None else sorted(seen)  # type: ignore[type-var]
    matrix = confusion_matrix(pairs, cats)
    n = len(pairs)
    exact = sum(1 for g, j in pairs if g == j) / n if n else None
    mae = None
    if ordinal and n:
        mae = sum(abs(float(g) - float(j)) for g, j in pairs) / n  # type: ignore[arg-type,misc]
    kappa = cohen_kappa(matrix, weights="quadratic" if ordinal else None)
    return Agreement(
        n=n, exact=exact, kappa=kappa, mae=mae, categories=cats, matrix=matrix, ordinal=ordinal
    )
