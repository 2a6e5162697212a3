"""The dataset keys of agents that stop to ask and talk over several turns: `resume` (the
answers a person would give to the graph's interrupts), `expected_interrupts`, `turns` (a
conversation sent turn by turn) and `user` (a simulated user). The pydantic models of their
`schema/dataset.schema.json` definitions, worded as the schema words them.

Payload matchers (`when:` of a resume entry, `payload:` of an expected interrupt, an interrupt
step of a trajectory) use the trajectory argument vocabulary (`tracegrade.inputs.blocks.trajectory`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .expected_tool import ExpectedTool
from .trajectory import (
    PAYLOAD_NOT_MAP,
    check_trajectory,
    misspelt_keyword_message,
    misspelt_keywords,
    value_problems,
)

__all__ = [
    "ExpectedInterrupt",
    "ExpectedInterrupts",
    "SimulatedUser",
    "Turn",
    "check_payload_matcher",
    "check_resume",
]

_STRICT = ConfigDict(extra="forbid", strict=True)
_Name = Annotated[str, Field(pattern=r"\S")]

RESUME_NOT_LIST = "resume must be a list of answers"
WHEN_NEEDS_VALUE = "a resume entry with when needs value"


def check_payload_matcher(value: Any) -> Any:
    """A payload matcher (payload key -> literal or matcher), or ValueError naming the rule."""
    if not isinstance(value, Mapping):
        raise ValueError(PAYLOAD_NOT_MAP)
    for key, item in value.items():
        for _at, message in value_problems(item, f"/{key}"):
            raise ValueError(message)
        for _path, word, close in misspelt_keywords(item):
            raise ValueError(f"{misspelt_keyword_message(word)} (did you mean {close!r}?)")
    return value


def check_resume(value: Any) -> Any:
    """A `resume` list: plain answers, or `{when: <payload matcher>, value: ...}` entries."""
    if value is None:
        return value
    if not isinstance(value, list):
        raise ValueError(RESUME_NOT_LIST)
    for entry in value:
        if isinstance(entry, Mapping) and "when" in entry:
            unknown = [k for k in entry if k not in ("when", "value")]
            if unknown:
                raise ValueError(f"unknown key {unknown[0]!r}")
            if "value" not in entry:
                raise ValueError(WHEN_NEEDS_VALUE)
            check_payload_matcher(entry["when"])
    return value


class ExpectedInterrupt(BaseModel):
    """One interrupt the run must have paused on."""

    model_config = _STRICT

    payload: dict[str, Any] | None = None
    """Payload key -> literal or matcher."""
    node: _Name | None = None
    """The node that raised it."""
    tool: _Name | None = None
    """The tool that called `interrupt()`."""
    before: _Name | None = None
    """A tool none of whose executed calls started before the interrupt was raised."""
    after: _Name | None = None
    """A tool that had run before it was raised."""

    @field_validator("payload")
    @classmethod
    def _payload(cls, value: Any) -> Any:
        return value if value is None else check_payload_matcher(value)


class ExpectedInterrupts(BaseModel):
    """`expected_interrupts`: how many, which, and where among the tool calls."""

    model_config = _STRICT

    count: int | dict[str, int] | None = None
    """Exactly this many, or `{min, max}`."""
    ends_interrupted: bool | None = None
    """The conversation ends waiting on an interrupt, and that is expected."""
    includes: list[ExpectedInterrupt] | None = None
    """Each matched by a different interrupt."""

    @field_validator("count")
    @classmethod
    def _count(cls, value: Any) -> Any:
        bad = "expected_interrupts.count must be a non-negative integer or {min, max}"
        if value is None:
            return value
        if isinstance(value, int):
            if value < 0:
                raise ValueError(bad)
            return value
        if not value or any(k not in ("min", "max") or v < 0 for k, v in value.items()):
            raise ValueError("a count needs min or max, each a non-negative integer")
        if "min" in value and "max" in value and value["min"] > value["max"]:
            raise ValueError("min must not be above max")
        return value

    def model_post_init(self, context: Any) -> None:
        if self.count is None and self.ends_interrupted is None and self.includes is None:
            raise ValueError("expected_interrupts needs count, includes or ends_interrupted")


class Turn(BaseModel):
    """One user turn of a `turns` conversation, with what to check of the agent's reply."""

    model_config = _STRICT

    content: Annotated[str, Field(pattern=r"\S")]
    """What the user says."""
    criteria: str | None = None
    """What the judges grade this turn's answer against."""
    expected_tools: list[Any] | None = None
    """Assertions about the tools the agent ran in this turn (as the question's)."""
    trajectory: dict[str, Any] | None = None
    """The shape of this turn's calls (as the question's `trajectory`)."""
    resume: list[Any] | None = None
    """Answers to the interrupts of this turn."""

    @field_validator("trajectory")
    @classmethod
    def _trajectory(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return check_trajectory(value)

    @field_validator("expected_tools")
    @classmethod
    def _expected_tools(cls, value: list[Any] | None) -> list[Any] | None:
        for item in value or ():
            ExpectedTool.model_validate(item)
        return value

    @field_validator("resume")
    @classmethod
    def _resume(cls, value: Any) -> Any:
        return check_resume(value)


class SimulatedUser(BaseModel):
    """`user:`: a simulated user on the judge model plays the person."""

    model_config = _STRICT

    goal: Annotated[str, Field(pattern=r"\S")]
    """What the user wants done."""
    persona: str | None = None
    """Who the user is and how they talk."""
    max_turns: Annotated[int, Field(ge=1, le=50)] = 6
    """User messages at most."""
    stop_when: Annotated[str, Field(pattern=r"\S")] | None = None
    """Also stop when this holds (judged by the simulated user)."""
