"""`tracegrade grade RUN`: re-score a stored run without re-running the agent."""

from __future__ import annotations

import argparse
import glob
import sys
from pathlib import Path
from typing import Any

from ...ci.publish import report_outcome
from .. import add_id_flag
from .._arguments import add_config_flag, add_goal_flag, add_outcome_flags, subcommand

__all__ = ["register", "run"]

DESCRIPTION = """\
Re-score a run's stored answers and tool-call records (read back from the run's trace file)
without running the agent. By default with the graders stored in the run (the grader ids and
options it used, and its copy of the grading module), so an edit never silently changes what an
old run scores; with --current, with the graders the config names now, matched by question id.
With --goal TEXT, with the goal judge alone against that text (it cannot be combined with
--current: the config's graders bring their own criteria). Judge answers come from the judge cache. Each re-grade is stored under a new grading id.
"""


def register(subparsers: Any) -> None:
    parser = subcommand(
        subparsers,
        "grade",
        help="re-score a stored run (no agent runs)",
        description=DESCRIPTION,
    )
    parser.add_argument(
        "run_dirs",
        metavar="RUN",
        nargs="+",
        help="run directory (or run id under runs_dir); several, or a glob ('runs/2026*'), "
        "re-score each and print each run's objective per target and the mean over all",
    )
    add_config_flag(parser)
    parser.add_argument(
        "--current", action="store_true", help="grade with the config's graders now"
    )
    add_id_flag(parser)
    add_goal_flag(
        parser,
        help="grade every question with the goal judge against TEXT alone (a question with its "
        "own `goal` keeps it); not with --current",
    )
    add_outcome_flags(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ...errors import InputError
    from ...execution.run.regrade import regrade_run
    from ...inputs.config import load_config
    from ...verdicts.gate import combine_exit_codes
    from .. import handle_stop_signals

    config = load_config(args.config)
    runs = _expand(args.run_dirs, config.runs_dir)
    reports = [f for f in ("json", "junit", "markdown", "html") if getattr(args, f, None)]
    if len(runs) > 1 and reports:
        raise InputError(
            f"--{reports[0]} writes one run's report; name one run, or grade them one by one",
            key=f"--{reports[0]}",
        )
    outcomes = []
    for run_dir in runs:
        try:
            with handle_stop_signals():  # a CI cancel (SIGTERM) ends it as Ctrl-C does
                outcome = regrade_run(
                    config,
                    run_dir,
                    current=args.current,
                    use_cache=not args.no_cache,
                    ids=tuple(args.ids),
                    goal=args.goal,
                )
        except KeyboardInterrupt:
            # the unfinished grading never becomes the run's latest: say how to grade it whole
            print(
                f"\ntracegrade: interrupted; the partial grading is not the run's latest: grade "
                f"it again with `tracegrade grade {run_dir}`",
                file=sys.stderr,
            )
            raise
        report_outcome(args, outcome, config=config)
        outcomes.append(outcome)
    if len(outcomes) > 1:
        sys.stdout.write(objective_summary(outcomes))
    return combine_exit_codes([o.exit_code for o in outcomes])


def _expand(names: list[str], runs_dir: Path) -> list[str]:
    """Run names as given, a glob expanded (against the working directory, then runs_dir);
    a glob matching nothing is invalid input."""
    from ...errors import InputError

    out: list[str] = []
    for name in names:
        if not glob.has_magic(name):
            out.append(name)
            continue
        found = sorted(glob.glob(name)) or sorted(glob.glob(str(runs_dir / name)))
        found = [f for f in found if Path(f).is_dir()]
        if not found:
            raise InputError(f"no run directory matches {name!r}", key="RUN")
        out += found
    return list(dict.fromkeys(out))


def objective_summary(outcomes: list[Any]) -> str:
    """Each run's objective per target, then the mean over all of them (seed: `eval grade`
    prints the objective for each run directory and the mean over all)."""
    lines = ["", "objective by run:"]
    values = []
    for outcome in outcomes:
        for t in outcome.targets:
            value = t.verdict.mean_objective
            if value is not None:
                values.append(value)
            shown = "-" if value is None else f"{value:.3f}"
            lines.append(
                f"  {outcome.run_id}  {t.target}: objective {shown} over {t.verdict.questions} "
                f"question(s), exit {t.verdict.exit_code}"
            )
    mean = f"{sum(values) / len(values):.3f}" if values else "-"
    lines.append(f"mean objective over {len(outcomes)} run(s): {mean}")
    return "\n".join(lines) + "\n"
