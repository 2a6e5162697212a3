"""state_grader: assertions in metadata.state checked against a real SQLite environment."""

from __future__ import annotations

import pytest

from tracegrade import SQLiteEnvironment
from tracegrade.graders import StateGrader, build_context

GRADER = StateGrader()
SCHEMA = """
CREATE TABLE tickets (id INTEGER PRIMARY KEY, status TEXT, priority INTEGER);
INSERT INTO tickets VALUES (1, 'open', 2), (7, 'closed', 1);
"""


@pytest.fixture
def env():
    environment = SQLiteEnvironment(schema_sql=SCHEMA)
    environment.write("tickets/7/owner", "alice")
    environment.write("tickets/7/tags", ["billing", "vip"])
    environment.write("tickets/7/escalated", False)
    yield environment
    environment.close()


def grade(state, environment, *, response="anything", key="state"):
    row = {"id": "q", "metadata": {key: state} if state is not ... else {}}
    context = build_context(row, messages=[], environment=environment)
    return GRADER.grade("x", response, context)


def test_declarations():
    assert StateGrader.observes_actions and StateGrader.binary
    assert (StateGrader.min_score, StateGrader.max_score) == (0.0, 5.0)


@pytest.mark.parametrize(
    "assertion",
    [
        {"kind": "sql", "query": "SELECT status FROM tickets WHERE id = 7", "equals": "closed"},
        {"kind": "sql", "query": "SELECT priority FROM tickets WHERE id = 7", "equals": "1"},
        {"kind": "sql", "query": "SELECT priority FROM tickets WHERE id = 7", "equals": 1},
        {
            "kind": "sql",
            "query": "SELECT id, status FROM tickets ORDER BY id",
            "rows": [[1, "open"], [7, "closed"]],
        },
        {"kind": "sql", "query": "SELECT id FROM tickets ORDER BY id", "rows": [["1"], ["7"]]},
        {"kind": "sql", "query": "SELECT * FROM tickets", "count": 2},
        {"kind": "sql", "query": "SELECT * FROM tickets WHERE id = 99", "count": 0},
        {"kind": "key", "key": "tickets/7/owner", "equals": "alice"},
        {"kind": "key", "key": "tickets/7/tags", "equals": ["billing", "vip"]},
        {"kind": "key", "key": "tickets/7/escalated", "equals": False},
        {"kind": "key", "key": "tickets/7/owner", "exists": True},
        {"kind": "key", "key": "drafts/7", "absent": True},
    ],
)
def test_assertion_passes(env, assertion):
    result = grade({"assertions": [assertion]}, env)
    assert (result.score, result.reason) == (5.0, "all 1 state assertion passed")


@pytest.mark.parametrize(
    ("assertion", "why"),
    [
        (
            {"kind": "sql", "query": "SELECT status FROM tickets WHERE id = 7", "equals": "open"},
            "assertions[0] (sql `SELECT status FROM tickets WHERE id = 7`): "
            "expected equals 'open', actual 'closed'",
        ),
        (
            {"kind": "sql", "query": "SELECT status FROM tickets WHERE id = 99", "equals": "open"},
            "assertions[0] (sql `SELECT status FROM tickets WHERE id = 99`): "
            "expected equals 'open', actual no rows",
        ),
        (
            {"kind": "sql", "query": "SELECT id FROM tickets ORDER BY id", "rows": [[7], [1]]},
            "assertions[0] (sql `SELECT id FROM tickets ORDER BY id`): "
            "expected rows [[7], [1]], actual [[1], [7]]",
        ),
        (
            {"kind": "sql", "query": "SELECT * FROM tickets", "count": 3},
            "assertions[0] (sql `SELECT * FROM tickets`): expected count 3, actual 2",
        ),
        (
            {"kind": "sql", "query": "SELECT * FROM nope", "count": 3},
            "assertions[0] (sql `SELECT * FROM nope`): query failed: OperationalError: "
            "no such table: nope",
        ),
        (
            {"kind": "key", "key": "tickets/7/owner", "equals": "bob"},
            "assertions[0] (key `tickets/7/owner`): expected equals 'bob', actual 'alice'",
        ),
        (
            {"kind": "key", "key": "tickets/7/escalated", "equals": 0},
            "assertions[0] (key `tickets/7/escalated`): expected equals 0, actual False",
        ),
        (
            {"kind": "key", "key": "drafts/7", "exists": True},
            "assertions[0] (key `drafts/7`): expected exists, actual absent",
        ),
        (
            {"kind": "key", "key": "drafts/7", "equals": "x"},
            "assertions[0] (key `drafts/7`): expected equals 'x', actual absent",
        ),
        (
            {"kind": "key", "key": "tickets/7/owner", "absent": True},
            "assertions[0] (key `tickets/7/owner`): expected absent, actual 'alice'",
        ),
    ],
)
def test_assertion_fails_with_actual_value(env, assertion, why):
    result = grade({"assertions": [assertion]}, env)
    assert (result.score, result.error) == (0.0, False)
    assert result.reason == f"1 of 1 state assertion failed: {why}"


