"""`tracegrade grade-traces PATH...`: grade traces an agent made outside tracegrade (in
production, in staging) with a target's dataset, graders and gate, into a normal run."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..reports.flags import add_report_flags, write_reports
from . import EPILOG

__all__ = ["register", "run"]

DESCRIPTION = """\
Grade agent traces made outside tracegrade: OTLP JSON lines (the OpenTelemetry Collector's file
exporter, tracegrade's own trace files), OTLP protobuf files, or directories of them. Spans in
tracegrade's own form, OpenInference's (openinference-instrumentation-langchain) and the OTel
GenAI conventions' are read into the same tool-call record a run records. Each trace is paired
with a question of the target's dataset by its question id attribute (tracegrade.question.id or
agentevals.eval.case.id), its gen_ai.conversation.id, or its first user message (exact, then
normalised); the report says how each was paired and lists the traces that matched nothing.
The result is a normal run directory: show, grade, compare, label and promote work on it, and
the exit code follows the target's gate as for `run`. The agent is never imported or run.
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "grade-traces",
        help="grade traces made outside tracegrade (files of OTLP spans)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "paths", nargs="+", type=Path, metavar="PATH", help="trace file or directory"
    )
    parser.add_argument("--config", type=Path, default=None, help="config file (tracegrade.yaml)")
    parser.add_argument(
        "--target", required=True, help="the target whose dataset, graders and gate apply"
    )
    add_report_flags(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..inputs.config import load_config
    from ..traces.archive import read_trace_files, require_traces
    from ..traces.grade import grade_traces

    config = load_config(args.config)
    config.select_targets([args.target])  # an unknown target is exit 4 before any reading
    traces = read_trace_files(args.paths)
    require_traces(traces, args.paths)
    outcome = grade_traces(
        config,
        traces,
        target=args.target,
        sources=[str(p) for p in args.paths],
        use_cache=not args.no_cache,
    )
    write_reports(args, outcome, config=config)
    return outcome.exit_code
