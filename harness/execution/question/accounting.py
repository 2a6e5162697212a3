"""What a question run cost and how long it took, as the runner records it: the recorder's model
calls priced by the run's table with each tool call's seconds (`account`, the store's `usage`
JSON), and the judges' calls of a grading laid beside them (`with_judges`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ...cost.pricing import priced, question_usage
from ...cost.usage import ModelCall, QuestionUsage
from ...records import Outcome, ToolRecord

if TYPE_CHECKING:
    from ...cost.pricing import PriceTable

__all__ = ["account", "with_judges"]


_NEVER_RAN = (Outcome.NOT_EXECUTED, Outcome.DECLINED)


def account(
    prices: PriceTable | None,
    calls: Sequence[ModelCall],
    record: ToolRecord | None,
    wall_s: float,
) -> dict[str, object]:
    """The question's accounting as the store keeps it (`tracegrade.cost.usage.QuestionUsage` as
    JSON): the agent's model calls priced by the run's table (`prices`: its grader services'),
    and each tool call's seconds (calls that never ran left out)."""
    tools: dict[str, list[float]] = {}
    for c in record or ():
        if c.end_ns and c.start_ns and c.outcome not in _NEVER_RAN:
            tools.setdefault(c.name, []).append((c.end_ns - c.start_ns) / 1e9)
    usage = question_usage(calls, wall_s=wall_s, tools=tools, prices=prices)
    return usage.model_dump(mode="json")


def with_judges(
    usage: Mapping[str, object], judge_calls: Sequence[ModelCall], prices: PriceTable | None
) -> QuestionUsage | None:
    """The question's stored accounting with the judges' calls of this grading, priced; None
    for a run that recorded none."""
    if not usage:
        return None
    out = QuestionUsage.model_validate(usage)
    out.judges = priced(judge_calls, prices)
    return out
