"""Argument matchers of `trajectory_grader`: what an expected call's `args` values mean.

`compile_value` turns one argument value, as authored, into a `Matcher`. Each matcher answers
`test(present, value)` fast (the matching asks it for every expected/actual pair) and, only for
a reason, `explain(present, value, path)`: which arguments differed and how, worded
`slot expected in ['10:00', '11:00'], got '15:00'`.

The vocabulary and its static checks live in `tracegrade.inputs.blocks.trajectory`; a value reaching
`compile_value` has passed them (the grader checks first), so compiling does not re-validate.

Equality (a literal, `eq`, `in`, `contains` of a member) is deep: mappings and lists compare
item by item, numbers by value (`1 == 1.0`), booleans only with booleans (`true` is not `1`),
strings only with strings (`"12"` is not `12`: the recorded arguments keep the types the model
emitted, and `{type: ...}` or `{regex: ...}` says what to accept).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ...inputs.blocks.trajectory import is_matcher
from ...redaction import REDACTED, compile_pattern, is_secret_name

__all__ = [
    "ArgsMatcher",
    "Matcher",
    "compile_args",
    "compile_value",
    "deep_equal",
    "shown",
]


def _is_map(value: Any) -> bool:
    """A mapping; a plain dict answers without the ABC machinery (the common, hot case)."""
    return type(value) is dict or isinstance(value, Mapping)


_SHOWN_CHARS = 80


def shown(value: Any, key: str = "") -> str:
    """A value as a reason shows it: repr, cut to 80 characters, redacted under a secret name."""
    if key and is_secret_name(key):
        return REDACTED
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def _key_of(path: str) -> str:
    """The argument name a path ends in: `address.zip` -> `zip`, `ids[1]` -> `ids`."""
    return path.rsplit(".", 1)[-1].split("[", 1)[0]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def deep_equal(expected: Any, actual: Any) -> bool:
    """Deep equality: mappings by keys and values, lists item by item, numbers by value,
    booleans and strings only with their own kind."""
    if type(expected) is str:  # the common case, fast
        return type(actual) is str and expected == actual
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if _is_number(expected):
        return _is_number(actual) and expected == actual
    if isinstance(expected, str):
        return isinstance(actual, str) and expected == actual
    if expected is None:
        return actual is None
    if _is_map(expected):
        return (
            _is_map(actual)
            and len(expected) == len(actual)
            and all(k in actual and deep_equal(v, actual[k]) for k, v in expected.items())
        )
    if isinstance(expected, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(expected) == len(actual)
            and all(deep_equal(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return bool(expected == actual)


class Matcher:
    """One compiled argument value."""

    __slots__ = ()

    def test(self, present: bool, value: Any) -> bool:
        """Whether an argument (present or not, with this value) satisfies the matcher."""
        raise NotImplementedError

    def describe(self) -> str:
        """What it expects, as the reason words it after "expected"."""
        raise NotImplementedError

    def explain(self, present: bool, value: Any, path: str) -> list[str]:
        """The differences, each `<path> expected <what>, got <value>` ([] when it matches)."""
        if self.test(present, value):
            return []
        key = _key_of(path)
        what = REDACTED if is_secret_name(key) else self.describe()
        got = shown(value, key) if present else "nothing (absent)"
        return [f"{path} expected {what}, got {got}"]


class Literal(Matcher):
    """A value compared by deep equality (`eq` too: its value is never read as a matcher)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def test(self, present: bool, value: Any) -> bool:
        if type(self.value) is str:  # the usual literal, fast
            return present and type(value) is str and self.value == value
        return present and deep_equal(self.value, value)

    def describe(self) -> str:
        return shown(self.value)

    def explain(self, present: bool, value: Any, path: str) -> list[str]:
        # Two mappings (or two lists of one length): name the keys (items) that differ.
        if present and not is_secret_name(_key_of(path)):
            if isinstance(self.value, Mapping) and _is_map(value):
                return MappingOf({str(k): Literal(v) for k, v in self.value.items()}).explain(
                    present, value, path
                )
            if (
                isinstance(self.value, list | tuple)
                and isinstance(value, list | tuple)
                and len(self.value) == len(value)
            ):
                return ListOf([Literal(v) for v in self.value]).explain(present, value, path)
        return super().explain(present, value, path)


class Regex(Matcher):
    """`{regex: R}`: a string that R matches in full."""

    __slots__ = ("pattern",)

    def __init__(self, pattern: str) -> None:
        # RE2: linear in the argument's length, so `(a+)+b` against a long value cannot stall
        self.pattern = compile_pattern(pattern)

    def test(self, present: bool, value: Any) -> bool:
        return present and isinstance(value, str) and self.pattern.fullmatch(value) is not None

    def describe(self) -> str:
        return f"to match {self.pattern.pattern!r}"


