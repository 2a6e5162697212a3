"""The built-in secret names and value patterns, the environment's secret values, and the
memo bound every policy shares."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any, TypeVar

import re2

REDACTED = "(redacted)"

SECRET_NAME_FRAGMENTS: tuple[str, ...] = (
    "password",
    "passwd",
    "secret",
    "token",
    "api_key",
    "apikey",
    "credential",
    "authorization",
    "auth_key",
    "private_key",
    "access_key",
)

_VALUE_PATTERNS: tuple[str, ...] = (
    # A PEM private key block; an unterminated one is redacted to the end of the text.
    r"(?s:-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----.*?(?:-----END [A-Z ]{0,40}PRIVATE KEY-----|\z))",
    r"(?i:Bearer\s+[A-Za-z0-9\-._~+/]{8,}=*)",  # no word boundary: `xBearer …` too
    r"eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}",  # JWT
    r"sk-(?:proj|ant|svcacct|admin)-[A-Za-z0-9_-]{16,}",  # OpenAI project / Anthropic keys
    r"\bsk-[A-Za-z0-9_-]{16,}",
    r"sk-[A-Za-z0-9]{32,}",  # a legacy OpenAI key glued to a word
    r"gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub tokens
    r"xox[abprs]-[A-Za-z0-9-]{10,}",  # Slack tokens
    r"(?:AKIA|ASIA)[0-9A-Z]{16}",  # AWS access key id
    r"AIza[0-9A-Za-z_-]{35}",  # Google API key
)

# `name=value`, `name: value`, `"name": "value"` with a secret-looking name, in free text and in
# URL query strings: group `key` is kept, the value (with an optional auth scheme) is redacted.
_PAIR = (
    r"(?P<key>(?i:[A-Za-z0-9_.-]*(?:{names})[A-Za-z0-9_.-]*)[\"']?[ \t]*[=:][ \t]*[\"']?)"
    r"(?P<value>(?i:(?:bearer|basic|token|digest)[ \t]+)?[^\s&;,'\"<>()\[\]{{}}]+)"
)


# A URL's userinfo password: the scheme and user are kept, the password redacted, the `@` kept.
# The match starts at `://`: the scheme before it is kept anyway, and matching it too (a
# counted `\b[A-Za-z][A-Za-z0-9+.-]{0,30}`) made RE2's DFA, in the one alternation, track a
# count at every letter of base64 text beside the keys' own counts, outgrow its memory and
# fall back to the NFA: 5 MB of base64 (an image in a tool result) took 3.5 s to scan for
# nothing instead of 0.05 s. A key glued to the scheme is now redacted as well.
_URL_USERINFO = r"(?P<ukey>://[^\s:/@?#]*:)(?P<uvalue>[^\s/?#]+)(?P<utail>@)"

# A secret told in prose: "my password is hunter2", "the API key was: abc". The words are kept.
_PROSE = (
    r"(?P<pkey>(?i:\b(?:{names}|passphrase|passcode|pin|(?:api|access|secret|private)[ _-]key)"
    r"s?[ \t]+(?:is|was|are|reads)[ \t]*:?[ \t]*[\"'`]?))"
    r"(?P<pvalue>[^\s&;,'\"`<>()\[\]{{}}]+)"
)
# Words that follow "the token is" in ordinary error messages: not secrets, kept readable.
_PROSE_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "not",
        "no",
        "none",
        "null",
        "empty",
        "missing",
        "invalid",
        "expired",
        "required",
        "wrong",
        "incorrect",
        "correct",
        "valid",
        "set",
        "unset",
        "too",
        "being",
        "still",
        "also",
        "present",
        "absent",
        "revoked",
        "disabled",
        "enabled",
        "needed",
        "optional",
        "unknown",
        "stored",
        "redacted",
    ]
)

# An AWS secret access key: 40 characters of base64 without padding. Scanned as whole runs of
# that alphabet in a second pass (RE2 has no look-around to say "a run of exactly 40").
_AWS_SECRET_RUN = r"[A-Za-z0-9/+]{40,}="

_AWS_FORTY = re2.compile(r"(?:\A|[^A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?:\z|[^A-Za-z0-9/+=])")
"""A run of exactly 40 of that alphabet, unpadded: the only run an AWS secret can be."""

# Environment variables whose values are secrets (upper-cased names, shell globs).
SECRET_ENV_GLOBS: tuple[str, ...] = ("*_KEY", "*_TOKEN", "*_SECRET", "*PASSWORD*", "*PASSWD*")
MIN_ENV_SECRET = 6
"""Shorter values of secret-named variables are not masked (`1`, `true`, `dev`)."""


def secret_env_values(environ: Mapping[str, str], extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The values of `environ`'s secret-named variables (`SECRET_ENV_GLOBS` and `extra`, names
    or globs, case-insensitive), longest first, each at least `MIN_ENV_SECRET` characters."""
    globs = (*SECRET_ENV_GLOBS, *(g.upper() for g in extra if g))
    values = {
        value
        for name, value in environ.items()
        if len(value) >= MIN_ENV_SECRET and any(fnmatch.fnmatchcase(name.upper(), g) for g in globs)
    }
    return tuple(sorted(values, key=len, reverse=True))


def _qualifies_as_aws_secret(run: str) -> bool:
    return (
        len(run) == 40
        and any(c.isupper() for c in run)
        and any(c.islower() for c in run)
        and any(c.isdigit() for c in run)
    )


def compile_pattern(pattern: str) -> Any:
    """An RE2 pattern object; raises `ValueError` with RE2's reason when `pattern` does not
    compile (RE2 has no look-around or back-references: that is what keeps it linear)."""
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except Exception as exc:  # re2 raises its own error type with a bytes message
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise ValueError(f"not a valid RE2 pattern: {reason}") from None


_MEMO_CHARS = 1_000
"""Texts and names up to this long are remembered by a policy, with what they became..."""
_MEMO_ENTRIES = 4_096
"""... that many of each at most (then forgotten all at once): memory stays bounded."""

_VIEW_DEPTH = 100
"""`view` walks values nested this deep at most; deeper ones take `value()`'s own walk."""

_Known = TypeVar("_Known")


def _remember(memo: dict[str, _Known], key: str, value: _Known) -> None:
    if len(memo) >= _MEMO_ENTRIES:
        memo.clear()
    memo[key] = value
