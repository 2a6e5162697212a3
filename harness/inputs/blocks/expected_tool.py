"""`ExpectedTool`: one `expected_tools` entry, an assertion about a tool the agent ran (or must
not have run). Its own module because a dataset question and a conversation's turn both carry
the list (`tracegrade.inputs.dataset`, `tracegrade.inputs.blocks.conversation`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["ExpectedTool", "NonBlank", "Scalar"]

NonBlank = Annotated[str, Field(pattern=r"\S")]
Scalar = str | int | float | bool | None

# Strict: no coercion the schema would not allow (as the dataset's models).
_STRICT = ConfigDict(extra="forbid", strict=True)


class ExpectedTool(BaseModel):
    """An assertion about a tool the agent ran (or must not have run)."""

    model_config = _STRICT

    tool: NonBlank
    """The function name the model emits, or the qualified id `<agent>:<tool>`."""
    should_run: bool
    """Whether the tool must have run (true) or must not have (false)."""
    args: dict[str, Scalar] | None = None
    """Subset match on the call's arguments; scalar values only, never empty."""
    after: str | None = None
    """A tool whose result was available before this call was requested."""

    @field_validator("args")
    @classmethod
    def _args_not_empty(cls, value: dict[str, Scalar] | None) -> dict[str, Scalar] | None:
        if value is not None and not value:
            raise ValueError("args must not be empty")
        return value

    @field_validator("after")
    @classmethod
    def _after_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("after must not be blank")
        return value

    @model_validator(mode="after")
    def _after_needs_should_run(self) -> ExpectedTool:
        if self.after is not None and self.should_run is False:
            raise ValueError("after must not be combined with should_run: false")
        return self
