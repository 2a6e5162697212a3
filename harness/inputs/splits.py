"""Split assignment: which of train / validation / test a question belongs to.

An explicit `split` label always wins. Otherwise a dataset-level `splits: {rule: hash}` block
buckets the question on the value of its `field` (default `id`):

    fraction = int.from_bytes(sha256(f"{seed}:{value}".encode("utf-8")).digest()[:8], "big") / 2**64

and the question lands in the first split, in the fixed order train, validation, test, whose
cumulative ratio exceeds the fraction. sha256 and big-endian bytes make this identical on every
machine and Python version (Python's own `hash()` is salted per process, so it is never used).
`value` is the string itself for a string field, its JSON text otherwise (`12` -> "12").

A question covered by neither a label nor the rule (no splits block, or the hashed field absent)
lands in both train and validation, never test: test stays held out unless asked for.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "SPLIT_NAMES",
    "UNCOVERED",
    "assign_split",
    "bucket_of",
    "hash_fraction",
]

SPLIT_NAMES: tuple[str, ...] = ("train", "validation", "test")
UNCOVERED: frozenset[str] = frozenset({"train", "validation"})
_MISSING = object()


def hash_fraction(seed: int, value: Any) -> float:
    """The value's position in [0, 1): the first 8 bytes of sha256("<seed>:<value>") / 2**64."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    digest = hashlib.sha256(f"{seed}:{text}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def bucket_of(value: Any, *, ratios: Mapping[str, float], seed: int = 0) -> str:
    """The split `value` hashes into against the cumulative `ratios` (train, validation, test)."""
    fraction = hash_fraction(seed, value)
    cumulative = 0.0
    last = None
    for name in SPLIT_NAMES:
        share = ratios.get(name, 0.0)
        if share <= 0:
            continue
        last = name
        cumulative += share
        if fraction < cumulative:
            return name
    if last is None:
        raise ValueError("ratios give no split a share")
    return last  # float rounding left the fraction just past the final cumulative ratio


def _field_value(row: Mapping[str, Any], field: str) -> Any:
    value: Any = row
    for part in field.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _MISSING
        value = value[part]
    return value


def assign_split(
    row: Mapping[str, Any],
    *,
    ratios: Mapping[str, float] | None = None,
    field: str = "id",
    seed: int = 0,
) -> frozenset[str]:
    """The splits a question row belongs to: its label; else its hash bucket when `ratios` is
    given and the row has `field` (dots reach into mappings); else train and validation."""
    label = row.get("split")
    if label is not None:
        return frozenset({label})
    if ratios is None:
        return UNCOVERED
    value = _field_value(row, field)
    if value is _MISSING or value is None:
        return UNCOVERED
    return frozenset({bucket_of(value, ratios=ratios, seed=seed)})
