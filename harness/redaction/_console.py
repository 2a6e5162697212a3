"""The default policy, the console's policy and log formatter, and the module-level helpers
that use the default policy."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ._policy import DeferredScan, RedactionPolicy

Scrubber = RedactionPolicy | DeferredScan
"""What redacts a value on its way out: the policy, or the policy's scan put off."""

DEFAULT_POLICY = RedactionPolicy()
"""The built-in names and patterns, no additions."""


_console: list[RedactionPolicy] = [DEFAULT_POLICY]


def console_policy() -> RedactionPolicy:
    """The policy of the console's log lines and error messages: the built-in one, or the last
    loaded config's (`use_console_policy`), so its `names`, `patterns` and `env` hold there too."""
    return _console[0]


def use_console_policy(policy: RedactionPolicy | None) -> None:
    """Make `policy` the console's (None: the built-in policy again)."""
    _console[0] = policy or DEFAULT_POLICY


class RedactingFormatter(logging.Formatter):
    """A log formatter whose whole output (message, arguments, traceback) is redacted: the
    console is an exit too, and an isolated exception logged with its traceback quotes the
    agent's, tool's or grader's message. Without a `policy`, the console's (`console_policy`)."""

    def __init__(self, fmt: str | None = None, *, policy: RedactionPolicy | None = None) -> None:
        super().__init__(fmt)
        self.policy = policy

    def format(self, record: logging.LogRecord) -> str:
        return (self.policy or console_policy()).text(super().format(record))


def is_secret_name(name: str) -> bool:
    """True when an argument name contains one of the eleven fragments (case-insensitive)."""
    return DEFAULT_POLICY.is_secret_name(name)


def redact_text(text: str) -> str:
    """Replace every value-pattern secret inside `text` with `(redacted)` (default policy)."""
    return DEFAULT_POLICY.text(text)


def truncate(text: str, limit: int) -> str:
    """Cut `text` to at most `limit` characters (no marker: the limit is the contract)."""
    return text if len(text) <= limit else text[:limit]


def redact_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `arguments` with secret-named values replaced and string values scrubbed of
    secret-looking patterns, recursively (default policy)."""
    return DEFAULT_POLICY.arguments(arguments)
