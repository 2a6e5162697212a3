"""`RedactionPolicy.view`, the store's walk of a row, messages, grader checks and details: one
pass over the keys and one scan of the texts in place of a call per key and item. What it
gives must be exactly what `value()` (the per-item walk) gives, whatever the value holds and
whatever the policy has already seen; where nothing is redacted it hands the value back."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_redaction_joined import _SECRETS
from tracegrade.redaction import DEFAULT_POLICY, REDACTED, RedactionPolicy

_SECRET_VALUES = [
    *_SECRETS,
    "published-test-key",  # allowed by the second policy
    "x" * 1_100,  # longer than the policy remembers
]
_SECRET_NAMES = ["password", "api_key", "Authorization", "my_token", "max_tokens", "ticket", ""]
_TEXT = st.lists(st.one_of(st.sampled_from(_SECRET_VALUES), st.text(max_size=12)), max_size=3).map(
    "".join
)
_KEY = st.one_of(st.sampled_from(_SECRET_NAMES), _TEXT)
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), _TEXT)
_JSON = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEY, inner, max_size=4)),
    max_leaves=25,
)
# beside JSON's types: what value() turns into lists, dicts or text
_ANY = st.recursive(
    st.one_of(_SCALAR, st.just(b"bytes"), st.just(3j)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(_KEY, st.integers()), inner, max_size=3),
    ),
    max_leaves=15,
)
_POLICIES = [
    DEFAULT_POLICY,
    RedactionPolicy(names=("ticket",), allow=("max_tokens", "published-test-key"),
                    patterns=(r"published-[a-z]+-key",)),
    RedactionPolicy(patterns=(r"^hunter22$",)),  # anchored: no joined scan
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(value=_JSON, which=st.integers(0, len(_POLICIES) - 1), by_name=st.booleans())
def test_view_is_what_the_per_item_walk_gives(value, which, by_name):
    policy = _POLICIES[which]  # shared: what it already remembers must not change the answer
    before = json.dumps(value)
    expected = policy.value(value, by_name=by_name)
    assert policy.view(value, by_name=by_name) == expected
    fresh = RedactionPolicy(names=policy.names, patterns=policy.patterns, allow=policy.allow)
    assert fresh.view(value, by_name=by_name) == expected
    assert json.dumps(value) == before  # the value itself is never changed


@settings(max_examples=150, deadline=None)
@given(value=_ANY, by_name=st.booleans())
def test_view_of_other_types_is_what_value_gives(value, by_name):
    assert DEFAULT_POLICY.view(value, by_name=by_name) == DEFAULT_POLICY.value(
        value, by_name=by_name
    )


@settings(max_examples=150, deadline=None)
@given(value=_JSON, secret=st.sampled_from(_SECRET_VALUES[:6]), key=st.sampled_from(_SECRET_NAMES))
def test_a_planted_secret_never_survives_the_view(value, secret, key):
    # (a key is judged by its name only, here as in value(): a secret-looking key stays)
    planted = {"graders": [value, {key: {"deep": [f"see {secret} here"]}}]}
    inner = DEFAULT_POLICY.view(planted)["graders"][1][key]
    assert inner == REDACTED or secret not in json.dumps(inner)
    named = {"checks": [value], "password": "hunter2-correct-horse"}
    out = DEFAULT_POLICY.view(named)
    assert out["password"] == REDACTED


def test_a_clean_value_is_handed_back_uncopied():
    details = {"source": "record", "expectations": [{"met": True, "why": "", "n": 1.5}]}
    assert DEFAULT_POLICY.view(details) is details
    assert DEFAULT_POLICY.value(details) == details


def test_values_nested_deeper_than_the_walk_take_values_own_walk():
    deep: list = ["Bearer abcdefghijklmnop123"]
    for _ in range(150):
        deep = [deep]
    assert DEFAULT_POLICY.view(deep) == DEFAULT_POLICY.value(deep)
    assert "abcdefghijklmnop123" not in json.dumps(DEFAULT_POLICY.view(deep))


@settings(max_examples=200, deadline=None)
@given(
    secret=st.sampled_from([s for s in _SECRETS if DEFAULT_POLICY.text(s) != s]),
    prefix=st.text(max_size=6),
    inner=st.one_of(st.none(), st.integers(), st.lists(st.text(alphabet="abc ", max_size=5))),
    which=st.integers(0, len(_POLICIES) - 1),
)
def test_a_secret_written_as_a_key_never_survives(secret, prefix, inner, which):
    """A key is text the agent chose (a tool call's argument names): a secret there is redacted
    like one in a value, by every walk, and a key redacted alike to another loses neither."""
    policy = _POLICIES[which]
    key = prefix + " " + secret
    value = {"args": {key: inner, secret: "second"}}
    for shown in (
        policy.value(value),
        policy.view(value),
        policy.arguments(value["args"]),
        policy.value(value, by_name=False),
    ):
        assert json.dumps(secret)[1:-1] not in json.dumps(shown)
    assert len(policy.value(value)["args"]) == 2
