"""LLM judges: the base class third parties extend and the six built-ins of seed 000,
the bundled goal judge, the judges of a whole conversation, and judges defined in a file."""

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
from .conversation import ConversationGoalJudge, EscalationJudge, RepetitionJudge
from .file_judge import file_judge
from .goal import GoalJudge

__all__ = [
    "GRADERS",
    "AccuracyGrader",
    "ActionabilityGrader",
    "ArgumentCorrectnessJudge",
    "ClaimsJudge",
    "CompletenessGrader",
    "ConversationGoalJudge",
    "EscalationJudge",
    "FactMatchGrader",
    "GoalJudge",
    "GroundednessGrader",
    "LlmJudge",
    "PlanAdherenceJudge",
    "RelevanceGrader",
    "RepetitionJudge",
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
    ConversationGoalJudge,
    RepetitionJudge,
    EscalationJudge,
]
