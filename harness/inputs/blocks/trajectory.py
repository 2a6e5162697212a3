"""The vocabulary of a question's `trajectory` block and the checks of it that need no run.

`trajectory_grader` (graders/trajectory/grader.py) grades the block; this module only says whether it
is well formed, so a dataset is refused (exit 4, file:line:key) before anything runs. The JSON
Schema (`$defs/trajectory` of schema/dataset.schema.json) states the same rules in the same
words; the dataset models call `trajectory_problems` so both give one verdict on every file.

An argument value is a literal or a matcher. A mapping is a matcher when all its keys are
matcher keywords (`{regex: "^ana@"}`); a mapping mixing keywords and other keys is an error
(an unknown matcher keyword), and a literal mapping that would read as a matcher is written
`{eq: {...}}`. Inside a literal mapping or list, values are argument values again, so a
matcher may sit at any depth.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from ...errors import suggest
from ...redaction import compile_pattern

__all__ = [
    "ARGS_POLICIES",
    "CALL_KEYS",
    "DEFAULT_ARGS_POLICY",
    "DEFAULT_MODE",
    "INTERRUPT_STEP",
    "MATCHER_KEYWORDS",
    "MATCHER_PAIRS",
    "MODES",
    "OUTCOME_NAMES",
    "TRAJECTORY_KEYS",
    "TYPE_NAMES",
    "check_trajectory",
    "is_matcher",
    "keyword_suggestion",
    "misspelt_keyword_message",
    "misspelt_keywords",
    "tool_names",
    "trajectory_problems",
    "value_problems",
]


def _is_map(value: Any) -> bool:
    """A mapping; a plain dict answers without the ABC machinery (the common, hot case)."""
    return type(value) is dict or isinstance(value, Mapping)


MODES = ("strict", "unordered", "subset", "superset", "subsequence")
"""How expected calls relate to the calls that executed."""
DEFAULT_MODE = "superset"
ARGS_POLICIES = ("subset", "exact", "ignore")
"""How each expected call's listed `args` compare with a call's arguments."""
DEFAULT_ARGS_POLICY = "subset"
OUTCOME_NAMES = ("ok", "error", "command", "handoff")
"""The outcomes of a call that executed (what an expected call's `outcome` may name)."""
TRAJECTORY_KEYS = ("match", "calls", "args", "forbid", "only", "count", "max_calls")
CALL_KEYS = ("tool", "args", "outcome")
MATCHER_KEYWORDS = (
    "eq",
    "regex",
    "in",
    "min",
    "max",
    "type",
    "any",
    "absent",
    "contains",
    "approx",
    "tol",
    "schema",
    "not",
)
MATCHER_PAIRS = (frozenset({"min", "max"}), frozenset({"approx", "tol"}))
"""The only keywords that combine in one matcher; every other matcher has one keyword."""
TYPE_NAMES = ("string", "integer", "number", "boolean", "null", "array", "object")

_KEYWORDS = frozenset(MATCHER_KEYWORDS)
KEYWORD_ALIASES = {
    "equals": "eq",
    "equal": "eq",
    "is": "eq",
    "matches": "regex",
    "match": "regex",
    "pattern": "regex",
    "gte": "min",
    "gt": "min",
    "minimum": "min",
    "lte": "max",
    "lt": "max",
    "maximum": "max",
    "one_of": "in",
    "oneof": "in",
    "includes": "contains",
    "exists": "any",
    "missing": "absent",
    "approximately": "approx",
    "tolerance": "tol",
}
"""Other tools' names for a matcher keyword: what a user coming from them writes."""
_SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})
_ASSERTING = ("calls", "forbid", "only", "count", "max_calls")

