"""Redaction and truncation shared by the OTLP exporter, the local trace file and the judge
rendering, so one rule decides what leaves the process.

Names: seed 000's eleven fragments, case-insensitive substring on the argument *name*.
Values: patterns for secrets that arrive under innocuous names (bearer tokens, common API key
formats, JWTs, PEM private key blocks).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "REDACTED",
    "SECRET_NAME_FRAGMENTS",
    "is_secret_name",
    "redact_arguments",
    "redact_text",
    "truncate",
]

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
    r"(?s:-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z))",
    r"(?i:\bBearer\s+[A-Za-z0-9\-._~+/]{8,}=*)",
    r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}",  # JWT
    r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}",  # OpenAI / Anthropic style
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",  # GitHub tokens
    r"\bxox[abprs]-[A-Za-z0-9-]{10,}",  # Slack tokens
    r"\bAKIA[0-9A-Z]{16}\b",  # AWS access key id
    r"\bAIza[0-9A-Za-z_-]{35}\b",  # Google API key
)
# One alternation, one scan per string: the export path runs this on every span attribute.
_SECRETS = re.compile("|".join(_VALUE_PATTERNS))


def is_secret_name(name: str) -> bool:
    """True when an argument name contains one of the eleven fragments (case-insensitive)."""
    lowered = name.lower()
    return any(fragment in lowered for fragment in SECRET_NAME_FRAGMENTS)


def redact_text(text: str) -> str:
    """Replace every value-pattern secret inside `text` with `(redacted)`."""
    return _SECRETS.sub(REDACTED, text)


def truncate(text: str, limit: int) -> str:
    """Cut `text` to at most `limit` characters (no marker: the limit is the contract)."""
    return text if len(text) <= limit else text[:limit]


def redact_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `arguments` with secret-named values replaced and string values scrubbed of
    secret-looking patterns, recursively. Shapes are kept; nothing is truncated here."""
    return {key: _redact_value(key, value) for key, value in arguments.items()}


def _redact_value(name: str, value: Any) -> Any:
    if is_secret_name(str(name)):
        return REDACTED
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {k: _redact_value(k, v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact_value("", v) for v in value]
    return value
