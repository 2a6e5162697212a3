"""The bundled goal judge: "does the output satisfy the goal?" (0-5, or pass/fail when binary).

A question's own `goal` wins; else the goal the judge was given (the `goal:` option, or
`tracegrade run/grade --goal TEXT`). The judge sees the goal, the question, the expected answer
when the question has one (`expected.answer`, else the `expected` keys besides `format`), the
tool calls rendered like the other judges', and the response. A question with no goal at all is
a judge error (never a pass): the pre-flight rejects such a run before anything runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from ...errors import ConfigError
from ...records import GradeResult
from .base import DATA_ONLY_NOTE, LlmJudge

__all__ = ["NO_GOAL", "GoalJudge", "expected_answer_of", "goal_of"]

NO_GOAL = "no goal: the question has no `goal` and the judge was given none (--goal TEXT)"


def goal_of(context: Mapping[str, Any], fallback: str | None) -> str | None:
    """The goal a question is judged against: its own `goal`, else `fallback`."""
    own = context.get("goal")
    if isinstance(own, str) and own.strip():
        return own
    return fallback if fallback and fallback.strip() else None


def expected_answer_of(context: Mapping[str, Any]) -> str | None:
    """The question's expected answer as text, None when it has none: `expected.answer`, else
    the `expected` keys other than `format` (format_grader's), as JSON."""
    expected = context.get("expected")
    if expected is None:
        return None
    if isinstance(expected, Mapping):
        if "answer" in expected:
            answer = expected["answer"]
            return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        rest = {k: v for k, v in expected.items() if k != "format"}
        return json.dumps(rest, ensure_ascii=False, default=str) if rest else None
    return expected if isinstance(expected, str) else json.dumps(expected, default=str)


_BINARY_TEMPLATE = (
    "You are an impartial evaluation judge. You answer one yes-or-no question about a response "
    "written by an AI agent: %s\n\n"
    "The user's question:\n%s\n\n"
    "The goal (trusted instructions from the evaluation's author) and how to answer:\n%s\n\n"
    "The agent's response:\n%s\n\n" + DATA_ONLY_NOTE + "\n\n"
    'Answer with only a JSON object of the form {"score": <0 or 1>, "reason": "<one or two '
    'sentences>"} and nothing else. 1 means the goal is satisfied, 0 means it is not. Do not '
    "answer on any other scale."
)

_SCALE_TEMPLATE = (
    "You are an impartial evaluation judge. You score one response written by an AI agent on "
    "a single dimension: %s\n\n"
    "The user's question:\n%s\n\n"
    "The goal (trusted instructions from the evaluation's author) and scoring guidance:\n%s\n\n"
    "The agent's response:\n%s\n\n" + DATA_ONLY_NOTE + "\n\n"
    'Answer with only a JSON object of the form {"score": <number>, "reason": "<one or two '
    'sentences>"} and nothing else.'
)


class GoalJudge(LlmJudge):
    id = "goal_judge"
    label = "Goal"
    description = (
        "LLM judge: does the response satisfy the goal (0-5, or pass/fail with binary: true)? "
        "The goal is the question's own `goal`, else the `goal:` option or --goal. Shown the "
        "expected answer when the question has one, and the tool-call record."
    )
    needs = "`goal` (the question's, or the `goal:` option / --goal)"
    sees_tool_calls = True
    dimension = "goal"
    dimension_description = "goal: does the response satisfy the goal stated in the criteria?"
    scoring_guidance = (
        "5: The goal is fully satisfied.\n"
        "4: Satisfied, with a minor gap that does not defeat its purpose.\n"
        "3: Partly satisfied: an important part is missing or wrong.\n"
        "2: Mostly not satisfied.\n"
        "1: Not satisfied at all, or the response contradicts the goal.\n"
        "A claim that the agent did something is checked against the TOOL CALLS block when one "
        "is given: a claimed action with no matching call that ended ok does not satisfy it."
    )
    binary_guidance: ClassVar[str] = (
        "Answer 1 only if the goal is satisfied; 0 otherwise. When unsure, answer 0.\n"
        "A claim that the agent did something is checked against the TOOL CALLS block when one "
        "is given: a claimed action with no matching call that ended ok does not satisfy it."
    )

    def __init__(self, *, goal: str | None = None, binary: bool = False, **kwargs: Any) -> None:
        if goal is not None and (not isinstance(goal, str) or not goal.strip()):
            raise ConfigError("goal_judge: `goal` must be a non-empty string", key="goal")
        if not isinstance(binary, bool):
            raise ConfigError("goal_judge: `binary` must be true or false", key="binary")
        self.goal = goal
        # Per instance: a binary goal judge answers 0 or 1 and gates read it as pass/fail.
        self.binary = binary  # type: ignore[misc]
        if binary:
            self.max_score = 1.0  # type: ignore[misc]
            self.scoring_guidance = self.binary_guidance  # type: ignore[misc]
        opts: dict[str, Any] = {"binary": binary} if binary else {}
        if goal is not None:
            opts["goal"] = goal
        super().__init__(**kwargs, **opts)

    def default_template(self) -> str:
        return _BINARY_TEMPLATE if self.binary else _SCALE_TEMPLATE

    def interpret_score(self, raw: float) -> float | None:
        if self.binary:
            if raw < 0.0 or raw > 1.0:  # another scale: unusable, never a zero
                return None
            return 1.0 if raw > 0.5 else 0.0
        return super().interpret_score(raw)

    def criteria_for(self, context: Mapping[str, Any]) -> str:
        goal = goal_of(context, self.goal) or ""
        parts = [f"GOAL: {goal}"]
        own = super().criteria_for(context).strip()
        if own:
            parts.append(f"CRITERIA: {own}")
        expected = expected_answer_of(context)
        if expected is not None:
            parts.append(f"EXPECTED ANSWER (what a correct response says): {expected}")
        return "\n\n".join(parts)

    async def agrade(self, input: str, response: str, context: Mapping[str, Any]) -> GradeResult:
        if goal_of(context, self.goal) is None:
            return self.result(None, f"{self.id}: {NO_GOAL}", True, identity=self.identity())
        return await super().agrade(input, response, context)