def test_any_failure_is_zero_and_all_failures_named(env):
    result = grade(
        {
            "assertions": [
                {"kind": "sql", "query": "SELECT * FROM tickets", "count": 2},
                {"kind": "key", "key": "a", "exists": True},
                {"kind": "key", "key": "b", "exists": True},
            ]
        },
        env,
    )
    assert result.score == 0.0
    assert result.reason == (
        "2 of 3 state assertions failed: assertions[1] (key `a`): expected exists, actual "
        "absent; assertions[2] (key `b`): expected exists, actual absent"
    )


def test_sees_what_tools_wrote(env):
    spec = {
        "assertions": [
            {"kind": "sql", "query": "SELECT status FROM tickets WHERE id = 1", "equals": "closed"}
        ]
    }
    assert grade(spec, env).score == 0.0
    env.execute("UPDATE tickets SET status = 'closed' WHERE id = 1")  # what a tool would do
    assert grade(spec, env).score == 5.0


def test_never_reads_the_response(env):
    spec = {"assertions": [{"kind": "key", "key": "tickets/7/owner", "equals": "alice"}]}
    assert grade(spec, env, response="").score == grade(spec, env, response="I failed").score


def test_state_may_be_the_list_of_assertions_itself(env):
    env.write("tickets/7/owner", "alice")
    listed = [{"kind": "key", "key": "tickets/7/owner", "equals": "alice"}]
    assert grade(listed, env).score == 5.0
    assert grade([{"kind": "key", "key": "tickets/7/owner", "equals": "bob"}], env).score == 0.0


def test_no_state_key_skips(env):
    for row in ({"id": "q"}, {"id": "q", "metadata": {"other": 1}}, {"id": "q", "metadata": "x"}):
        result = GRADER.grade("", "", build_context(row, messages=[], environment=env))
        assert result.skipped and result.reason == "no metadata.state in context, skipping"


@pytest.mark.parametrize(
    ("state", "why"),
    [
        ("SELECT 1", "metadata.state must be a mapping, got str"),
        (None, "metadata.state must be a mapping, got NoneType"),
        ({}, "metadata.state.assertions must be a non-empty list"),
        ({"assertions": []}, "metadata.state.assertions must be a non-empty list"),
        ({"assertions": {"kind": "sql"}}, "metadata.state.assertions must be a non-empty list"),
        ({"assertions": ["x"]}, "metadata.state.assertions[0] must be a mapping"),
        (
            {"assertions": [{"kind": "http", "url": "x"}]},
            "metadata.state.assertions[0].kind must be sql or key, got 'http'",
        ),
        (
            {"assertions": [{"kind": "sql", "count": 1}]},
            "metadata.state.assertions[0].query must be a non-empty SQL string",
        ),
        (
            {"assertions": [{"kind": "sql", "query": "SELECT 1"}]},
            "metadata.state.assertions[0] needs exactly one of equals, rows, count",
        ),
        (
            {"assertions": [{"kind": "sql", "query": "SELECT 1", "equals": 1, "count": 1}]},
            "metadata.state.assertions[0] needs exactly one of equals, rows, count",
        ),
        (
            {"assertions": [{"kind": "sql", "query": "SELECT 1", "count": -1}]},
            "metadata.state.assertions[0].count must be a non-negative integer",
        ),
        (
            {"assertions": [{"kind": "sql", "query": "SELECT 1", "count": True}]},
            "metadata.state.assertions[0].count must be a non-negative integer",
        ),
        (
            {"assertions": [{"kind": "sql", "query": "SELECT 1", "rows": [1]}]},
            "metadata.state.assertions[0].rows must be a list of rows (lists)",
        ),
        (
            {"assertions": [{"kind": "key", "exists": True}]},
            "metadata.state.assertions[0].key must be a non-empty string",
        ),
        (
            {"assertions": [{"kind": "key", "key": "a", "exists": False}]},
            "metadata.state.assertions[0].exists must be true",
        ),
        (
            {"assertions": [{"kind": "key", "key": "a", "rows": [[1]]}]},
            "metadata.state.assertions[0] needs exactly one of equals, exists, absent",
        ),
    ],
)
def test_malformed_state_is_a_setup_failure_not_a_skip(env, state, why):
    result = grade(state, env)
    assert (result.score, result.error) == (0.0, False)
    assert result.reason == f"setup failure: {why}"


def test_no_environment_is_an_error():
    spec = {"assertions": [{"kind": "key", "key": "a", "exists": True}]}
    result = GRADER.grade("", "", build_context({"metadata": {"state": spec}}, messages=[]))
    assert result.error and result.score is None
    assert result.reason == (
        "no environment in context (the target declares no environment factory), "
        "cannot verify metadata.state"
    )