class In(Matcher):
    """`{in: [...]}`: equal to one of the options."""

    __slots__ = ("options", "strings")

    def __init__(self, options: Sequence[Any]) -> None:
        self.options = list(options)
        # string options answer a string by one set lookup (the usual case: slots, states)
        self.strings = frozenset(o for o in self.options if type(o) is str)

    def test(self, present: bool, value: Any) -> bool:
        if not present:
            return False
        if type(value) is str:
            return value in self.strings
        return any(deep_equal(option, value) for option in self.options)

    def describe(self) -> str:
        return f"in {shown(self.options)}"


class Range(Matcher):
    """`{min: A, max: B}` (either may be left out): a number within the bounds, or a string
    within them in text order (ISO dates compare so)."""

    __slots__ = ("high", "low")

    def __init__(self, low: Any, high: Any) -> None:
        self.low, self.high = low, high

    def test(self, present: bool, value: Any) -> bool:
        if not present:
            return False
        bound = self.low if self.low is not None else self.high
        if isinstance(bound, str):
            if not isinstance(value, str):
                return False
        elif not _is_number(value) or (isinstance(value, float) and math.isnan(value)):
            return False
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            return f"between {shown(self.low)} and {shown(self.high)}"
        if self.low is not None:
            return f"at least {shown(self.low)}"
        return f"at most {shown(self.high)}"


_TYPES: dict[str, tuple[str, Any]] = {
    "string": ("a string", lambda v: isinstance(v, str)),
    "integer": (
        "an integer",
        lambda v: (
            (isinstance(v, int) and not isinstance(v, bool))
            or (isinstance(v, float) and v.is_integer())
        ),
    ),
    "number": ("a number", _is_number),
    "boolean": ("a boolean", lambda v: isinstance(v, bool)),
    "null": ("null", lambda v: v is None),
    "array": ("an array", lambda v: isinstance(v, list | tuple)),
    "object": ("an object", lambda v: _is_map(v)),
}


class Type(Matcher):
    """`{type: T}`: a value of JSON type T (an integer-valued float is an integer, as in JSON)."""

    __slots__ = ("check", "name", "words")

    def __init__(self, name: str) -> None:
        self.name = name
        self.words, self.check = _TYPES[name]

    def test(self, present: bool, value: Any) -> bool:
        return present and bool(self.check(value))

    def describe(self) -> str:
        return self.words


class Present(Matcher):
    """`{any: true}`: the argument was given, whatever its value."""

    __slots__ = ()

    def test(self, present: bool, value: Any) -> bool:
        return present

    def describe(self) -> str:
        return "present"


class Absent(Matcher):
    """`{absent: true}`: the argument was not given."""

    __slots__ = ()

    def test(self, present: bool, value: Any) -> bool:
        return not present

    def describe(self) -> str:
        return "absent"


class Contains(Matcher):
    """`{contains: X}`: a string holding X as a substring, a list holding X as a member, or a
    mapping holding X as a key."""

    __slots__ = ("item",)

    def __init__(self, item: Any) -> None:
        self.item = item

    def test(self, present: bool, value: Any) -> bool:
        if not present:
            return False
        if isinstance(value, str):
            return isinstance(self.item, str) and self.item in value
        if isinstance(value, list | tuple):
            return any(deep_equal(self.item, member) for member in value)
        if _is_map(value):
            return self.item in value if isinstance(self.item, str) else False
        return False

    def describe(self) -> str:
        return f"to contain {shown(self.item)}"


class Approx(Matcher):
    """`{approx: X, tol: T}`: a number within T of X (no tol: equal up to float rounding)."""

    __slots__ = ("target", "tol")

    def __init__(self, target: float, tol: float | None) -> None:
        self.target, self.tol = target, tol

    def test(self, present: bool, value: Any) -> bool:
        if not present or not _is_number(value):
            return False
        if self.tol is None:
            return math.isclose(value, self.target)
        return abs(value - self.target) <= self.tol

    def describe(self) -> str:
        return f"{shown(self.target)} ± {shown(self.tol if self.tol is not None else 0)}"


class Schema(Matcher):
    """`{schema: {...}}`: a value the JSON Schema (Draft 2020-12) accepts."""

    __slots__ = ("validator",)

    def __init__(self, schema: Any) -> None:
        from jsonschema import Draft202012Validator

        self.validator = Draft202012Validator(schema)

    def test(self, present: bool, value: Any) -> bool:
        return present and self.validator.is_valid(value)

    def describe(self) -> str:
        return "to match its schema"

    def explain(self, present: bool, value: Any, path: str) -> list[str]:
        if not present or self.test(present, value) or is_secret_name(_key_of(path)):
            return super().explain(present, value, path)
        from jsonschema.exceptions import best_match

        error = best_match(self.validator.iter_errors(value))
        where = "".join(f"[{p!r}]" for p in error.absolute_path) if error else ""
        why = f" ({where + ': ' if where else ''}{error.message})" if error else ""
        return [f"{path} expected to match its schema{why}, got {shown(value)}"]


