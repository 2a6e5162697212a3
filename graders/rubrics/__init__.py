"""Rubrics: versioned sets of narrow checks attached to questions by `rubric_ref`.

Two graders read them: `rubric_checks` runs the executable checks by code (0–5), and
`rubric_judge` asks the judge the Jeval-kind checks in one request (0–1, per-check statuses).
Both put per-check outcomes in `GradeResult.details["checks"]`. See docs/rubrics.md.
"""

from .attach import append_criteria, check_entry, criteria_text
from .model import Check, Rubric, Scoring, Thresholds
from .probabilities import CheckStatus, decide_status
from .rubric_checks import RubricChecksGrader
from .rubric_judge import RubricJudgeGrader
from .store import RubricStore, load_rubric_file, parse_ref, validate_rubric_file

__all__ = [
    "GRADERS",
    "Check",
    "CheckStatus",
    "Rubric",
    "RubricChecksGrader",
    "RubricJudgeGrader",
    "RubricStore",
    "Scoring",
    "Thresholds",
    "append_criteria",
    "check_entry",
    "criteria_text",
    "decide_status",
    "load_rubric_file",
    "parse_ref",
    "validate_rubric_file",
]

GRADERS = [RubricChecksGrader, RubricJudgeGrader]
