"""What `grade-traces` and `receive` share: the target whose dataset, graders and gate grade
the traces, the flags of how (trace policy, conversations, reports, CI), and the config and
trace policy those make. One declaration, so the two commands take them alike."""

from __future__ import annotations

import argparse
from typing import Any

from .. import add_conversation_flags, add_trace_policy_flags, trace_policy_of
from .._arguments import add_config_flag, add_outcome_flags

__all__ = ["add_grading_flags", "add_target_flags", "positive", "target_and_policy"]


def positive(kind: type) -> Any:
    """An argparse type: a `kind` above 0; anything else is refused (exit 4, naming the flag)."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text} is not positive")
        return value

    return parse


def add_target_flags(parser: argparse.ArgumentParser) -> None:
    """`--config` and the `--target` (required) the traces are graded with."""
    add_config_flag(parser)
    parser.add_argument(
        "--target", required=True, help="the target whose dataset, graders and gate apply"
    )


def add_grading_flags(parser: argparse.ArgumentParser, *, live: bool) -> None:
    """The trace policy, conversation, report and CI flags; `live` (receive): a conversation
    closes when quiet, not at the end."""
    add_trace_policy_flags(parser)
    add_conversation_flags(parser, live=live)
    add_outcome_flags(parser)


def target_and_policy(args: argparse.Namespace) -> tuple[Any, Any]:
    """The config, its target checked first (an unknown target is exit 4 before any trace is
    read), and the trace policy the target and the flags make (falsy when none)."""
    from ...inputs.config import load_config

    config = load_config(args.config)
    config.select_targets([args.target])
    return config, trace_policy_of(args, config)
