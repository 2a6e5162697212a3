"""The fault campaign's secrets and resource cases, kept as a corpus the suite runs.

Secrets: shapes the patterns once did not know (a URL's userinfo password, an AWS secret access
key in free text, a password told in prose, a judge reply echoing one) and the values of the
process's secret-named environment variables, each through every channel of the policy (plain
text, tool arguments, span attributes, the store, the judge wire and its reply). The whole run
(every file, report, console and wire) is scanned by tests/test_redaction_e2e.py.

Hangs and unbounded resources: each case a real run or call that once never ended or grew without
bound, now cut with the reason named.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from tests.test_redaction_policy import _judge_channel, _span_channel, _store_channel
from tracegrade.redaction import REDACTED, RedactionPolicy


# -- secrets written in clear ---------------------------------------------------------------
@dataclass(frozen=True)
class SecretCase:
    name: str
    planted: str
    secret: str
    """What must not survive in any channel."""
    kept: str
    """What must survive (the policy does not eat the text around a secret)."""
    env: tuple[tuple[str, str], ...] = ()
    """Environment variables set when the policy is built."""
    config_env: tuple[str, ...] = ()
    """The config's `redaction.env`."""


SECRET_CASES = [
    SecretCase(
        "url-userinfo-postgres",
        "connect failed: postgres://admin:Pg4dm1nUserinfo@db.internal:5432/prod (timeout)",
        "Pg4dm1nUserinfo",
        "postgres://admin:(redacted)@db.internal:5432/prod",
    ),
    SecretCase(
        "url-userinfo-empty-user",
        "cache at redis://:R3disOnlyPassw@cache.internal:6379/0",
        "R3disOnlyPassw",
        "redis://:(redacted)@cache.internal",
    ),
    SecretCase(
        "url-userinfo-at-in-password",
        "dsn=mysql://app:p@ssW0rdWithAt@db:3306/x",
        "ssW0rdWithAt",
        "@db:3306/x",
    ),
    SecretCase(
        "aws-secret-key-free-text",
        "keys AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY in the log",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "in the log",
    ),
    SecretCase(
        "aws-secret-key-csv",
        "AKIAIOSFODNN7EXAMPLE,je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
        "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
        ",",
    ),
    SecretCase(
        "prose-my-password-is",
        "Sure! By the way my password is Hunter2Prose, keep it safe.",
        "Hunter2Prose",
        "keep it safe.",
    ),
    SecretCase(
        "prose-api-key-was",
        "The API key was: ProseApiKey991 and it worked",
        "ProseApiKey991",
        "and it worked",
    ),
    SecretCase(
        "prose-secret-is-quoted",
        "the secret is 'Quoted-Secret-55'",
        "Quoted-Secret-55",
        "the secret is",
    ),
    SecretCase(
        "env-password-value",
        "logged in as ana with PlainEnvValue-1 at 10:02",
        "PlainEnvValue-1",
        "at 10:02",
        env=(("CASE_DB_PASSWORD", "PlainEnvValue-1"),),
    ),
    SecretCase(
        "env-token-value-glued",
        "header=xxPlainTokenValue2yy",
        "PlainTokenValue2",
        "header=",
        env=(("SERVICE_TOKEN", "PlainTokenValue2"),),
    ),
    SecretCase(
        "env-key-value-with-quote",
        'json {"v": "quo\\"ted-KeyValue3"}',
        'quo\\"ted-KeyValue3',
        "json",
        env=(("VENDOR_API_KEY", 'quo"ted-KeyValue3'),),
    ),
    SecretCase(
        "env-secret-value-lowercase-name",
        "signing with SigningSecretValue4",
        "SigningSecretValue4",
        "signing with",
        env=(("app_signing_secret", "SigningSecretValue4"),),
    ),
    SecretCase(
        "env-config-listed-glob",
        "vendor code CfgListedValue-5 accepted",
        "CfgListedValue-5",
        "accepted",
        env=(("ACME_VENDOR_CODE", "CfgListedValue-5"),),
        config_env=("ACME_*",),
    ),
]


def _channels(policy: RedactionPolicy, text: str, tmp) -> dict[str, str]:
    return {
        "text": policy.text(text),
        "arguments": json.dumps(policy.arguments({"note": text, "nested": [{"x": text}]})),
        "span": _span_channel(text, policy=policy),
        "store": _store_channel(text, tmp, policy=policy),
        "judge": _judge_channel(text, policy=policy),
    }


@pytest.mark.parametrize("case", SECRET_CASES, ids=lambda c: c.name)
def test_secret_shape_is_redacted_in_every_channel(case, tmp_path, monkeypatch):
    for name, value in case.env:
        monkeypatch.setenv(name, value)
    policy = RedactionPolicy(env=case.config_env) if case.config_env else RedactionPolicy()
    channels = _channels(policy, case.planted, tmp_path)
    for channel, out in channels.items():
        assert case.secret not in out, (channel, out)
    assert case.kept in channels["text"] and REDACTED in channels["text"]


@pytest.mark.parametrize(
    "text",
    [
        "commit 3f786850e387550fdab836ed7e6dc881de23001b is on main",  # a git SHA: one case
        "the token is expired; the password is required",  # error messages stay readable
        "see https://example.com:8080/path?q=1 and http://host/a@b",  # no userinfo
        "TOKENIZERS_PARALLELISM is false",
    ],
)
def test_ordinary_text_like_a_new_shape_is_kept(text, monkeypatch):
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")  # short values are not masked
    monkeypatch.setenv("EMPTY_TOKEN", "")
    assert RedactionPolicy().text(text) == text