class Not(Matcher):
    """`{not: M}`: the argument was given and M does not hold (`{not: {absent: true}}`: given)."""

    __slots__ = ("inner",)

    def __init__(self, inner: Matcher) -> None:
        self.inner = inner

    def test(self, present: bool, value: Any) -> bool:
        return present and not self.inner.test(True, value)

    def describe(self) -> str:
        return "present" if isinstance(self.inner, Absent) else f"not {self.inner.describe()}"


class MappingOf(Matcher):
    """A literal mapping holding a matcher somewhere: exactly these keys, each value matched."""

    __slots__ = ("items",)

    def __init__(self, items: dict[str, Matcher]) -> None:
        self.items = items

    def test(self, present: bool, value: Any) -> bool:
        if not present or not _is_map(value):
            return False
        if any(k not in self.items for k in value):
            return False
        return all(m.test(k in value, value.get(k)) for k, m in self.items.items())

    def describe(self) -> str:
        return "a mapping with keys " + ", ".join(self.items)

    def explain(self, present: bool, value: Any, path: str) -> list[str]:
        if not present or not _is_map(value):
            return super().explain(present, value, path)
        out = [
            line
            for k, m in self.items.items()
            for line in m.explain(k in value, value.get(k), f"{path}.{k}")
        ]
        out += [
            f"{path}.{k} not expected, got {shown(v, str(k))}"
            for k, v in value.items()
            if k not in self.items
        ]
        return out


class ListOf(Matcher):
    """A literal list holding a matcher somewhere: this many items, each matched in order."""

    __slots__ = ("items",)

    def __init__(self, items: list[Matcher]) -> None:
        self.items = items

    def test(self, present: bool, value: Any) -> bool:
        return (
            present
            and isinstance(value, list | tuple)
            and len(value) == len(self.items)
            and all(m.test(True, v) for m, v in zip(self.items, value, strict=True))
        )

    def describe(self) -> str:
        return f"a list of {len(self.items)} items"

    def explain(self, present: bool, value: Any, path: str) -> list[str]:
        if not present or not isinstance(value, list | tuple) or len(value) != len(self.items):
            return super().explain(present, value, path)
        return [
            line
            for i, (m, v) in enumerate(zip(self.items, value, strict=True))
            for line in m.explain(True, v, f"{path}[{i}]")
        ]


_PRESENT, _ABSENT = Present(), Absent()
_SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})


def _holds_matcher(value: Any) -> bool:
    if _is_map(value):
        return is_matcher(value) or any(_holds_matcher(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_matcher(v) for v in value)
    return False


def compile_value(value: Any) -> Matcher:
    """One argument value, as authored, as a Matcher (see the module docstring)."""
    if type(value) in _SCALAR_TYPES:
        return Literal(value)
    if not is_matcher(value):
        if _is_map(value) and _holds_matcher(value):
            return MappingOf({str(k): compile_value(v) for k, v in value.items()})
        if isinstance(value, list) and _holds_matcher(value):
            return ListOf([compile_value(v) for v in value])
        return Literal(value)
    if "eq" in value:
        return Literal(value["eq"])
    if "regex" in value:
        return Regex(value["regex"])
    if "in" in value:
        return In(value["in"])
    if "min" in value or "max" in value:
        return Range(value.get("min"), value.get("max"))
    if "type" in value:
        return Type(value["type"])
    if "any" in value:
        return _PRESENT
    if "absent" in value:
        return _ABSENT
    if "contains" in value:
        return Contains(value["contains"])
    if "approx" in value:
        return Approx(value["approx"], value.get("tol"))
    if "schema" in value:
        return Schema(value["schema"])
    return Not(compile_value(value["not"]))


class ArgsMatcher:
    """An expected call's `args` under the trajectory's `args` policy: `subset` (listed
    arguments match, others ignored), `exact` (and no others given), `ignore` (not compared)."""

    __slots__ = ("exact", "items")

    def __init__(self, items: dict[str, Matcher], *, exact: bool) -> None:
        self.items = items
        self.exact = exact

    def test(self, arguments: Mapping[str, Any]) -> bool:
        for key, matcher in self.items.items():
            if not matcher.test(key in arguments, arguments.get(key)):
                return False
        return not self.exact or all(key in self.items for key in arguments)

    def explain(self, arguments: Mapping[str, Any]) -> list[str]:
        """Which arguments differed, and how; [] when they match."""
        out = [
            line
            for key, matcher in self.items.items()
            for line in matcher.explain(key in arguments, arguments.get(key), key)
        ]
        if self.exact:
            out += [
                f"{key} not expected, got {shown(value, key)}"
                for key, value in arguments.items()
                if key not in self.items
            ]
        return out

    def describe(self) -> str:
        """`slot in ['10:00', '11:00'], customer 'C001'`: for labels."""
        return ", ".join(f"{key} {m.describe()}" for key, m in self.items.items())


def compile_args(args: Mapping[str, Any] | None, policy: str) -> ArgsMatcher | None:
    """An expected call's `args` under `policy`; None when nothing is compared."""
    if policy == "ignore" or args is None:
        return None
    return ArgsMatcher({str(k): compile_value(v) for k, v in args.items()}, exact=policy == "exact")
