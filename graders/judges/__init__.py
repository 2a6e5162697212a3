"""LLM judges: the base class third parties extend and the six built-ins of seed 000,
the bundled goal judge, and judges defined in a file."""

from graders.judges.base import LlmJudge
from graders.judges.builtin import (
    AccuracyGrader,
    ActionabilityGrader,
    CompletenessGrader,
    FactMatchGrader,
    GroundednessGrader,
    RelevanceGrader,
)
from graders.judges.file_judge import file_judge
from graders.judges.goal import GoalJudge

__all__ = [
    "GRADERS",
    "AccuracyGrader",
    "ActionabilityGrader",
    "CompletenessGrader",
    "FactMatchGrader",
    "GoalJudge",
    "GroundednessGrader",
    "LlmJudge",
    "RelevanceGrader",
    "file_judge",
]

GRADERS = [
    RelevanceGrader,
    CompletenessGrader,
    AccuracyGrader,
    ActionabilityGrader,
    FactMatchGrader,
    GroundednessGrader,
    GoalJudge,
]
