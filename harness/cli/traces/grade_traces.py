"""`tracegrade grade-traces PATH...`: grade traces an agent made outside tracegrade (in
production, in staging) with a target's dataset, graders and gate, into a normal run."""

from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import Any

from ...ci.publish import report_outcome
from ...errors import InputError
from .. import conversation_book_of
from .._arguments import subcommand
from ._grading import add_grading_flags, add_target_flags, positive, target_and_policy
from ._headers import add_header_flag, headers_of

__all__ = ["register", "run"]

DESCRIPTION = """\
Grade agent traces made outside tracegrade: OTLP JSON lines (the OpenTelemetry Collector's file
exporter, tracegrade's own trace files), OTLP protobuf files, or directories of them. Spans in
tracegrade's own form, OpenInference's (openinference-instrumentation-langchain) and the OTel
GenAI conventions' are read into the same tool-call record a run records. Each trace is paired
with a question of the target's dataset by its question id attribute (tracegrade.question.id or
agentevals.eval.case.id), its gen_ai.conversation.id, or its first user message (exact, then
normalised); the report says how each was paired and lists the traces that matched nothing.
With a trace policy (the target's trace_policy:, --policy, --forbid, --max-calls, --goal),
the traces that match no question are graded against it as questions of their own.
The result is a normal run directory: show, grade, compare, label and promote work on it, and
the exit code follows the target's gate as for `run`. The agent is never imported or run.

With --workers N the paired traces are graded in N processes (the grading workers `receive
--workers` uses): the archive is read and paired once in this process, and each trace goes to
the worker its trace id routes to, which grades and commits it into the same run. The verdict,
the reports and the stored results are the ones one process gives; a worker that dies is an
error (exit 3, whatever the gate), its traces counted as lost.
"""


def register(subparsers: Any) -> None:
    parser = subcommand(
        subparsers,
        "grade-traces",
        help="grade traces made outside tracegrade (files of OTLP spans)",
        description=DESCRIPTION,
    )
    parser.add_argument(
        "paths", nargs="*", type=Path, metavar="PATH", help="trace file or directory"
    )
    parser.add_argument(
        "--from",
        dest="source",
        default=None,
        metavar="BACKEND",
        help="read spans from a backend instead of files: phoenix, or a plugin of the "
        "tracegrade.trace_sources entry-point group (with --endpoint and --project)",
    )
    parser.add_argument("--endpoint", metavar="URL", help="the backend's base URL")
    parser.add_argument("--project", metavar="NAME", help="the backend's project")
    add_header_flag(
        parser,
        metavar="KEY=VALUE",
        help="an HTTP header for the backend (an API key, say); repeatable",
    )
    add_target_flags(parser)
    parser.add_argument(
        "--since", metavar="TIME", help="only traces that started at or after TIME (ISO 8601)"
    )
    parser.add_argument(
        "--until", metavar="TIME", help="only traces that started before TIME (ISO 8601)"
    )
    parser.add_argument(
        "--workers",
        type=positive(int),
        default=None,
        metavar="N",
        help="grade in N processes, each trace routed by its trace id; default: in this process",
    )
    add_grading_flags(parser, live=False)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ...reports.console import ReportDigest
    from ...traces.archive import parse_time
    from ...traces.grade import grade_traces
    from ...traces.spill import TraceSpill, spill_trace_files

    config, policy = target_and_policy(args)
    if policy:
        from ...traces.policy import with_policy

        config = with_policy(config, args.target, policy)
    since = parse_time(args.since, key="--since")
    until = parse_time(args.until, key="--until")
    if args.source is None:
        if not args.paths:
            raise InputError("name a trace file or directory, or --from BACKEND", key="PATH")
        spill = spill_trace_files(args.paths)
        sources = [str(p) for p in args.paths]
    else:
        spill = TraceSpill()
        sources = [f"{args.source}:{args.endpoint}/{args.project}"]
    with spill:
        if args.source is not None:
            spill.add(_from_backend(args, since, until))
        outcome = grade_traces(
            config,
            spill,
            target=args.target,
            sources=sources,
            use_cache=not args.no_cache,
            since_ns=since,
            until_ns=until,
            policy=policy or None,
            conversations=conversation_book_of(args),  # type: ignore[arg-type]
            digest=ReportDigest,  # the verdict folded from the store: flat memory
            pool=_workers(args, config, policy),
        )
    report_outcome(args, outcome, config=config)
    return outcome.exit_code


def _workers(args: argparse.Namespace, config: Any, policy: Any) -> Any:
    """What makes the grading workers of --workers N (None: grade in this process)."""
    if not args.workers:
        return None
    from ...traces.archive_workers import ArchiveWorkers

    return functools.partial(
        ArchiveWorkers,
        workers=args.workers,
        config_path=config.path,
        target=args.target,
        use_cache=not args.no_cache,
        policy=policy or None,
    )


def _from_backend(args: argparse.Namespace, since: int | None, until: int | None) -> Any:
    from ...traces.backends import trace_source

    if args.paths:
        raise InputError("--from reads a backend: name no PATH with it", key="--from")
    for flag in ("endpoint", "project"):
        if not getattr(args, flag):
            raise InputError(f"--from {args.source} needs --{flag}", key=f"--{flag}")
    headers = headers_of(args.header, flag="--header", form="KEY=VALUE")
    source = trace_source(args.source)
    return source.spans(
        endpoint=args.endpoint,
        project=args.project,
        since_ns=since,
        until_ns=until,
        headers=headers,
    )
