"""LLM judges: the base class third parties extend and the six built-ins of seed 000."""

from graders.judges.base import LlmJudge
from graders.judges.builtin import (
    AccuracyGrader,
    ActionabilityGrader,
    CompletenessGrader,
    FactMatchGrader,
    GroundednessGrader,
    RelevanceGrader,
)

__all__ = [
    "GRADERS",
    "AccuracyGrader",
    "ActionabilityGrader",
    "CompletenessGrader",
    "FactMatchGrader",
    "GroundednessGrader",
    "LlmJudge",
    "RelevanceGrader",
]

GRADERS = [
    RelevanceGrader,
    CompletenessGrader,
    AccuracyGrader,
    ActionabilityGrader,
    FactMatchGrader,
    GroundednessGrader,
]
