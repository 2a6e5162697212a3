"""Cassettes: the agent's recorded model calls (and `record_tools` calls) of one question run.

One JSON-lines file per target, question and trial (`cassette_path`): a header line, then one
line per call in the order the calls started. A call's `key` is the content hash
(`tracegrade.canonical`) of what decides its answer: the model's type, name and decoding
parameters, the messages, the bound tool schemas and tool choice, the response format. Never
HTTP bytes and never credentials: parameters that only reach the provider (keys, headers,
clients, timeouts) are left out of the key and the file.

What a file holds is redacted with the run's policy, by value (a `sk-...` key, a secret
environment variable's value): the request as shown for a drift, and the answer as replayed.
The key is computed on the real request, except that the model's own earlier answers are keyed
as the cassette holds them (redacted), so a replayed conversation keys the same as the
recorded one even when an answer held something redacted.
"""

from __future__ import annotations

import enum
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    message_chunk_to_message,
    message_to_dict,
    messages_from_dict,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import BaseModel

from ..canonical import canonical_json, content_hash
from ..errors import InputError
from ..redaction import RedactionPolicy

__all__ = [
    "CASSETTE_VERSION",
    "MODES",
    "REPLAYED",
    "Recording",
    "cassette_path",
    "chat_result",
    "model_request",
    "read_cassette",
    "recorded_answer",
    "replay_chunks",
    "tool_request",
    "write_cassette",
]

CASSETTE_VERSION = 1
MODES = ("none", "once", "new", "all")
"""`none`: replay only (a call with no recording errors its question); `once`: record when the
question's cassette is missing, else as `none`; `new`: replay what fits, record the rest;
`all`: record every call afresh."""

REPLAYED = "tracegrade_replayed"
"""The `response_metadata` flag on a replayed answer: the recorder marks the call replayed and
removes the flag before the agent reads the message."""

# Parameters that reach the provider without deciding the answer: left out of key and file.
_TRANSPORT = re.compile(
    r"key|secret|passw|credential|authori[sz]ation|header|client|timeout|retries|"
    r"base_url|api_base|organization|proxy|http|callback|verbose|tags|metadata|cache|"
    r"rate_limiter|stream",
    re.IGNORECASE,
)
_TOOL_KEYS = ("tools", "functions")
_CHOICE_KEYS = ("tool_choice", "function_call")
_FORMAT_KEYS = ("response_format", "ls_structured_output_format")


@dataclass(slots=True)
class Recording:
    """One recorded call: a model call (`tool` None) or a recorded tool's call."""

    call: int
    """Its position among the question run's recorded calls (0-based, in start order)."""
    key: str
    request: dict[str, Any]
    """The request as shown (redacted): what a drift is explained against."""
    response: dict[str, Any]
    """The answer as replayed (redacted): generations, or a tool's output."""
    latency_s: float = 0.0
    tool: str | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"call": self.call, "key": self.key}
        if self.tool is not None:
            out["tool"] = self.tool
        out |= {"latency_s": round(self.latency_s, 6), "request": self.request}
        out["response"] = self.response
        return out


@dataclass(slots=True)
class Cassette:
    """A cassette as read: its header and its recordings."""

    path: Path
    header: dict[str, Any] = field(default_factory=dict)
    recordings: list[Recording] = field(default_factory=list)


_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def _part(text: str) -> str:
    """A file-name-safe, readable and collision-free form of `text`."""
    safe = _SAFE.sub("_", text)[:80] or "_"
    if safe == text and not text.startswith("."):
        return text
    return f"{safe.lstrip('.') or '_'}-{content_hash(text)[:8]}"


def cassette_path(root: Path, target: str, question_id: str, trial: int) -> Path:
    """`<root>/<target>/<question id>.t<trial>.jsonl` (odd characters replaced, plus a short
    hash of the real name so two ids never share a file)."""
    return Path(root) / _part(target) / f"{_part(question_id)}.t{trial}.jsonl"


