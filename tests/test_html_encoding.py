"""The HTML report's rows as JSON inside the page (`json_for_script`): orjson writes them, and
the page is the one the standard library wrote, to the byte where it could be read; a float
below 1e-4 in another form of the same number; a NaN or an infinity as `null`, which the
page's script can read where it could not read `NaN`."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
import re
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade.reports.html.blocks import json_for_script, rows_element


def stdlib(data: object) -> str:
    """The rows as written before orjson: the reference."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def strict(text: str) -> object:
    """As the page's script reads a block (`JSON.parse`): no NaN, no Infinity."""

    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def tiny(value: object) -> bool:
    """Whether `value` holds a float the two write in different forms (below 1e-4)."""
    if isinstance(value, float):
        return 0 < abs(value) < 1e-4
    if isinstance(value, dict):
        return any(tiny(v) for v in value.values())
    if isinstance(value, list):
        return any(tiny(v) for v in value)
    return False


def same(a: object, b: object) -> bool:
    """Equal, floats to the bit (json.loads gives floats back exactly)."""
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("d", a) == struct.pack("d", b)
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


texts = st.text(
    st.characters(codec="utf-8") | st.sampled_from('<>&"\\\n\t\x00\x1f\x7f\u2028</script><!--')
)
leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.floats(min_value=-1e-3, max_value=1e-3)
    | texts
)
rows = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(texts, inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(rows)
def test_a_row_is_written_as_the_standard_library_wrote_it(row):
    ours = json_for_script(row)
    assert "</" not in ours and "<!--" not in ours
    assert same(strict(ours), strict(stdlib(row)))  # the same values, read as the page reads
    if not tiny(row):
        assert ours == stdlib(row)


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_float_is_the_same_number_in_whichever_form(value):
    ours = json_for_script([value])
    assert same(strict(ours), [value])
    if not 0 < abs(value) < 1e-4:
        assert ours == stdlib([value])


def test_a_nan_or_infinity_is_null_and_the_block_is_read():
    row = {"args": {"x": math.nan, "y": [math.inf, -math.inf]}, "composite": 0.5}
    assert "NaN" in stdlib(row)  # before: a block JSON.parse refused, its rows never drawn
    with_nan = rows_element([row, {"id": "q2"}])
    found = re.search(r'class="tg-rows">(.*)</script>', with_nan)
    assert found is not None
    assert strict(found.group(1)) == [
        {"args": {"x": None, "y": [None, None]}, "composite": 0.5},
        {"id": "q2"},
    ]


class Colour(enum.StrEnum):
    RED = "red"


class Named(str):
    def __str__(self) -> str:
        return "named"


@dataclasses.dataclass
class Point:
    x: int


def test_what_json_has_no_form_for_is_written_as_the_standard_library_wrote_it():
    for value in (
        {"when": datetime.datetime(2026, 1, 2, 3, 4, 5)},
        {"point": Point(1)},
        {"set": {1}},
        {"bytes": b"x"},
        {"float": type("Sub", (float,), {})(1.5)},
        {"str": Named("text")},
        {"enum": Colour.RED},
        {1: "an int key"},
        {"big": 2**70},
        {"surrogate": "\ud800"},
    ):
        assert json_for_script(value) == stdlib(value), value
