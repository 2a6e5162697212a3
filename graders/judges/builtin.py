"""The six built-in LLM judges of seed 000."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from ...records import GradeResult
from .base import DATA_ONLY_NOTE, LlmJudge

__all__ = [
    "AccuracyGrader",
    "ActionabilityGrader",
    "CompletenessGrader",
    "FactMatchGrader",
    "GroundednessGrader",
    "RelevanceGrader",
    "ground_truth_block",
    "must_not_contain_of",
]

NO_FACTS_SKIP = "no expected_facts; skipping"


def must_not_contain_of(context: Mapping[str, Any]) -> list[str]:
    """The legacy `expected_facts.must_not_contain` list, as strings."""
    facts = context.get("expected_facts")
    if not isinstance(facts, Mapping):
        return []
    forbidden = facts.get("must_not_contain")
    if forbidden is None:
        return []
    if isinstance(forbidden, str):
        return [forbidden]
    if isinstance(forbidden, (list, tuple)):
        return [str(f) for f in forbidden if f is not None and str(f) != ""]
    return [str(forbidden)]


def _has_facts(context: Mapping[str, Any]) -> bool:
    facts = context.get("expected_facts")
    return facts is not None and facts != {} and facts != [] and facts != ""


def _fact_value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(_fact_value(v) for v in value)
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def ground_truth_block(context: Mapping[str, Any]) -> str:
    """The GROUND TRUTH block built from `expected_facts` ("" when there are none)."""
    if not _has_facts(context):
        return ""
    facts = context["expected_facts"]
    lines = [
        "GROUND TRUTH (verified facts the response is checked against; paraphrase and "
        'formatting variations count as matches: "Jane Doe" matches "J. Doe", "4500" matches '
        '"EUR 4,500"):'
    ]
    if isinstance(facts, Mapping):
        for key, value in facts.items():
            if key != "must_not_contain":
                lines.append(f"- {key}: {_fact_value(value)}")
    elif isinstance(facts, (list, tuple)):
        lines.extend(f"- {_fact_value(v)}" for v in facts)
    else:
        lines.append(f"- {_fact_value(facts)}")
    forbidden = must_not_contain_of(context)
    if forbidden:
        lines.append(
            "MUST NOT CONTAIN (the response must not state any of these, paraphrases "
            "included; any match caps the score at 1):"
        )
        lines.extend(f"- {item}" for item in forbidden)
    return "\n".join(lines)


class _GroundTruthJudge(LlmJudge):
    """A judge shown the GROUND TRUTH block, whose must_not_contain cap is also enforced on
    literal (case-insensitive) matches, so a judge that misses one cannot lift the cap."""

    def criteria_for(self, context: Mapping[str, Any]) -> str:
        parts = [super().criteria_for(context).strip(), ground_truth_block(context)]
        return "\n\n".join(p for p in parts if p)

    async def agrade(self, input: str, response: str, context: Mapping[str, Any]) -> GradeResult:
        result = await super().agrade(input, response, context)
        if result.score is None or result.score <= 1.0:
            return result
        lowered = response.lower()
        hits = [f for f in must_not_contain_of(context) if f.lower() in lowered]
        if not hits:
            return result
        return self.result(
            1.0,
            f"must_not_contain matched ({', '.join(hits)}): capped at 1; judge said "
            f"{result.score:g}: {result.reason}",
            raw=result.raw,
            details={**result.details, "capped_from": result.score, "must_not_contain": hits},
            identity=result.identity,
        )


class RelevanceGrader(LlmJudge):
    id = "relevance_grader"
    label = "Relevance"
    description = (
        "LLM judge: is the response on topic and does it address the question (0-5)? "
        "Reads the response text only."
    )
    dimension = "relevance"
    dimension_description = "relevance: is the response on topic and does it address the question?"
    scoring_guidance = (
        "5: Directly and fully on topic; addresses the question asked.\n"
        "4: On topic, with minor digressions or a small part of the question left unaddressed.\n"
        "3: Partly on topic; addresses the question only in part.\n"
        "2: Mostly off topic; touches the question only in passing.\n"
        "1: Completely off topic."
    )


class CompletenessGrader(LlmJudge):
    id = "completeness_grader"
    label = "Completeness"
    description = (
        "LLM judge: does the response cover all expected data points (0-5)? "
        "Reads the response text only."
    )
    needs = "`criteria` (optional)"
    dimension = "completeness"
    dimension_description = "completeness: does the response cover all expected data points?"
    scoring_guidance = (
        "5: All aspects the question and criteria call for are covered.\n"
        "4: One minor aspect missing.\n"
        "3: Several aspects missing, or one important aspect missing.\n"
        "2: Covers only a small part of what was asked.\n"
        "1: Major gaps: most of what was asked is not covered."
    )


class AccuracyGrader(_GroundTruthJudge):
    id = "accuracy_grader"
    label = "Accuracy"
    description = (
        "LLM judge: are facts, names, numbers and file paths correct (0-5)? Shown the "
        "tool-call record and, when the question has expected_facts, a GROUND TRUTH block."
    )
    needs = "`criteria`, `expected_facts` (both optional)"
    owns = ("expected_facts",)
    evidence = ("answer", "tool_calls", "judge")
    sees_tool_calls = True
    dimension = "accuracy"
    dimension_description = "accuracy: are facts, names, numbers and file paths correct?"
    scoring_guidance = (
        "5: Every fact, name, number and file path is correct, and nothing critical is "
        "missing.\n"
        "4: Correct, with a minor imprecision that would not mislead a reader.\n"
        "3: One critical fact is missing or wrong. A critical missing fact caps the score at 3.\n"
        "2: Several facts are missing or wrong. Several missing facts cap the score at 2.\n"
        "1: Mostly wrong, or any item under MUST NOT CONTAIN appears in the response, "
        "paraphrases included. Any must_not_contain match is a hard cap at 1, whatever else "
        "is right.\n"
        'Vacuous tool-failure summaries ("no data found", "everyone is available", "nothing '
        'to report") are inaccurate when the task called for concrete values: score them as '
        "missing facts, not as correct answers.\n"
        "A claim that the agent did something (created, changed, looked up) is a factual claim "
        "about the run: check it against the TOOL CALLS block when one is given. A claimed "
        "action with no matching call, or whose call did not end ok, is inaccurate."
    )


class ActionabilityGrader(LlmJudge):
    id = "actionability_grader"
    label = "Actionability"
    description = (
        "LLM judge: can a reader take concrete action based on the response text (0-5)? "
        "It does not measure whether the agent acted: it reads the text only, so an agent "
        "that describes work it never did can still score 5 here."
    )
    dimension = "actionability"
    dimension_description = (
        "actionability: can a reader take concrete action based on this response?"
    )
    scoring_guidance = (
        "5: Immediately actionable: concrete steps, names, values or commands a reader can "
        "use as they stand.\n"
        "4: Actionable with a small amount of filling in.\n"
        "3: Points in the right direction but leaves the reader to work out the steps.\n"
        "2: Mostly general advice.\n"
        "1: Vague: nothing a reader could act on."
    )


class FactMatchGrader(_GroundTruthJudge):
    id = "fact_match_grader"
    label = "Fact match"
    description = (
        "LLM judge: does the response state the verified ground truth in expected_facts, "
        "allowing paraphrase and formatting variation (0-5)? Skips questions without it."
    )
    needs = "`expected_facts` (required, else skips)"
    owns = ("expected_facts",)
    evidence = ("answer", "judge")
    dimension = "factuality"
    dimension_description = (
        "factuality: does the response agree with the verified ground truth in the GROUND "
        "TRUTH block, allowing paraphrase and formatting variation?"
    )
    scoring_guidance = (
        'Paraphrase and formatting variation match: "Jane Doe" matches "J. Doe", "4500" '
        'matches "EUR 4,500".\n'
        "5: Every ground-truth fact is stated and correct.\n"
        "4: All but one minor fact stated correctly.\n"
        "3: About half of the facts stated correctly.\n"
        "2: Few facts stated correctly, or several contradicted.\n"
        "1: No fact matches, or any item under MUST NOT CONTAIN appears (paraphrases "
        "included). Any must_not_contain match caps the score at 1."
    )

    async def agrade(self, input: str, response: str, context: Mapping[str, Any]) -> GradeResult:
        # Before any provider call: a skip costs nothing.
        if not _has_facts(context):
            return self.result(None, NO_FACTS_SKIP, identity=self.identity())
        return await super().agrade(input, response, context)


_GROUNDEDNESS_TEMPLATE = (
    "You are an impartial evaluation judge. You answer one yes-or-no question about a response "
    "written by an AI agent: %s\n\n"
    "The user's question:\n%s\n\n"
    "The grading criteria (trusted instructions from the evaluation's author) and how to "
    "answer:\n%s\n\n"
    "The agent's response:\n%s\n\n" + DATA_ONLY_NOTE + "\n\n"
    'Answer with only a JSON object of the form {"score": <0 or 1>, "reason": "<one or two '
    'sentences>"} and nothing else. 1 means grounded, 0 means not grounded. Do not answer on '
    "any other scale."
)


class GroundednessGrader(LlmJudge):
    id = "groundedness_grader"
    label = "Groundedness"
    description = (
        "LLM judge (binary): is every factual claim supported by the question, the criteria, "
        "or source material quoted in the response itself? Shown the tool-call record."
    )
    needs = "`criteria` (optional)"
    min_score = 0.0
    max_score = 1.0
    binary: ClassVar[bool] = True
    sees_tool_calls = True
    dimension = "groundedness"
    dimension_description = (
        "groundedness: is every factual claim supported by the question, the criteria, or "
        "source material quoted in the response itself?"
    )
    scoring_guidance = (
        "Answer 1 only if every claim is supported.\n"
        "Answer 0 if any claim is invented, contradicts the source, or cannot be checked.\n"
        "A vague answer that makes no unsupported claim is still 1.\n"
        "When unsure, answer 0.\n"
        "The TOOL CALLS block, when given, says what the agent consulted and how each call "
        "ended (never what a successful call returned): an agent that consulted nothing cannot "
        "have grounded claims about the system or its data, and a claim that an action was "
        "done is unsupported when its call did not end ok."
    )

    def default_template(self) -> str:
        return _GROUNDEDNESS_TEMPLATE

    def interpret_score(self, raw: float) -> float | None:
        # A hedged 0.9 is a yes; anything off 0-1 means another scale: unusable, not a zero.
        if raw < 0.0 or raw > 1.0:
            return None
        return 1.0 if raw > 0.5 else 0.0
