"""What makes a comparison a regression: the `--fail-on` rules (cheap to import: the CLI's
flags are built from them at start-up)."""

__all__ = ["DEFAULT_FAIL_ON", "FAIL_ON"]

FAIL_ON = ("gate", "must-pass", "significant", "any")
"""What makes a comparison a regression (exit 2): `gate` (the default), a question that passed
the gate's pass rule in the baseline and fails it in the candidate; `must-pass`, a question
newly failing a must-pass grader; `significant`, the composite interval wholly below zero (the
opt-in for noisy repeated runs, alone); `any`, any of these or any grader newly below its bar."""
DEFAULT_FAIL_ON = ("gate",)
"""Compare follows the gate: a question that newly fails is a regression."""
