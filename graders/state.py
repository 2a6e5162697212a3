"""`state_grader`: assertions in `metadata.state`, checked against the real environment the
agent's tools acted on (the droost_state row of seed 000). It never reads the response.

```yaml
metadata:
  state:
    assertions:
      - {kind: sql, query: "SELECT status FROM tickets WHERE id = 7", equals: closed}
      - {kind: sql, query: "SELECT id FROM tickets ORDER BY id", rows: [[1], [7]]}
      - {kind: sql, query: "SELECT * FROM audit", count: 2}
      - {kind: key, key: "tickets/7/owner", equals: alice}
      - {kind: key, key: "drafts/7", absent: true}
```

Every assertion passes: 5.0; any fails: 0.0 naming each failing assertion and the actual value.
No `state` key: skip. A malformed `state`: 0.0 with a setup-failure reason (the question declared
the intent to be graded here; skipping would hide the broken spec). No environment: error.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from ..records import GradeResult
from .base import Grader, GraderServices
from .tool_usage import same_scalar

__all__ = ["GRADERS", "SetupFailure", "StateGrader", "parse_assertions", "same_value"]

_SQL_CHECKS = ("equals", "rows", "count")
_KEY_CHECKS = ("equals", "exists", "absent")


class SetupFailure(ValueError):
    """A `metadata.state` spec that cannot be checked as written."""


def same_value(actual: Any, expected: Any) -> bool:
    """Scalars as `same_scalar` (text, booleans and null strict); lists and mappings deeply."""
    if isinstance(expected, Mapping):
        return (
            isinstance(actual, Mapping)
            and set(actual) == set(expected)
            and all(same_value(actual[k], expected[k]) for k in expected)
        )
    if isinstance(expected, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(expected)
            and all(same_value(a, e) for a, e in zip(actual, expected, strict=True))
        )
    return same_scalar(actual, expected)


def parse_assertions(state: Any) -> list[Mapping[str, Any]]:
    """Validate `metadata.state`; raise `SetupFailure` naming the offending part."""
    if isinstance(state, list):  # the list of assertions itself
        state = {"assertions": state}
    if not isinstance(state, Mapping):
        raise SetupFailure(f"metadata.state must be a mapping, got {type(state).__name__}")
    assertions = state.get("assertions")
    if not isinstance(assertions, list) or not assertions:
        raise SetupFailure("metadata.state.assertions must be a non-empty list")
    for index, item in enumerate(assertions):
        where = f"metadata.state.assertions[{index}]"
        if not isinstance(item, Mapping):
            raise SetupFailure(f"{where} must be a mapping")
        kind = item.get("kind")
        if kind == "sql":
            if not isinstance(item.get("query"), str) or not item["query"].strip():
                raise SetupFailure(f"{where}.query must be a non-empty SQL string")
            checks = [c for c in _SQL_CHECKS if c in item]
        elif kind == "key":
            if not isinstance(item.get("key"), str) or not item["key"]:
                raise SetupFailure(f"{where}.key must be a non-empty string")
            checks = [c for c in _KEY_CHECKS if c in item]
        else:
            raise SetupFailure(f"{where}.kind must be sql or key, got {kind!r}")
        allowed = _SQL_CHECKS if kind == "sql" else _KEY_CHECKS
        if len(checks) != 1:
            raise SetupFailure(f"{where} needs exactly one of {', '.join(allowed)}")
        check, value = checks[0], item[checks[0]]
        if check in ("exists", "absent") and value is not True:
            raise SetupFailure(f"{where}.{check} must be true")
        if check == "count" and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            raise SetupFailure(f"{where}.count must be a non-negative integer")
        if check == "rows" and not (
            isinstance(value, list) and all(isinstance(r, list) for r in value)
        ):
            raise SetupFailure(f"{where}.rows must be a list of rows (lists)")
    return assertions


def _describe(index: int, item: Mapping[str, Any]) -> str:
    target = f"sql `{item['query']}`" if item["kind"] == "sql" else f"key `{item['key']}`"
    return f"assertions[{index}] ({target})"


def _check(environment: Any, item: Mapping[str, Any]) -> str | None:
    """None when the assertion holds, else "expected ..., actual ..."."""
    if item["kind"] == "sql":
        try:
            rows = environment.query(item["query"])
        except sqlite3.Error as exc:
            return f"query failed: {type(exc).__name__}: {exc}"
        if "count" in item:
            ok = len(rows) == item["count"]
            return None if ok else f"expected count {item['count']}, actual {len(rows)}"
        if "rows" in item:
            actual = [list(r) for r in rows]
            ok = same_value(actual, item["rows"])
            return None if ok else f"expected rows {item['rows']!r}, actual {actual!r}"
        if not rows or not rows[0]:
            return f"expected equals {item['equals']!r}, actual no rows"
        ok = same_value(rows[0][0], item["equals"])
        return None if ok else f"expected equals {item['equals']!r}, actual {rows[0][0]!r}"
    try:
        value = environment.read(item["key"])
        present = True
    except KeyError:
        value, present = None, False
    if "absent" in item:
        return None if not present else f"expected absent, actual {value!r}"
    if not present:
        wanted = "exists" if "exists" in item else f"equals {item['equals']!r}"
        return f"expected {wanted}, actual absent"
    if "exists" in item:
        return None
    ok = same_value(value, item["equals"])
    return None if ok else f"expected equals {item['equals']!r}, actual {value!r}"


class StateGrader(Grader):
    """Checks `metadata.state` assertions against the question's real environment."""

    id = "state_grader"
    label = "Environment state"
    description = (
        "Deterministic: do the assertions in metadata.state hold in the real environment the "
        "agent's tools acted on? Never reads the response."
    )
    observes_actions = True
    binary = True
    needs = "`metadata.state` (required, else skips)"
    owns = ("metadata.state",)
    evidence = ("environment",)

    def __init__(self, *, services: GraderServices | None = None) -> None:
        # No options: an unknown option in a config is an error, not silently ignored.
        super().__init__(services=services)

    def grade(self, input: str, response: str, context: Mapping[str, Any]) -> GradeResult:
        metadata = context.get("metadata")
        if not isinstance(metadata, Mapping) or "state" not in metadata:
            return self.result(None, "no metadata.state in context, skipping")
        try:
            assertions = parse_assertions(metadata["state"])
        except SetupFailure as exc:
            return self.result(0.0, f"setup failure: {exc}")
        environment = context.get("environment")
        if environment is None:
            return self.result(
                None,
                "no environment in context (the target declares no environment factory), "
                "cannot verify metadata.state",
                True,
            )
        failures = []
        for index, item in enumerate(assertions):
            problem = _check(environment, item)
            if problem is not None:
                failures.append(f"{_describe(index, item)}: {problem}")
        total = len(assertions)
        plural = "s" if total != 1 else ""
        if not failures:
            return self.result(5.0, f"all {total} state assertion{plural} passed")
        return self.result(
            0.0,
            f"{len(failures)} of {total} state assertion{plural} failed: " + "; ".join(failures),
            details={"failures": failures},
        )


GRADERS: list[type[Grader]] = [StateGrader]
