"""The archive reader's JSON decoding (orjson where it can, the standard library where it
cannot) reads every text as `json.loads` does: the same value, or the same error."""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade.traces.spans import json_loads as loads

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _same(a: object, b: object) -> bool:
    """Equal, NaN equal to NaN, and the same types (an int is not a float)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))  # type: ignore[arg-type]
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)  # type: ignore[index]
    return a == b


def _outcome(text: str | bytes) -> tuple[str, object]:
    try:
        return "value", json.loads(text)
    except (ValueError, RecursionError) as exc:
        return type(exc).__name__, str(exc)


@settings(max_examples=300, deadline=None)
@given(_values, st.booleans(), st.booleans())
def test_a_json_document_is_read_as_json_loads_reads_it(value, ascii_only, as_bytes):
    text = json.dumps(value, ensure_ascii=ascii_only)
    raw = text.encode("utf-8", "surrogatepass") if as_bytes else text
    kind, expected = _outcome(raw)
    assert kind == "value"
    assert _same(loads(raw), expected)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=60) | st.text(max_size=60))
def test_any_text_gives_the_value_or_the_error_json_loads_gives(raw):
    expected = _outcome(raw)
    try:
        got: tuple[str, object] = ("value", loads(raw))
    except (ValueError, RecursionError) as exc:
        got = (type(exc).__name__, str(exc))
    assert got[0] == expected[0]
    if got[0] == "value":
        assert _same(got[1], expected[1])
    else:
        assert got[1] == expected[1]


def test_numbers_past_64_bits_stay_integers():
    big = 2**70 + 1
    assert loads(f'{{"n": {big}}}') == {"n": big}
    assert type(loads(f"[{big}]".encode())[0]) is int


def test_nesting_past_what_a_parser_follows_is_the_same_recursion_error():
    deep = "[" * 100_000 + "]" * 100_000
    try:
        json.loads(deep)
    except RecursionError:
        pass
    else:  # pragma: no cover - the standard library's limit
        raise AssertionError("json.loads read it")
    try:
        loads(deep)
    except RecursionError:
        return
    raise AssertionError("read past the standard library's limit")
