"""`tracegrade run`: run targets over their datasets, grade, report, exit per the gate."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ...ci.publish import report_outcome
from .. import add_id_flag
from .._arguments import (
    add_config_flag,
    add_goal_flag,
    add_outcome_flags,
    add_repeatable,
    subcommand,
)
from .compare import add_compare_flags, fail_on_of

__all__ = ["register", "run"]

DESCRIPTION = """\
Run each selected target's agent over its dataset (bounded concurrency, a per-question timeout),
record every tool call as an OpenTelemetry span, grade each answer, commit each finished
question to runs/<run id>/results.sqlite, print the report and exit per the gate.
An interrupted run keeps every finished question: `--resume RUN_ID` asks only what is missing.

The report's terms (docs/running.md, "Reading the console"):
  grading N   which scoring of the run this is: 1 for the run, 2+ for each `tracegrade grade`
  pass bar    what meets a grader's bar on one question (= 1: its max; >= 5: its threshold)
  composite   a question's 0-5 score, the mean of its graders' scores mapped onto 0-5
  objective   a question's 0-1 score, the graders' weighted mean; 0 when a must-pass one failed
  errored     the agent failed on the question (raised, timed out, no answer): scores 0, fails
  degraded    the evaluation failed on it (a grader or judge error): left out of the means;
              errored and degraded questions beyond the error budget (max_errored) are exit 3
  rule        the gate in force, defaults included