def read_cassette(path: Path) -> Cassette | None:
    """The cassette at `path`; None when there is none. A file that is not a cassette is
    invalid input naming its line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"cannot read cassette {path}: {exc}", file=str(path)) from exc
    cassette = Cassette(Path(path))
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if number == 1 and "cassette" in data:
                if data["cassette"] != CASSETTE_VERSION:
                    raise ValueError(f"cassette version {data['cassette']!r} is not supported")
                cassette.header = data
                continue
            cassette.recordings.append(
                Recording(
                    call=int(data["call"]),
                    key=str(data["key"]),
                    request=dict(data["request"]),
                    response=dict(data["response"]),
                    latency_s=float(data.get("latency_s") or 0.0),
                    tool=data.get("tool"),
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(
                f"cassette {path} line {number} is not a recorded call: {exc}",
                file=str(path),
                line=number,
                hint="re-record it (--record-mode all) or delete the file",
            ) from exc
    return cassette


def write_cassette(path: Path, header: Mapping[str, Any], recordings: Sequence[Recording]) -> None:
    """Write atomically (a reader never sees half a file), one call a line."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"cassette": CASSETTE_VERSION, **header})]
    # Keys in the order the model gave them: a replayed tool call's arguments keep theirs.
    lines += [
        json.dumps(r.as_json(), ensure_ascii=False, default=str)
        for r in sorted(recordings, key=lambda r: r.call)
    ]
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, path)


# -- requests ------------------------------------------------------------------------------
def _plain(value: Any, depth: int = 0) -> Any:
    """A JSON form of `value` that never holds a memory address (so it keys the same in every
    process): pydantic models by their data or schema, tools by their OpenAI schema."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if depth > 40:
        return "<deep>"
    if isinstance(value, Mapping):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_plain(v, depth + 1) for v in value]
        return sorted(items, key=canonical_json) if isinstance(value, set | frozenset) else items
    if isinstance(value, enum.Enum):
        return _plain(value.value, depth + 1)
    if isinstance(value, BaseModel):
        return _plain(value.model_dump(mode="json"), depth + 1)
    if isinstance(value, type) and issubclass(value, BaseModel):
        return {"title": value.__name__, "schema": value.model_json_schema()}
    try:
        from langchain_core.utils.function_calling import convert_to_openai_tool

        return convert_to_openai_tool(value)
    except Exception:  # not a tool: named by its type only (no address, no secrets)
        return f"<{type(value).__module__}.{type(value).__qualname__}>"


def _message(message: BaseMessage, policy: RedactionPolicy | None) -> dict[str, Any]:
    """What of a message decides the answer: its role, content, tool calls and ids (never its
    run id, usage or response metadata). Model answers are redacted when `policy` is given
    (see the module docstring)."""
    out: dict[str, Any] = {"role": message.type, "content": _plain(message.content)}
    if message.name:
        out["name"] = message.name
    if isinstance(message, AIMessage):
        if message.tool_calls:
            out["tool_calls"] = [
                {"name": c["name"], "args": _plain(c["args"]), "id": c.get("id")}
                for c in message.tool_calls
            ]
        if message.invalid_tool_calls:
            out["invalid_tool_calls"] = _plain(message.invalid_tool_calls)
        if policy is not None:
            out = policy.value(out, by_name=False)
    tool_call_id = getattr(message, "tool_call_id", None)
    if tool_call_id:
        out["tool_call_id"] = tool_call_id
    extra = {k: v for k, v in message.additional_kwargs.items() if k != "parsed"}
    if extra:
        out["additional_kwargs"] = _plain(extra)
    return out


def model_request(
    model: Any,
    messages: Sequence[BaseMessage],
    stop: Any,
    kwargs: Mapping[str, Any],
    policy: RedactionPolicy,
) -> dict[str, Any]:
    """The request that decides a model call's answer (see the module docstring); its
    `content_hash` is the call's key."""
    try:
        identity = dict(model._identifying_params)
    except Exception:  # a model without identifying parameters: its type names it
        identity = {}
    params = {
        k: _plain(v)
        for k, v in {**identity, **kwargs}.items()
        if not _TRANSPORT.search(k)
        and k not in _TOOL_KEYS + _CHOICE_KEYS + _FORMAT_KEYS
        and k != "model_name"
    }
    if stop is not None:
        params["stop"] = _plain(stop)
    name = identity.get("model_name") or identity.get("model") or getattr(model, "model", None)
    request: dict[str, Any] = {
        "model": {"type": _llm_type(model), "name": _plain(name)},
        "params": params,
    }
    tools = next((kwargs[k] for k in _TOOL_KEYS if kwargs.get(k)), None)
    if tools:
        request["tools"] = _plain(tools)
    for keys, slot in ((_CHOICE_KEYS, "tool_choice"), (_FORMAT_KEYS[:1], "response_format")):
        value = next((kwargs[k] for k in keys if kwargs.get(k) is not None), None)
        if value is not None:
            request[slot] = _plain(value)
    request["messages"] = [_message(m, policy) for m in messages]
    return request


