"""Canonical JSON and the content hash over it: the one way tracegrade names a value by what it
holds (the judge cache's keys, a cassette's call keys, a question's fingerprint); and
`json_loads`, the one faster `json.loads` every reader of JSON text tracegrade wrote or was
given uses (trace files, archives, the results store).

Keys are sorted, separators fixed and anything JSON cannot hold written as its `str`, so equal
content gives equal text on every machine and Python version."""

from __future__ import annotations

import hashlib
import json
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - a dependency; the standard library reads it all alike
    orjson = None  # type: ignore[assignment]

__all__ = ["canonical_json", "content_hash", "json_loads"]


def canonical_json(value: Any) -> str:
    """`value` as canonical JSON text (sorted keys, no spaces; `str` for anything else)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def content_hash(value: Any) -> str:
    """sha256 hex of `value`'s canonical JSON."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 20


def json_loads(text: str | bytes) -> Any:
    """`json.loads(text)`, faster: orjson where it reads the text, the standard library where it
    does not, so what is read (and what is refused, with which message) is what `json.loads`
    gives. orjson decodes an OTLP JSON line 1.6x as fast, and decoding is most of reading an
    archive. It is stricter (no NaN or Infinity, no lone surrogate escape, UTF-8 only): a text
    it refuses is read again by `json.loads`, the same value or the same error. One thing it
    reads otherwise, an integer past 64 bits (a float), is kept from it: a text with a run of
    20 digits anywhere (a string of digits too: that costs only the faster path) goes to
    `json.loads`."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    # a run of 20 digits, found in C (a regular expression costs what orjson saves)
    if orjson is not None and _LONG_NUMBER not in raw.translate(_DIGITS):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass  # read again below: the standard library's value, or its error
    return json.loads(text)
