"""What makes a comparison a regression: the `--fail-on` rules (cheap to import: the CLI's
flags are built from them at start-up)."""

__all__ = ["COST_RULES", "DEFAULT_FAIL_ON", "FAIL_ON", "fail_on_rule"]

FAIL_ON = ("gate", "must-pass", "significant", "any")
"""What makes a comparison a regression (exit 2): `gate` (the default), a question that passed
the gate's pass rule in the baseline and fails it in the candidate; `must-pass`, a question
newly failing a must-pass grader; `significant`, the composite interval wholly below zero (the
opt-in for noisy repeated runs, alone); `any`, any of these or any grader newly below its bar."""
COST_RULES = ("cost:+N%", "tokens:+N%", "latency:+N%")
"""The relative-increase rules: the candidate's cost (or tokens, or mean question latency) over
the aligned questions more than N percent above the baseline's is a regression, naming the
questions over it (`tracegrade.comparison.costs`)."""
DEFAULT_FAIL_ON = ("gate",)
"""Compare follows the gate: a question that newly fails is a regression."""


def fail_on_rule(value: str) -> str:
    """One `--fail-on` value as the CLI checks it (argparse `type`): a rule of `FAIL_ON`, or
    `cost:+N%` / `tokens:+N%` / `latency:+N%`; anything else is a usage error (exit 4)."""
    import argparse
    import re

    text = value.strip()
    if text in FAIL_ON:
        return text
    head = text.split(":", 1)[0]
    if head in ("cost", "tokens", "latency"):
        if re.fullmatch(r"(cost|tokens|latency):\+\d+(\.\d+)?%", text):
            return text
        raise argparse.ArgumentTypeError(
            f"{value!r}: a malformed percentage (write the allowed increase over the "
            f"baseline, e.g. {head}:+20%)"
        )
    raise argparse.ArgumentTypeError(
        f"invalid choice {value!r} (choose from {', '.join(FAIL_ON + COST_RULES)})"
    )