# The rules, worded as the schema's errorMessage words them (tests compare the two).
NEEDS_SOMETHING = "a trajectory needs calls, forbid, only, count or max_calls"
BAD_MODE = "trajectory.match must be one of " + ", ".join(MODES)
BAD_ARGS_POLICY = "trajectory.args must be one of " + ", ".join(ARGS_POLICIES)
CALL_NEEDS_TOOL = "a trajectory call needs tool"
BAD_OUTCOME = "outcome must be one of " + ", ".join(OUTCOME_NAMES)
UNKNOWN_KEYWORD = "unknown matcher keyword"
ONE_KEYWORD = "a matcher takes one keyword (or min with max, approx with tol)"
TOL_NEEDS_APPROX = "tol needs approx"
BAD_REGEX = "regex does not compile"
MIN_ABOVE_MAX = "min must not be above max"
BAD_BOUND = "min and max must be numbers or strings"
BAD_IN = "in must be a non-empty list"
BAD_TYPE = "type must be one of " + ", ".join(TYPE_NAMES)
BAD_ANY = "any must be true"
BAD_ABSENT = "absent must be true"
BAD_APPROX = "approx must be a number"
BAD_TOL = "tol must be a non-negative number"
BAD_SCHEMA = "schema must be a valid JSON Schema"
COUNT_FORBIDDEN = "count names a tool in forbid"
BAD_COUNT = "a count needs min or max, each a non-negative integer"
BAD_MAX_CALLS = "max_calls must be a non-negative integer"
BAD_TOOL_LIST = "forbid and only must be lists of tool names"
BAD_TOOL = "tool must be a non-blank string"
INTERRUPT_ONLY = "an interrupt step takes only interrupt"
PAYLOAD_NOT_MAP = "a payload matcher must be a mapping of payload keys to values or matchers"
INTERRUPT_STEP = "interrupt()"
"""The name an interrupt step's pseudo-call carries in trajectory matching (no tool can have
it: tool names have no parentheses)."""

Problem = tuple[str, str]
"""(JSON pointer relative to the trajectory block, message)."""


def is_matcher(value: Any) -> bool:
    """A non-empty mapping whose keys are all matcher keywords."""
    return _is_map(value) and bool(value) and _KEYWORDS.issuperset(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _token(key: Any) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def regex_problem(pattern: str) -> str | None:
    """Why `pattern` does not compile on RE2 (the linear-time engine every user-written pattern
    runs on: no catastrophic backtracking), or None when it does."""
    try:
        compile_pattern(pattern)
    except ValueError as exc:
        return f"{BAD_REGEX}: {exc}"
    return None


def schema_problem(schema: Any) -> str | None:
    """Why `schema` is not a valid Draft 2020-12 JSON Schema, or None when it is."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if not isinstance(schema, Mapping | bool):
        return BAD_SCHEMA
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return f"{BAD_SCHEMA}: {exc.message}"
    return None


def bounds_problem(low: Any, high: Any) -> str | None:
    """`min > max` (numbers with numbers, strings with strings), or None."""
    if low is None or high is None:
        return None
    if (_is_number(low) and _is_number(high)) or (isinstance(low, str) and isinstance(high, str)):
        return MIN_ABOVE_MAX if low > high else None
    return BAD_BOUND


def keyword_suggestion(key: Any) -> str | None:
    """The matcher keyword `key` most likely stands for (`equals` -> `eq`), or None."""
    if not isinstance(key, str):
        return None
    return KEYWORD_ALIASES.get(key) or suggest(key, MATCHER_KEYWORDS, cutoff=0.75)


def misspelt_keywords(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[tuple, str, str]]:
    """In a payload matcher's value: each key of a literal mapping (one without matcher
    keywords) that reads as a misspelt matcher keyword, as (path, key, suggestion). Such a
    mapping could only equal a mapping, which is never what `{equals: x}` meant."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from misspelt_keywords(item, (*at, index))
        return
    if not _is_map(value) or set(value) & _KEYWORDS:
        return
    for key, item in value.items():
        close = keyword_suggestion(key)
        if close is not None:
            yield (*at, key), key, close
        else:
            yield from misspelt_keywords(item, (*at, key))


