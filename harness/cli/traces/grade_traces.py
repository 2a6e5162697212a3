"""`tracegrade grade-traces PATH...`: grade traces an agent made outside tracegrade (in
production, in staging) with a target's dataset, graders and gate, into a normal run."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ...ci.publish import add_ci_flags, report_outcome
from ...errors import InputError
from ...reports.flags import add_report_flags
from .. import (
    add_conversation_flags,
    add_trace_policy_flags,
    conversation_book_of,
    trace_policy_of,
)
from .._arguments import add_config_flag, subcommand
from ._headers import headers_of

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
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an HTTP header for the backend (an API key, say); repeatable",
    )
    add_config_flag(parser)
    parser.add_argument(
        "--target", required=True, help="the target whose dataset, graders and gate apply"
    )
    parser.add_argument(
        "--since", metavar="TIME", help="only traces that started at or after TIME (ISO 8601)"
    )
    parser.add_argument(
        "--until", metavar="TIME", help="only traces that started before TIME (ISO 8601)"
    )
    add_trace_policy_flags(parser)
    add_conversation_flags(parser, live=False)
    add_report_flags(parser)
    add_ci_flags(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ...inputs.config import load_config
    from ...reports.console import ReportDigest
    from ...traces.archive import parse_time
    from ...traces.grade import grade_traces
    from ...traces.spill import TraceSpill, spill_trace_files

    config = load_config(args.config)
    config.select_targets([args.target])  # an unknown target is exit 4 before any reading
    policy: Any = trace_policy_of(args, config)
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
        )
    report_outcome(args, outcome, config=config)
    return outcome.exit_code


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
