"""One error tree for tracegrade, each class carrying the exit code the CLI maps it to.

Context (file, line, key, question id) is attached to the error rather than baked into the
message, so reports and the CLI can render it consistently.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import IntEnum
from typing import Any

__all__ = [
    "CaptureError",
    "ConfigError",
    "DatasetError",
    "EvaluationError",
    "ExitCode",
    "InputError",
    "JudgeError",
    "NothingToRunError",
    "PluginError",
    "ProviderError",
    "RubricError",
    "TracegradeError",
    "located",
    "suggest",
]


def suggest(word: str, known: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The known name `word` most likely misspells, or None: the one rule behind every
    "did you mean" hint. A known name that `word` extends by whole `_`-separated words is no
    suggestion (`user_name` names something else than `user`), nor is a known name shorter
    than half of `word`."""
    import difflib

    names = [n for n in known if not _extends(word, n)]
    close = difflib.get_close_matches(word, names, n=1, cutoff=cutoff)
    return close[0] if close else None


def _extends(word: str, name: str) -> bool:
    parts, base = word.split("_"), name.split("_")
    return (len(parts) > len(base) and parts[: len(base)] == base) or len(name) * 2 < len(word)


class ExitCode(IntEnum):
    """The CI contract (DESIGN.md, "Exit codes")."""

    OK = 0
    INTERNAL = 1
    GATE_FAILED = 2
    INCOMPLETE = 3
    INVALID_INPUT = 4
    NOTHING_TO_RUN = 5


class TracegradeError(Exception):
    """Base of every error tracegrade raises on purpose."""

    exit_code: ExitCode = ExitCode.INTERNAL

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        key: str | None = None,
        question_id: str | None = None,
        hint: str | None = None,
        **context: Any,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.key = key
        self.question_id = question_id
        self.hint = hint
        self.context = context

    def location(self) -> str:
        """`file:line` (or the parts known), empty when nothing is known."""
        if self.file is None:
            return ""
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    def __str__(self) -> str:
        return self.render()

    def render(self, redact: Callable[[str], str] | None = None) -> str:
        """The error as printed; `redact` (a redaction policy's `text`) is applied to what the
        user or the agent supplied (the message, the hint, the question id), never to
        tracegrade's own words around it: a key named `max_tokens_per_question` or a question
        id holding "password" is not a secret's name followed by its value."""
        problems = self.context.get("problems") or ()
        message = self.message
        if len(problems) > 1 and all(hasattr(p, "render") for p in problems):
            listing = "\n".join(f"  {p.render(redact)}" for p in problems)
            message = f"{len(problems)} problems:\n{listing}"
        elif redact is not None:
            message = redact(message)
        return located(
            message,
            where=self.location(),
            key=self.key,
            question_id=self.question_id,
            hint=self.hint,
            redact=redact if len(problems) <= 1 else None,
        )


def located(
    message: str,
    *,
    where: str,
    key: str | None,
    question_id: str | None,
    hint: str | None,
    redact: Callable[[str], str] | None = None,
) -> str:
    """`file:line: question 'id': at key: message (hint)`, the parts known; `redact` applied
    to the supplied parts (question id, hint) only, the message being redacted by the caller."""
    show = redact or (lambda text: text)
    parts = [f"{where}:"] if where else []
    if question_id is not None:
        parts.append(f"question {show(question_id)!r}:")
    if key is not None:
        parts.append(f"at {key}:")
    parts.append(message)
    text = " ".join(parts)
    return f"{text} ({show(hint)})" if hint else text


class InputError(TracegradeError):
    """Invalid input: config, dataset, rubric, plugin declaration or CLI usage (exit 4)."""

    exit_code = ExitCode.INVALID_INPUT


class DatasetError(InputError):
    """A dataset file that cannot be parsed or does not satisfy the schema."""


class ConfigError(InputError):
    """A config file that cannot be parsed or does not satisfy the schema."""


class RubricError(InputError):
    """A rubric file that is invalid, or a `rubric_ref` that resolves to nothing."""


class PluginError(InputError):
    """A grader plugin whose declaration is invalid, or that cannot be loaded."""


class EvaluationError(TracegradeError):
    """The evaluation could not be completed as asked (exit 3)."""

    exit_code = ExitCode.INCOMPLETE


class CaptureError(EvaluationError):
    """The tool-call record could not be captured or sealed."""


class JudgeError(EvaluationError):
    """A judge could not produce a usable verdict (unparseable, non-numeric, off its scale)."""


class ProviderError(JudgeError):
    """The judge provider was unreachable, timed out or kept failing after retries."""


class NothingToRunError(TracegradeError):
    """The selection matched no question (exit 5)."""

    exit_code = ExitCode.NOTHING_TO_RUN