"""


def register(subparsers: Any) -> None:
    parser = subcommand(
        subparsers,
        "run",
        help="run targets, grade, report; exit 0/2/3/4/5",
        description=DESCRIPTION,
    )
    add_config_flag(parser)
    add_repeatable(
        parser, "--target", metavar="NAME", help="target to run (repeatable; default all)"
    )
    parser.add_argument("--split", default=None, help="only questions of this split")
    add_repeatable(parser, "--bundle", metavar="B", help="only this bundle (repeatable)")
    add_repeatable(parser, "--tag", metavar="T", help="only questions with this tag (repeatable)")
    parser.add_argument(
        "--limit", type=int, default=None, metavar="N", help="at most N questions per target"
    )
    parser.add_argument(
        "--resume", default=None, metavar="RUN_ID", help="finish an interrupted run"
    )
    parser.add_argument(
        "--repeats",
        type=_positive,
        default=None,
        metavar="K",
        help="run each question K times (trials), over every target's `repeats:`",
    )
    parser.add_argument(
        "--baseline",
        default=None,
        metavar="RUN_OR_JSON",
        help="after the run, compare it with this run (id or dir) or results JSON; "
        "a regression joins the gate (exit 2) and every report",
    )
    parser.add_argument(
        "--workers",
        type=_positive,
        default=None,
        metavar="N",
        help="run each target's questions in N worker processes (default: the config's "
        "`workers:`, else 1), each with a share of its concurrency; this process stays the one "
        "writer of the results",
    )
    parser.add_argument(
        "--executor",
        choices=("local", "ray"),
        default=None,
        help="where questions run (default: the config's `executor:`, else local): local "
        "processes, or --workers Ray actors (pip install 'tracegrade[ray]'; the cluster at "
        "the config's ray.address or RAY_ADDRESS, else a local Ray)",
    )
    parser.add_argument(
        "--shard",
        default=None,
        metavar="I/N",
        help="run only shard I of N: a deterministic share of the selection (by a hash of "
        "target and question id); merge the shards' run dirs with `tracegrade merge`",
    )
    parser.add_argument(
        "--cassettes",
        type=Path,
        default=None,
        metavar="DIR",
        help="record and replay the agents' model calls in DIR (one cassette per question and "
        "trial, a folder per target), over every target's `cassettes:`",
    )
    parser.add_argument(
        "--record-mode",
        choices=("none", "once", "new", "all"),
        default=None,
        help="none (default): replay only, a call with no recording errors its question (exit 3) "
        "naming what changed; once: record questions without a cassette; new: replay what "
        "fits, record the rest; all: re-record everything",
    )
    add_compare_flags(parser)
    add_id_flag(parser)
    add_goal_flag(
        parser,
        help="score every question with the goal judge against TEXT, instead of the targets' "
        "graders (a question with its own `goal` keeps it); needs a `judge:` block",
    )
    add_outcome_flags(parser)
    parser.set_defaults(handler=run)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def run(args: argparse.Namespace) -> int:
    from ...execution.run.services import ANSWERS_VERBATIM_NOTE
    from ...inputs.config import load_config, with_cassettes
    from ...reports.console import Progress
    from .. import handle_stop_signals

    config = with_cassettes(
        load_config(args.config), directory=args.cassettes, mode=args.record_mode
    )
    baseline = None
    if args.baseline:  # read before the run: a bad baseline is exit 4 before anything runs
        from ...rundir.history import load_comparable

        baseline = load_comparable(args.baseline, config_path=args.config)
    progress = Progress(quiet=args.quiet)
    if baseline is not None and not args.resume:
        _check_baseline_overlap(args, config, baseline)

    started: list[Path] = []

    def on_start(run_dir: Path, total: int) -> None:
        started.append(run_dir)
        print(f"run dir: {run_dir}", file=sys.stderr)
        if not config.redaction.answers:  # said before anything runs, and again in the report
            print("tracegrade: note: " + ANSWERS_VERBATIM_NOTE, file=sys.stderr)
        progress.start(run_dir, total)

    if args.resume:  # a resume asks what the run selected: a selection flag is never ignored
        from ...errors import InputError

        given = {
            "--id": args.ids,
            "--limit": args.limit,
            "--split": args.split,
            "--bundle": args.bundle,
            "--tag": args.tag,
            "--target": args.target,
            "--repeats": args.repeats,
            "--shard": args.shard,
        }
        for flag, value in given.items():
            if value:
                raise InputError(
                    f"{flag} cannot be combined with --resume: a resume asks what the run "
                    "selected when it started",
                    key=flag,
                )
    if args.goal is not None and (args.resume or not args.goal.strip()):
        from ...errors import InputError

        raise InputError(
            "--goal cannot be combined with --resume: a resume grades with what the run chose"
            if args.resume
            else "--goal must not be blank",
            key="--goal",
        )
    try:
        with handle_stop_signals():
            outcome = _run(args, config, on_start, progress)
    except KeyboardInterrupt:
        if started:  # every finished question is committed: say how to finish the rest
            print(
                f"\ntracegrade: interrupted; finish with `tracegrade run --resume {started[0].name}`",
                file=sys.stderr,
            )
        raise
    finally:
        progress.close()
    if baseline is not None:
        _compare_with_baseline(args, outcome, baseline)
    report_outcome(args, outcome, config=config)
    _print_changed_defaults(config, outcome)
    return outcome.exit_code


def _check_baseline_overlap(args: argparse.Namespace, config: Any, baseline: Any) -> None:
    """A baseline sharing no question with the selection (another dataset) can decide
    nothing: refused (exit 4) before the agents run, not found out after them."""
    from ...errors import InputError
    from ...execution.run.prepare import selected_ids

    asked = selected_ids(config, _selection(args))
    if asked and not any(q.id in asked for q in baseline.questions):
        raise InputError(
            f"the baseline {args.baseline} shares no question with this run's selection "
            f"({len(asked)} question(s)): it is a run of another dataset",
            key="--baseline",
        )


def _print_changed_defaults(config: Any, outcome: Any) -> None:
    """A one-line notice per target whose verdict the safe defaults decided (stderr, last)."""
    from ...execution.run.defaults_notice import changed_defaults_notice

    def earlier() -> list[Any]:  # read only when a notice could be due
        from ...rundir.history import earlier_manifests

        return earlier_manifests(config.runs_dir, but=outcome.run_id)

    for result in outcome.targets:
        target = config.targets.get(result.target)
        notice = (
            changed_defaults_notice(target, result, earlier=earlier) if target is not None else None
        )
        if notice:
            print(notice, file=sys.stderr)


def _compare_with_baseline(args: argparse.Namespace, outcome: Any, baseline: Any) -> None:
    """Attach the comparison to the outcome; a refused one (drift) is a note and exit 4, the
    run's own reports still written."""
    from ...comparison.compare import compare_runs
    from ...errors import TracegradeError
    from ...rundir.history import load_stored_run

    candidate = load_stored_run(outcome.run_dir, grading=outcome.grading_id, label=outcome.run_id)
    try:
        outcome.comparison = compare_runs(
            baseline,
            candidate,
            allow_drift=args.allow_drift,
            fail_on=fail_on_of(args),
            resamples=args.resamples,
            seed=args.seed,
            label=args.label,
            allow_missing=args.allow_missing,
        )
    except TracegradeError as exc:
        print(f"tracegrade: error: baseline comparison: {exc}", file=sys.stderr)
        outcome.notes.append(f"baseline comparison refused: {exc}")
        outcome.extra_exit_codes.append(int(exc.exit_code))


def _run(args: argparse.Namespace, config: Any, on_start: Any, progress: Any) -> Any:
    from ...execution.run.lifecycle import resume_run, start_run

    if args.resume:
        return resume_run(
            config,
            args.resume,
            use_cache=not args.no_cache,
            on_start=on_start,
            on_done=progress.advance,
            workers=args.workers,
            executor=args.executor,
        )
    return start_run(
        config,
        _selection(args),
        use_cache=not args.no_cache,
        on_start=on_start,
        on_done=progress.advance,
        workers=args.workers,
        executor=args.executor,
    )


def _selection(args: argparse.Namespace) -> Any:
    from ...execution.run.shards import parse_shard
    from ...rundir.outcome import Selection

    return Selection(
        targets=tuple(args.target),
        split=args.split,
        bundles=tuple(args.bundle),
        tags=tuple(args.tag),
        limit=args.limit,
        ids=tuple(args.ids),
        repeats=args.repeats,
        shard=parse_shard(args.shard) if args.shard else None,
        goal=args.goal,
    )
