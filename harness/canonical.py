"""Canonical JSON and the content hash over it: the one way tracegrade names a value by what it
holds (the judge cache's keys, a cassette's call keys, a question's fingerprint).

Keys are sorted, separators fixed and anything JSON cannot hold written as its `str`, so equal
content gives equal text on every machine and Python version."""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_json", "content_hash"]


def canonical_json(value: Any) -> str:
    """`value` as canonical JSON text (sorted keys, no spaces; `str` for anything else)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def content_hash(value: Any) -> str:
    """sha256 hex of `value`'s canonical JSON."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
