"""A scripted tool-calling chat model: the offline stand-in for a real LLM.

Stateless per invocation, so one instance serves any number of concurrent runs: the turn is
derived from the messages it is given (how many AI messages the conversation already holds).
A script is either a list of turns (each an AIMessage, a `say(...)`/`call(...)` step, or a
callable `(messages) -> AIMessage`), or a mapping from the first user message to such a list,
so one model can drive a whole dataset.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field

__all__ = ["ScriptedChatModel", "call", "say", "tool_call"]

Turn = AIMessage | Callable[[list[BaseMessage]], AIMessage]

_ids = itertools.count(1)


def tool_call(name: str, args: Mapping[str, Any] | None = None, *, id: str | None = None) -> dict:
    """One tool call as a model emits it."""
    return {
        "name": name,
        "args": dict(args or {}),
        "id": id or f"call_{next(_ids)}",
        "type": "tool_call",
    }


def call(*calls: dict | tuple[str, Mapping[str, Any]], content: str = "") -> AIMessage:
    """A model turn requesting `calls` (parallel when several): `call(("lookup", {"q": 1}))`."""
    built = [c if isinstance(c, dict) else tool_call(c[0], c[1]) for c in calls]
    return AIMessage(content=content, tool_calls=built)


def say(text: str) -> AIMessage:
    """A final model turn answering with `text`."""
    return AIMessage(content=text)


class ScriptedChatModel(BaseChatModel):
    """Replays a script of turns; `bind_tools` is accepted and recorded, never enforced, so a
    script can call a tool the graph does not know (to exercise the not_executed path)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    script: Any = Field(default_factory=list, repr=False)  # repr runs on every traced call
    """A list of turns, or a mapping from the first user message text to a list of turns."""
    latency_s: float = 0.0
    """Seconds each call sleeps, standing in for a real model's latency."""
    model_name: str = "scripted"
    bound_tools: tuple[str, ...] = ()
    default: str = "I have nothing scripted for this."
    """Answer given once a script runs out (or no script matches the conversation)."""
    usage: str = "fixed"
    """The token usage each call reports (`usage_metadata`): `fixed` (10 in, 5 out),
    `measured` (about four characters a token, of the messages sent and the answer given), or
    `none` (no usage reported, as some providers do)."""
    prompt_padding: int = 0
    """Extra input tokens each call reports (a bloated prompt: the planted expensive variant)."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any):
        from langchain_core.utils.function_calling import convert_to_openai_tool

        names = tuple(getattr(t, "name", None) or getattr(t, "__name__", str(t)) for t in tools)
        # As a real chat model binds them: the tools' schemas in every call's invocation
        # parameters, where callbacks (tracegrade's recorder) see what the model was offered.
        return self.model_copy(update={"bound_tools": names}).bind(
            tools=[convert_to_openai_tool(t) for t in tools]
        )

    # -- choosing the turn ----------------------------------------------------------------
    def _turns_for(self, messages: list[BaseMessage]) -> Sequence[Turn]:
        if isinstance(self.script, Mapping):
            first_user = next((m for m in messages if isinstance(m, HumanMessage)), None)
            key = first_user.text if first_user is not None else ""
            return self.script.get(key, ())
        return self.script

    def next_message(self, messages: list[BaseMessage]) -> AIMessage:
        turns = self._turns_for(messages)
        turn_index = sum(1 for m in messages if isinstance(m, AIMessage))
        if turn_index >= len(turns):
            return AIMessage(content=self.default)
        turn = turns[turn_index]
        message = turn(messages) if callable(turn) else turn
        # A fresh copy: the same scripted turn may be replayed by many concurrent runs.
        return message.model_copy(deep=True)

    def _result(self, message: AIMessage, messages: list[BaseMessage]) -> ChatResult:
        message.response_metadata = {**message.response_metadata, "model_name": self.model_name}
        if self.usage == "measured":
            sent = sum(
                len(str(m.content)) + len(str(getattr(m, "tool_calls", ""))) for m in messages
            )
            said = len(str(message.content)) + len(str(message.tool_calls or ""))
            inp, out = max(1, sent // 4) + self.prompt_padding, max(1, said // 4)
            message.usage_metadata = {
                "input_tokens": inp,
                "output_tokens": out,
                "total_tokens": inp + out,
            }
        elif self.usage == "fixed":
            inp = 10 + self.prompt_padding
            message.usage_metadata = {
                "input_tokens": inp,
                "output_tokens": 5,
                "total_tokens": inp + 5,
            }
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        if self.latency_s:
            time.sleep(self.latency_s)
        return self._result(self.next_message(messages), messages)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        return self._result(self.next_message(messages), messages)
