"""The vocabulary of three question keys that need no expected tool list, and their static
checks (the dataset schema states the same rules; a model validator and the trace policy run
these, so a library caller gets the same words):

- `checks`: the record checks (`record_checks`): arguments against the tool's declared schema,
  tools not offered, repeated identical calls, cycles, tool errors left unhandled before an
  answer that reads as success, calls after the final answer, a step budget;
- `claims`: RE2 pattern -> the tool (or tools) whose successful call backs the claim
  (`claims_grader`);
- `nodes`: the path through the graph (`nodes_grader`): a match mode over the node paths.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...redaction import compile_pattern

__all__ = [
    "CHECK_KEYS",
    "DEFAULT_CHECKS",
    "NODE_MODES",
    "check_checks",
    "check_claims",
    "check_nodes",
    "checks_problems",
    "claims_problems",
    "nodes_problems",
    "resolve_checks",
]

Problem = tuple[str, str]

DEFAULT_CHECKS: dict[str, Any] = {
    "schema": True,
    "offered": True,
    "repeats": 1,
    "cycles": 3,
    "unhandled_errors": True,
    "after_answer": True,
}
"""What `checks: true` (or an attached `record_checks` with no settings) checks."""
CHECK_KEYS = (*DEFAULT_CHECKS, "max_steps", "escalation", "failure_words")
NODE_MODES = ("strict", "unordered", "subset", "superset")
NODE_KEYS = ("match", "path", "steps", "subgraphs")


def _int(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def checks_problems(raw: Any) -> list[Problem]:
    """(pointer, message) for each problem of a `checks` value: true, false or a mapping."""
    if isinstance(raw, bool):
        return []
    if not isinstance(raw, Mapping):
        return [("", "checks must be true, false or a mapping of checks")]
    out: list[Problem] = []
    for key, value in raw.items():
        at = f"/{key}"
        if key not in CHECK_KEYS:
            out.append((at, f"unknown check {key!r} (one of {', '.join(CHECK_KEYS)})"))
        elif key in ("schema", "offered", "unhandled_errors", "after_answer"):
            if not isinstance(value, bool):
                out.append((at, f"{key} must be true or false"))
        elif key == "repeats":
            if not (isinstance(value, bool) or _int(value, 1)):
                out.append((at, "repeats must be false or the most identical calls allowed (>= 1)"))
        elif key == "cycles":
            if not (isinstance(value, bool) or _int(value, 2)):
                out.append((at, "cycles must be false or how many repeats make a cycle (>= 2)"))
        elif key == "max_steps":
            if not _int(value, 1):
                out.append((at, "max_steps must be a positive integer"))
        elif key == "escalation":
            if not (isinstance(value, list) and all(isinstance(v, str) and v for v in value)):
                out.append((at, "escalation must be a list of tool names"))
        elif key == "failure_words":
            out += _pattern_problems(value, at)
    return out


def _pattern_problems(value: Any, at: str) -> list[Problem]:
    if not isinstance(value, str) or not value:
        return [(at, "a pattern must be a non-empty string")]
    try:
        compile_pattern(value)
    except ValueError as exc:
        return [(at, str(exc))]
    return []


def claims_problems(raw: Any) -> list[Problem]:
    """(pointer, message) for each problem of a `claims` table: RE2 pattern -> tool or tools."""
    if not isinstance(raw, Mapping) or not raw:
        return [("", "claims must be a non-empty mapping of RE2 pattern -> tool (or tools)")]
    out: list[Problem] = []
    for pattern, tools in raw.items():
        at = "/" + str(pattern).replace("~", "~0").replace("/", "~1")
        out += _pattern_problems(pattern, at)
        names = [tools] if isinstance(tools, str) else tools
        if not (isinstance(names, list) and names and all(isinstance(t, str) and t for t in names)):
            out.append((at, "a claim names the tool (or a list of tools) that performs it"))
    return out


def nodes_problems(raw: Any) -> list[Problem]:
    """(pointer, message) for each problem of a `nodes` block."""
    if not isinstance(raw, Mapping):
        return [("", "nodes must be a mapping (match, path or steps)")]
    out: list[Problem] = []
    for key in raw:
        if key not in NODE_KEYS:
            out.append((f"/{key}", f"unknown nodes key {key!r} (one of {', '.join(NODE_KEYS)})"))
    mode = raw.get("match", "superset")
    if mode not in NODE_MODES:
        out.append(("/match", f"match must be one of {', '.join(NODE_MODES)}, not {mode!r}"))
    if ("path" in raw) == ("steps" in raw):
        out.append(
            ("", "nodes takes path (a list of node names) or steps (one list per invocation)")
        )
    path = raw.get("path")
    if "path" in raw and not (isinstance(path, list) and all(_name(n) for n in path)):
        out.append(("/path", "path must be a list of node names (`router`, `inner:inner_1`)"))
    steps = raw.get("steps")
    if "steps" in raw and not (
        isinstance(steps, list)
        and all(isinstance(s, list) and all(_name(n) for n in s) for s in steps)
    ):
        out.append(("/steps", "steps must be a list of lists of node names, one per invocation"))
    if "subgraphs" in raw and not isinstance(raw["subgraphs"], bool):
        out.append(("/subgraphs", "subgraphs must be true or false"))
    return out


def _name(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _checked(problems: list[Problem], key: str, value: Any) -> Any:
    if problems:
        pointer, message = problems[0]
        raise ValueError(f"{message} (at {key}{pointer})")
    return value


def check_checks(value: Any) -> Any:
    """A `checks` value as a model validator checks it: ValueError naming the first problem."""
    return value if value is None else _checked(checks_problems(value), "checks", value)


def check_claims(value: Any) -> Any:
    return value if value is None else _checked(claims_problems(value), "claims", value)


def check_nodes(value: Any) -> Any:
    return value if value is None else _checked(nodes_problems(value), "nodes", value)


def resolve_checks(*layers: Any) -> dict[str, Any]:
    """The checks in force: the defaults, then each layer (a grader's options, the question's
    `checks`) on top; `false` turns everything off, `true` keeps the defaults."""
    out = dict(DEFAULT_CHECKS)
    for layer in layers:
        if layer is None or layer is True:
            continue
        if layer is False:
            out = {}
            continue
        out.update(layer)
    return {k: v for k, v in out.items() if v is not False}
