"""Judges that see the tool catalog: shown the question, the tools the agent was offered (with
their declared arguments), the calls it made and how each ended, and the answer. They answer
what no expected list states: were the right tools chosen, were their arguments right, did the
run follow its plan, was it efficient; and the judge mode of the claims check (`claims_judge`):
which actions the answer claims have no successful call.

They run on the one judge path (fences, redaction, outcome probabilities, panels, `judges
validate`); the catalog is rendered by `tracegrade.judging.catalog_rendering`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...judging.catalog_rendering import render_tool_catalog
from ...records import GradeResult
from .base import DATA_ONLY_NOTE, LlmJudge

__all__ = [
    "ArgumentCorrectnessJudge",
    "CatalogJudge",
    "ClaimsJudge",
    "PlanAdherenceJudge",
    "StepEfficiencyJudge",
    "ToolSelectionJudge",
]


class CatalogJudge(LlmJudge):
    """A judge shown the TOOLS OFFERED block beside the TOOL CALLS block."""

    sees_tool_calls = True
    observes_actions = False  # a model's reading of the record: advice, not ground truth
    evidence = ("answer", "judge", "tool_calls")
    needs = "a tool-call record (skips without one)"

    def criteria_for(self, context: Mapping[str, Any]) -> str:
        own = super().criteria_for(context).strip()
        record = context.get("tool_calls")
        catalog = render_tool_catalog(record, policy=self.services.redaction)
        return "\n\n".join(p for p in (own, catalog) if p)

    async def agrade(self, input: str, response: str, context: Mapping[str, Any]) -> GradeResult:
        if "tool_calls" not in context:
            return self.result(
                None, f"{self.id}: no tool-call record to judge", identity=self.identity()
            )
        return await super().agrade(input, response, context)


_SCALE = (
    "5: fully; 4: one minor slip; 3: a real mistake that did not defeat the task; "
    "2: mostly wrong; 1: wrong throughout."
)


class ToolSelectionJudge(CatalogJudge):
    id = "tool_selection_judge"
    label = "Tool selection"
    description = (
        "LLM judge, shown the tools offered and the calls: given the question, were the right "
        "tools used, and none that was needed left out or one that was not wanted called?"
    )
    dimension = "tool_selection"
    dimension_description = (
        "tool selection: given the user's question and the tools offered, did the agent call "
        "the tools the task needed, and avoid tools it did not need or should not use?"
    )
    scoring_guidance = (
        _SCALE + " A needed tool never called, or a harmful one called, is 2 or less."
    )


class ArgumentCorrectnessJudge(CatalogJudge):
    id = "argument_correctness_judge"
    label = "Argument correctness"
    description = (
        "LLM judge, shown the tools' declared arguments and the calls: were each call's "
        "arguments right for the question (values taken from it, allowed by the declaration)?"
    )
    dimension = "argument_correctness"
    dimension_description = (
        "argument correctness: were the arguments of every call right for the user's question "
        "and allowed by the tool's declared arguments?"
    )
    scoring_guidance = _SCALE + " An argument the declaration forbids, or a wrong id, is 2 or less."


class PlanAdherenceJudge(CatalogJudge):
    id = "plan_adherence_judge"
    label = "Plan adherence"
    description = (
        "LLM judge: did the calls follow the plan the task calls for (the question's criteria, "
        "else the plan the agent stated), in a sensible order, to the end?"
    )
    dimension = "plan_adherence"
    dimension_description = (
        "plan adherence: did the run carry out the plan the task needs (the criteria's, else "
        "the one the agent stated) step by step, without skipping or reordering steps?"
    )
    scoring_guidance = _SCALE


class StepEfficiencyJudge(CatalogJudge):
    id = "step_efficiency_judge"
    label = "Step efficiency"
    description = (
        "LLM judge: did the run reach its answer without redundant, repeated or needless calls?"
    )
    dimension = "step_efficiency"
    dimension_description = (
        "step efficiency: did the agent reach its answer in the fewest calls the task needs, "
        "without repeating a call, looping or calling tools that added nothing?"
    )
    scoring_guidance = _SCALE


_CLAIMS_TEMPLATE = (
    "You are an impartial evaluation judge. You answer one yes-or-no question about a response "
    "written by an AI agent: %s\n\n"
    "The user's question:\n%s\n\n"
    "What the run did (trusted record of the run) and how to answer:\n%s\n\n"
    "The agent's response:\n%s\n\n" + DATA_ONLY_NOTE + "\n\n"
    'Answer with only a JSON object of the form {"score": <0 or 1>, "reason": "<the '
    'unsupported claims, each quoted, or none>"} and nothing else.'
)


class ClaimsJudge(CatalogJudge):
    id = "claims_judge"
    label = "Claims (judge)"
    description = (
        "LLM judge, shown the record: which actions the answer claims were done have no call "
        "that ended ok? Names each unsupported claim; 1 when every claim is backed."
    )
    max_score = 1.0
    binary = True
    dimension = "claims"
    dimension_description = (
        "claims of action: does every action the response says was done (booked, refunded, "
        "opened a ticket, sent, deleted...) have a matching call in TOOL CALLS that ended ok?"
    )
    scoring_guidance = (
        "List every action the response claims was done. A claim is supported only by a call "
        "in TOOL CALLS that does that action and ended ok; a call that ended in error, was not "
        "executed, or is absent supports nothing. Plans, offers and questions are not claims.\n"
        "Answer 1 when every claim is supported (or the response claims nothing); 0 otherwise, "
        "and quote each unsupported claim in the reason with what the record shows instead."
    )

    def default_template(self) -> str:
        return _CLAIMS_TEMPLATE

    def interpret_score(self, raw: float) -> float | None:
        if raw < 0.0 or raw > 1.0:  # another scale: unusable, never a zero
            return None
        return 1.0 if raw > 0.5 else 0.0
