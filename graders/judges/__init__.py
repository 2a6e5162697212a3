"""LLM judges: the base class third parties extend and the six built-ins of seed 000,
the bundled goal judge, and judges defined in a file."""

from .base import LlmJudge
from .builtin import (
    AccuracyGrader,
    ActionabilityGrader,
    CompletenessGrader,
    FactMatchGrader,
    GroundednessGrader,
    RelevanceGrader,
)
from .catalog import (
    ArgumentCorrectnessJudge,
    ClaimsJudge,
    PlanAdherenceJudge,
    StepEfficiencyJudge,
    ToolSelectionJudge,
)
from .file_judge import file_judge
from .goal import GoalJudge

__all__ = [
    "GRADERS",
    "AccuracyGrader",
    "ActionabilityGrader",
    "ArgumentCorrectnessJudge",
    "ClaimsJudge",
    "CompletenessGrader",
    "FactMatchGrader",
    "GoalJudge",
    "GroundednessGrader",
    "LlmJudge",
    "PlanAdherenceJudge",
    "RelevanceGrader",
    "StepEfficiencyJudge",
    "ToolSelectionJudge",
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
    ToolSelectionJudge,
    ArgumentCorrectnessJudge,
    PlanAdherenceJudge,
    StepEfficiencyJudge,
    ClaimsJudge,
]