def _llm_type(model: Any) -> str:
    try:
        return str(model._llm_type)
    except Exception:
        return type(model).__name__


def tool_request(name: str, tool_input: Any) -> dict[str, Any]:
    """A recorded tool's call: its name and input."""
    return {"tool": name, "input": _plain(tool_input)}


# -- answers -------------------------------------------------------------------------------
def recorded_answer(
    generations: Sequence[ChatGeneration], llm_output: Any, policy: RedactionPolicy
) -> dict[str, Any]:
    """A model call's answer as a cassette holds it (redacted by value)."""
    out = []
    for g in generations:
        message = g.message
        if isinstance(message, AIMessageChunk):
            message = message_chunk_to_message(message)
        data = message_to_dict(message)
        data["data"] = _plain(data["data"])
        data["data"].pop("id", None)  # a run id: differs every run, decides nothing
        entry = {"message": policy.value(data, by_name=False)}
        if g.generation_info:
            entry["generation_info"] = _plain(g.generation_info)
        out.append(entry)
    answer: dict[str, Any] = {"generations": out}
    if isinstance(llm_output, Mapping) and llm_output:
        answer["llm_output"] = _plain(llm_output)
    return answer


def _messages(answer: Mapping[str, Any]) -> list[tuple[BaseMessage, dict | None]]:
    generations = answer.get("generations") or []
    messages = messages_from_dict([g["message"] for g in generations])
    return [(m, g.get("generation_info")) for m, g in zip(messages, generations, strict=True)]


def chat_result(answer: Mapping[str, Any]) -> ChatResult:
    """A recorded answer as `_generate` returns it."""
    generations = [ChatGeneration(message=m, generation_info=info) for m, info in _messages(answer)]
    return ChatResult(generations=generations, llm_output=answer.get("llm_output"))


def replay_chunks(answer: Mapping[str, Any]) -> list[ChatGenerationChunk]:
    """A recorded answer as `_stream` yields it: one chunk holding the whole message."""
    out = []
    for message, info in _messages(answer)[:1]:
        assert isinstance(message, AIMessage)
        chunk = AIMessageChunk(
            content=message.content,
            additional_kwargs=message.additional_kwargs,
            response_metadata=message.response_metadata,
            usage_metadata=message.usage_metadata,
            name=message.name,
            tool_call_chunks=[
                {
                    "name": c["name"],
                    "args": json.dumps(c["args"]),
                    "id": c.get("id"),
                    "index": i,
                    "type": "tool_call_chunk",
                }
                for i, c in enumerate(message.tool_calls)
            ],
        )
        out.append(ChatGenerationChunk(message=chunk, generation_info=info))
    return out
