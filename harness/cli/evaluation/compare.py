"""`tracegrade compare BASE CAND`: is the candidate worse than the baseline?"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ...comparison.rules import DEFAULT_FAIL_ON, fail_on_rule
from .._arguments import add_config_flag, add_json_file_flag, subcommand

__all__ = ["register", "run"]

DESCRIPTION = """\
Compare two runs question by question. BASE and CAND are run ids (under the config's runs_dir),
run directories, or JSON results files written by `run --json` (a CI job can compare against
the artifact of the main branch's last run without its run directory).

Questions are aligned by target and question id (a question's repeated trials together: it
passes when every trial passed). A question whose content (input, expected, expected_tools,
rubric_ref) or rubric versions differ between the runs is refused with exit 4, naming it,
unless --allow-drift lists it apart. For each question: newly failing or passing, per-grader
score deltas and the tool-call difference (calls that appeared, disappeared or changed
arguments). Over all: the exact McNemar test on pass/fail and a seeded paired bootstrap
interval on the mean composite delta.

Exit 2 when the candidate regresses (--fail-on, repeatable; default gate):
  gate         a question passed the gate's pass rule in the baseline and fails it in the
               candidate (compare follows the gate: every must-pass grader met its bar, no
               required or critical rubric check failed, the agent did not error)
  must-pass    a question newly fails a must-pass grader
  significant  the composite interval lies wholly below zero; alone, the opt-in for noisy
               repeated runs, where one question flipping is not yet a regression
  any          any of the above, or any grader newly below its bar
  cost:+20%    the agent's cost over the aligned questions more than 20% above the baseline's,
               naming the questions over it (also tokens:+N%, and latency:+N% on the mean
               question wall time); an unknown figure (an unpriced model, calls without
               usage) cannot be held and counts as a regression
Cost, token and latency deltas (per run, and the questions that changed most) are printed with
their paired bootstrap intervals whatever the rule.
The statistics (McNemar, bootstrap) are reported whatever the rule.
Exit 3 (incomplete) when the candidate leaves baseline questions out (a --limit, another
selection), never finished (interrupted, never resumed) or has degraded questions (their
evaluation failed): each is named; --allow-missing lists them and decides on the rest.
exit 0 otherwise; 4 on drift or bad input; 5 when no question is in both runs.
"""


def register(subparsers: Any) -> None:
    parser = subcommand(
        subparsers,
        "compare",
        help="compare a candidate run with a baseline; exit 2 on regression",
        description=DESCRIPTION,
    )
    parser.add_argument("base", metavar="BASE", help="baseline: run id, run dir or results JSON")
    parser.add_argument(
        "cand",
        metavar="CAND",
        nargs="?",
        default=None,
        help="candidate: run id, run dir or results JSON (none with --variants)",
    )
    parser.add_argument(
        "--variants",
        nargs=2,
        metavar=("A", "B"),
        default=None,
        help="compare two variants (targets) of the run BASE: A the baseline, B the candidate",
    )
    add_compare_flags(parser)
    add_config_flag(parser)
    add_json_file_flag(parser, help="write the comparison as JSON")
    parser.add_argument(
        "--markdown", type=Path, metavar="FILE", help="write the comparison as Markdown"
    )
    parser.set_defaults(handler=run)


def add_compare_flags(parser: argparse.ArgumentParser) -> None:
    """The flags `compare` shares with `run --baseline`."""
    parser.add_argument(
        "--allow-drift",
        action="store_true",
        help="compare despite questions that differ between the runs (listed apart)",
    )
    parser.add_argument(
        "--allow-missing",
        action="store_true",
        help="decide on the questions both runs have although the candidate is incomplete "
        "(baseline questions left out, unfinished, degraded): listed, not exit 3",
    )
    parser.add_argument(
        "--fail-on",
        action="append",
        type=fail_on_rule,
        default=None,
        metavar="RULE",
        help="what counts as a regression (repeatable; default gate: a question newly failing): "
        "gate, must-pass, significant, any, or cost:+N%%, tokens:+N%%, latency:+N%% (a relative "
        "increase over the baseline)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the bootstrap resampling (default 0)"
    )
    parser.add_argument(
        "--label",
        default=None,
        metavar="ID",
        help="use a person's answer to checklist item ID (`tracegrade label`) as each question's "
        "pass/fail (a must-pass signal named label:ID); unlabelled or stale: undecided",
    )
    parser.add_argument(
        "--resamples",
        type=int,
        default=10_000,
        metavar="N",
        help="bootstrap resamples (default 10000)",
    )


def fail_on_of(args: argparse.Namespace) -> tuple[str, ...]:
    return tuple(args.fail_on or DEFAULT_FAIL_ON)


def variant_of(stored: Any, target: str) -> Any:
    """One target of a stored run as a run of its own, its questions under the common target
    name `variant`, so two variants of one run align question by question."""
    import dataclasses

    from ...errors import InputError

    names = sorted({q.target for q in stored.questions})
    if target not in names:
        raise InputError(
            f"run {stored.label} has no target {target!r}",
            key="--variants",
            hint=f"its targets: {', '.join(names) or '(none)'}",
        )
    manifest = stored.manifest
    if manifest is not None:
        own = manifest.target(target)
        manifest = manifest.model_copy(update={"targets": {"variant": own} if own else {}})
    return dataclasses.replace(
        stored,
        label=f"{stored.label} {target}",
        questions=[
            q.model_copy(update={"target": "variant"})
            for q in stored.questions
            if q.target == target
        ],
        manifest=manifest,
    )


def run(args: argparse.Namespace) -> int:
    from ...comparison.compare import compare_runs
    from ...reports.compare_report import (
        render_comparison_console,
        write_comparison_json,
        write_comparison_markdown,
    )
    from ...rundir.history import load_comparable

    if args.variants is not None:
        if args.cand is not None:
            from ...errors import InputError

            raise InputError("compare --variants A B takes one run", key="--variants")
        both = load_comparable(args.base, config_path=args.config)
        base, cand = (variant_of(both, name) for name in args.variants)
    elif args.cand is None:
        from ...errors import InputError

        raise InputError("compare needs BASE and CAND, or one run and --variants A B", key="CAND")
    else:
        base = load_comparable(args.base, config_path=args.config)
        cand = load_comparable(args.cand, config_path=args.config)
    comparison = compare_runs(
        base,
        cand,
        allow_drift=args.allow_drift,
        allow_missing=args.allow_missing,
        fail_on=fail_on_of(args),
        resamples=args.resamples,
        seed=args.seed,
        label=args.label,
    )
    sys.stdout.write(render_comparison_console(comparison))
    if args.json:
        write_comparison_json(comparison, args.json)
    if args.markdown:
        write_comparison_markdown(comparison, args.markdown)
    return comparison.exit_code
