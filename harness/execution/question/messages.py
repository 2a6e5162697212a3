"""Messages between tracegrade and an agent: the question's messages as the agent receives them
(the target's system prompt in place of a stored one), the transcript graders get as `input`,
and the answer read back from the agent's messages (the last AI message's text)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...inputs.dataset import Question

__all__ = ["grader_input", "last_ai_text", "messages_for_agent", "to_role_dicts"]


def messages_for_agent(
    messages: Sequence[Mapping[str, str]], system_prompt: str | None
) -> list[dict[str, str]]:
    """The question's messages as the agent receives them: the target's system prompt replaces
    any stored system message."""
    out = [dict(m) for m in messages]
    if system_prompt is not None:
        out = [m for m in out if m.get("role") != "system"]
        out.insert(0, {"role": "system", "content": system_prompt})
    return out


def grader_input(question: Question, system_prompt: str | None) -> tuple[str, list[dict[str, str]]]:
    """(`input`, `messages`) for the graders: what the agent received. A conversation carries
    the target's system prompt in place of a stored one; a plain string stays as written."""
    if isinstance(getattr(question, "input", None), str) or system_prompt is None:
        return question.flattened_input(), question.input_messages()
    messages = messages_for_agent(question.input_messages(), system_prompt)
    return "\n".join(f"{m['role']}: {m['content']}" for m in messages), messages


def _text_of(message: object) -> str:
    text = getattr(message, "text", None)
    if isinstance(text, str):  # langchain-core 1.x: a property (a str that is also callable)
        return str(text)
    if callable(text):  # older langchain-core: a method
        text = text()
        if isinstance(text, str):
            return text
    content = (
        message.get("content") if isinstance(message, dict) else getattr(message, "content", "")
    )
    return content if isinstance(content, str) else str(content)


_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def _role_of(message: object) -> str:
    if isinstance(message, dict):
        return str(message.get("role", ""))
    return _ROLES.get(getattr(message, "type", ""), getattr(message, "type", ""))


def last_ai_text(messages: Sequence[object]) -> str:
    """The text of the last AI message ("" when the agent produced none)."""
    for message in reversed(list(messages)):
        if _role_of(message) == "assistant":
            return _text_of(message)
    return ""


def to_role_dicts(messages: Sequence[object]) -> list[dict[str, object]]:
    """Messages as role/content dicts (tool-call arguments left out), with the message's `name`
    when it has one (a simulated user's messages are named `simulated_user`)."""
    out = []
    for m in messages:
        entry: dict[str, object] = {"role": _role_of(m), "content": _text_of(m)}
        name = m.get("name") if isinstance(m, dict) else getattr(m, "name", None)
        if name and entry["role"] == "user":
            entry["name"] = name
        out.append(entry)
    return out