def misspelt_keyword_message(key: str) -> str:
    """The problem of a misspelt matcher keyword (the schema's and the models' wording)."""
    return (
        f"{UNKNOWN_KEYWORD} {key!r}: this mapping is a literal the payload must equal; "
        "a literal mapping is written {eq: ...}"
    )


def value_problems(value: Any, at: str = "") -> Iterator[Problem]:
    """Every problem of one argument value (a literal or a matcher), at pointer `at`."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from value_problems(item, f"{at}/{index}")
        return
    if not _is_map(value):
        return
    keys = set(value)
    if not keys & _KEYWORDS:  # a literal mapping: its values are argument values again
        for key, item in value.items():
            yield from value_problems(item, f"{at}/{_token(key)}")
        return
    unknown = [k for k in value if k not in _KEYWORDS]
    if unknown:
        for key in unknown:
            yield (
                f"{at}/{_token(key)}",
                f"{UNKNOWN_KEYWORD} {key!r} (a literal mapping that uses matcher keywords is "
                "written {eq: ...})",
            )
        return
    if len(keys) > 1 and frozenset(keys) not in MATCHER_PAIRS:
        yield at, ONE_KEYWORD
        return
    if keys == {"tol"}:
        yield at, TOL_NEEDS_APPROX
        return
    yield from _keyword_problems(value, at)


def _keyword_problems(value: Mapping[str, Any], at: str) -> Iterator[Problem]:
    for key, arg in value.items():
        where = f"{at}/{key}"
        if key == "regex":
            why = regex_problem(arg) if isinstance(arg, str) else f"{BAD_REGEX}: not a string"
            if why:
                yield where, why
        elif key == "in":
            if not isinstance(arg, list) or not arg:
                yield where, BAD_IN
        elif key in ("min", "max"):
            if not (_is_number(arg) or isinstance(arg, str)):
                yield where, BAD_BOUND
        elif key == "type":
            if arg not in TYPE_NAMES or not isinstance(arg, str):
                yield where, BAD_TYPE
        elif key == "any":
            if arg is not True:
                yield where, BAD_ANY
        elif key == "absent":
            if arg is not True:
                yield where, BAD_ABSENT
        elif key == "approx":
            if not _is_number(arg) or not math.isfinite(arg):
                yield where, BAD_APPROX
        elif key == "tol":
            if not _is_number(arg) or not arg >= 0:
                yield where, BAD_TOL
        elif key == "schema":
            why = schema_problem(arg)
            if why:
                yield where, why
        elif key == "not":
            yield from value_problems(arg, where)
        # eq and contains take any literal
    if "min" in value and "max" in value:
        low, high = value["min"], value["max"]
        if (_is_number(low) or isinstance(low, str)) and (
            _is_number(high) or isinstance(high, str)
        ):
            why = bounds_problem(low, high)
            if why:
                yield at, why


def trajectory_problems(raw: Any) -> list[Problem]:
    """Every problem of a `trajectory` block, in document order; [] when it is well formed."""
    if not _is_map(raw):
        return [("", "trajectory must be a mapping")]
    problems: list[Problem] = []
    for key in raw:
        if key not in TRAJECTORY_KEYS:
            problems.append((f"/{_token(key)}", f"unknown key {key!r}"))
    if not any(key in raw for key in _ASSERTING):
        problems.append(("", NEEDS_SOMETHING))
    if "match" in raw and raw["match"] not in MODES:
        problems.append(("/match", BAD_MODE))
    if "args" in raw and raw["args"] not in ARGS_POLICIES:
        problems.append(("/args", BAD_ARGS_POLICY))
    calls = raw.get("calls", [])
    if not isinstance(calls, list):
        problems.append(("/calls", "calls must be a list"))
        calls = []
    for index, call in enumerate(calls):
        _call_problems(call, f"/calls/{index}", problems)
    for key in ("forbid", "only"):
        names = raw.get(key, [])
        if not isinstance(names, list):
            problems.append((f"/{key}", BAD_TOOL_LIST))
            continue
        problems.extend(
            (f"/{key}/{i}", BAD_TOOL_LIST) for i, n in enumerate(names) if not _is_name(n)
        )
    forbidden = set(raw.get("forbid") or ()) if isinstance(raw.get("forbid"), list) else set()
    count = raw.get("count", {})
    if not _is_map(count):
        problems.append(("/count", "count must be a mapping of tool names to bounds"))
        count = {}
    for tool, bound in count.items():
        where = f"/count/{_token(tool)}"
        if tool in forbidden:
            problems.append((where, COUNT_FORBIDDEN))
        if not _is_map(bound) or not bound:
            problems.append((where, BAD_COUNT))
            continue
        bad = [k for k, v in bound.items() if k not in ("min", "max") or not _is_int(v) or v < 0]
        problems.extend((f"{where}/{_token(k)}", BAD_COUNT) for k in bad)
        if not bad and bounds_problem(bound.get("min"), bound.get("max")):
            problems.append((where, MIN_ABOVE_MAX))
    if "max_calls" in raw and not (_is_int(raw["max_calls"]) and raw["max_calls"] >= 0):
        problems.append(("/max_calls", BAD_MAX_CALLS))
    return problems


def check_trajectory(value: Any) -> Any:
    """A `trajectory` block as a model validator checks it: ValueError naming the first
    problem and where (`... (at trajectory/calls/0)`)."""
    problems = trajectory_problems(value) if value is not None else []
    if problems:
        pointer, message = problems[0]
        raise ValueError(f"{message} (at trajectory{pointer})")
    return value


def _call_problems(call: Any, at: str, out: list[Problem]) -> None:
    """Append the problems of one expected call to `out` (a plain loop: it runs per grading)."""
    if not _is_map(call):
        out.append((at, "a trajectory call must be a mapping"))
        return
    if "interrupt" in call:  # an interrupt step: `{interrupt: {payload key: matcher}}`
        for key in call:
            if key != "interrupt":
                out.append((f"{at}/{_token(key)}", INTERRUPT_ONLY))
        payload = call["interrupt"]
        if not _is_map(payload):
            out.append((f"{at}/interrupt", PAYLOAD_NOT_MAP))
            return
        for key, value in payload.items():
            if type(value) not in _SCALAR_TYPES:
                out.extend(value_problems(value, f"{at}/interrupt/{_token(key)}"))
        return
    for key in call:
        if key not in CALL_KEYS:
            out.append((f"{at}/{_token(key)}", f"unknown key {key!r}"))
    if "tool" not in call:
        out.append((at, CALL_NEEDS_TOOL))
    elif not _is_name(call["tool"]):
        out.append((f"{at}/tool", BAD_TOOL))
    if "outcome" in call and call["outcome"] not in OUTCOME_NAMES:
        out.append((f"{at}/outcome", BAD_OUTCOME))
    if "args" in call:
        args = call["args"]
        if not _is_map(args):
            out.append((f"{at}/args", "args must be a mapping"))
            return
        for key, value in args.items():
            if type(value) not in _SCALAR_TYPES:  # a scalar is a literal: nothing to check
                out.extend(value_problems(value, f"{at}/args/{_token(key)}"))


def tool_names(raw: Any) -> list[tuple[tuple[str | int, ...], str]]:
    """Every tool name a well-formed `trajectory` block writes, with its path inside the block
    (`("calls", 0, "tool")`, `("forbid", 1)`, `("count", "x")`...), for the check of names
    against the target's graph."""
    if not _is_map(raw):
        return []
    out: list[tuple[tuple[str | int, ...], str]] = []
    for i, call in enumerate(raw.get("calls") or ()):
        if _is_map(call) and isinstance(call.get("tool"), str):
            out.append((("calls", i, "tool"), call["tool"]))
    for key in ("forbid", "only"):
        names = raw.get(key)
        for i, name in enumerate(names if isinstance(names, list) else ()):
            if isinstance(name, str):
                out.append(((key, i), name))
    count = raw.get("count")
    for name in count if _is_map(count) else ():
        out.append((("count", name), str(name)))
    return out
