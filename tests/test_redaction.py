"""Redaction shared by exporter, trace file and judge rendering: names per seed 000, plus
value patterns for secrets under innocuous names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracegrade.redaction import (
    REDACTED,
    SECRET_NAME_FRAGMENTS,
    is_secret_name,
    redact_arguments,
    redact_text,
    truncate,
)


def test_the_eleven_fragments_of_seed_000():
    assert SECRET_NAME_FRAGMENTS == (
        "password", "passwd", "secret", "token", "api_key", "apikey", "credential",
        "authorization", "auth_key", "private_key", "access_key",
    )  # fmt: skip


@given(
    fragment=st.sampled_from(SECRET_NAME_FRAGMENTS),
    prefix=st.text(alphabet="abcXYZ_-", max_size=5),
    suffix=st.text(alphabet="abcXYZ_-", max_size=5),
    upper=st.booleans(),
    value=st.one_of(st.text(), st.integers(), st.lists(st.text(), max_size=3)),
)
def test_secret_named_values_never_survive(fragment, prefix, suffix, upper, value):
    name = prefix + (fragment.upper() if upper else fragment) + suffix
    assert is_secret_name(name)
    assert redact_arguments({name: value, "node_type": "kb_doc"}) == {
        name: REDACTED,
        "node_type": "kb_doc",
    }


@pytest.mark.parametrize(
    "secret",
    [
        "Bearer abcdefghijklmnop123",
        "sk-proj-ABCDEFGHIJKLMNOPQRSTUV",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "ghp_" + "a" * 36,
        "AKIAIOSFODNN7EXAMPLE",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    ],
)
def test_value_patterns_are_redacted_under_innocuous_names(secret):
    out = redact_arguments({"note": f"use {secret} please", "nested": {"x": [secret]}})
    assert secret not in str(out)
    assert REDACTED in out["note"] and out["nested"]["x"] == [REDACTED]


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_plain_text_without_secrets_is_untouched(text):
    if any(p in text for p in ("Bearer", "sk-", "eyJ", "gh", "xox", "AKIA", "AIza", "-----BEGIN")):
        return
    assert redact_text(text) == text


def test_truncate():
    assert truncate("abc", 2) == "ab" and truncate("abc", 3) == "abc"


_SECRETS = [
    "Bearer abcdefghijklmnop123",
    "bearer ABCDEFGH12345678==",
    "sk-proj-ABCDEFGHIJKLMNOPQRSTUV",
    "sk-ant-abcdefghijklmnop_QRS",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmN",
    "ghp_" + "a" * 36,
    "xoxb-1234567890-abcdef",
    "AKIAIOSFODNN7EXAMPLE",
    "AIza" + "B" * 35,
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEow sk-x\n-----END RSA PRIVATE KEY-----",
]


@given(
    pieces=st.lists(
        st.one_of(
            st.sampled_from(_SECRETS),
            st.text(alphabet='abc XYZ.,:;\n"{}[]', max_size=12),
        ),
        max_size=8,
    )
)
def test_every_secret_in_mixed_text_is_redacted_in_one_pass(pieces):
    # Secrets separated by a space (the patterns anchor on word boundaries), in any order and
    # number, beside JSON-ish punctuation: none survives, and the plain words around them do.
    text = " ".join(pieces)
    out = redact_text(text)
    for secret in _SECRETS:
        if secret in pieces:
            assert secret not in out
    plain = [p for p in pieces if p not in _SECRETS]
    assert out.count(REDACTED) == len(pieces) - len(plain)
    for word in plain:
        assert word in out
