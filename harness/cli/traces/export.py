"""`tracegrade export RUN`: replay a stored run's trace file to any OTLP/HTTP backend."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .._arguments import add_config_flag, add_repeatable, add_run_argument, subcommand
from ._headers import add_header_flag, headers_of

__all__ = ["register", "run"]

DESCRIPTION = """\
Send the spans a run stored in its local trace file (runs/<id>/traces/<target>.jsonl) to an
OTLP/HTTP endpoint: Phoenix, Jaeger, Tempo, an OpenTelemetry Collector. Secrets are redacted
again on the way out and long values cut, as for live export. The file itself is OTLP/JSON;
backends that accept only protobuf (Phoenix answers 415 to JSON) get it converted.
The whole export is bounded: each request may take --timeout seconds, the export as a whole
--deadline seconds, and it gives up after --breaker consecutive requests went unanswered (timed
out or could not connect), so a backend that accepts connections and never answers costs
seconds, not a timeout per trace-file line. What was and was not delivered is printed per
target.
Each question's grades go with its spans: one `gen_ai.evaluation.result` event per grade on the
question's root span (the grader as gen_ai.evaluation.name, score, pass/fail label, the reason
as explanation; the question's overall verdict as `tracegrade`; each label a person gave as
`label:<name>`), from the run's latest grading (--no-evaluations sends the spans alone).
--to phoenix (--endpoint is Phoenix's base URL, e.g. http://localhost:6006) also writes each
grade as a Phoenix span annotation on the span it judged (annotator kind CODE for graders, LLM
for judges, HUMAN for labels); exporting again updates them in place.
Exit 0 when every span (and annotation) was accepted, 3 when the backend refused or missed any
(or the export stopped before the end), 4 for a run, target, endpoint or protocol that is not
valid.
"""


def register(subparsers: Any) -> None:
    parser = subcommand(
        subparsers,
        "export",
        help="replay a stored run's spans to an OTLP backend",
        description=DESCRIPTION,
    )
    add_run_argument(parser, help="run directory (or run id under runs_dir)")
    add_config_flag(parser)
    add_repeatable(parser, "--target", metavar="T", help="only this target (repeatable)")
    parser.add_argument(
        "--endpoint",
        default=None,
        metavar="URL",
        help="OTLP/HTTP base URL (http://localhost:4318) or full traces URL; default: "
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT",
    )
    parser.add_argument(
        "--protocol",
        default=None,
        metavar="P",
        help="http/protobuf (default) or http/json; default from OTEL_EXPORTER_OTLP_PROTOCOL",
    )
    parser.add_argument(
        "--to",
        choices=("otlp", "phoenix"),
        default="otlp",
        help="otlp (default): any OTLP/HTTP backend; phoenix: the spans to Phoenix's OTLP "
        "endpoint, then each grade as a span annotation through its REST API",
    )
    parser.add_argument(
        "--no-evaluations",
        action="store_true",
        help="send the spans without the grades' gen_ai.evaluation.result events",
    )
    parser.add_argument(
        "--project", default=None, help="project name for the backend (replaces the stored one)"
    )
    add_header_flag(parser, help="request header (repeatable)")
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=10.0,
        metavar="S",
        help="seconds one request may take (default 10)",
    )
    parser.add_argument(
        "--deadline",
        type=_seconds,
        default=60.0,
        metavar="S",
        help="seconds the whole export may take (default 60); what is left is not sent",
    )
    parser.add_argument(
        "--breaker",
        type=int,
        default=2,
        metavar="N",
        help="give up after N consecutive requests went unanswered (default 2)",
    )
    parser.set_defaults(handler=run)


def _seconds(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    return value


def _run_and_config(args: argparse.Namespace) -> tuple[Any, Any]:
    """The run directory, and the config whose redaction policy applies: --config, else the
    config the run was made with when it is still there, else none (the default policy)."""
    from ...errors import InputError
    from ...inputs.config import load_config
    from ...rundir.directory import RunDirectory

    direct = RunDirectory(args.run_dir)
    if direct.traces_dir.is_dir():
        config_path = args.config
        if config_path is None:
            try:
                config_path = direct.manifest().config_path
            except InputError:
                config_path = None
            if config_path is not None and not Path(config_path).is_file():
                config_path = None
        return direct, load_config(config_path) if config_path else None
    config = load_config(args.config)
    run = RunDirectory(config.runs_dir / str(args.run_dir))
    if not run.traces_dir.is_dir():
        raise InputError(f"no run {args.run_dir!r}: no traces/ folder in {run.path}", key="RUN")
    return run, config


def run(args: argparse.Namespace) -> int:
    from ...capture.otlp_http import ExportBudget, replay_trace_file
    from ...errors import InputError
    from ...otel.otlp import (
        endpoint_problem,
        env_endpoint,
        exporting_from_env,
        resolve_protocol,
        traces_url,
    )
    from ...redaction import DEFAULT_POLICY

    protocol = resolve_protocol(args.protocol, key="--protocol")
    if args.to == "phoenix" and not args.endpoint:
        raise InputError(
            "--to phoenix needs --endpoint: Phoenix's base URL",
            key="--endpoint",
            hint="e.g. --endpoint http://localhost:6006",
        )
    if args.endpoint:
        if why := endpoint_problem(args.endpoint):
            raise InputError(why, key="--endpoint", hint="e.g. --endpoint http://localhost:4318")
        endpoint = traces_url(args.endpoint)
    elif exporting_from_env():
        endpoint = traces_url(env_endpoint())
    else:
        raise InputError("no endpoint: give --endpoint URL or set OTEL_EXPORTER_OTLP_ENDPOINT")
    headers = headers_of(args.header, flag="--header")
    run, config = _run_and_config(args)
    run_dir = run.path
    redaction = config.redaction if config is not None else DEFAULT_POLICY
    files = run.trace_files()
    unknown = [t for t in args.target if t not in files]
    if unknown:
        raise InputError(
            f"run {run_dir.name} has no trace file for target {unknown[0]!r}",
            key="--target",
            hint=f"targets with a trace file: {', '.join(files) or '(none)'}",
        )
    if not files:
        raise InputError(f"run {run_dir.name} has no trace files in {run.traces_dir}")
    budget = ExportBudget(
        deadline_s=args.deadline, timeout_s=args.timeout, breaker=max(1, args.breaker)
    )
    evaluations = [] if args.no_evaluations else _evaluations(run.path)
    from ...rundir.evaluations import otlp_events

    events = otlp_events(evaluations)
    roots: dict[str, str] = {}
    missed = 0
    for target in args.target or list(files):
        report = replay_trace_file(
            files[target],
            endpoint=endpoint,
            protocol=protocol,
            headers=headers,
            project=args.project,
            redaction=redaction,
            budget=budget,
            events=events,
        )
        roots.update(report.roots)
        line = (
            f"{target}: {report.exported} span(s) exported to {endpoint} ({protocol}), "
            f"{report.delivered_lines} of {report.lines} request(s) delivered"
        )
        if report.failed:
            line += f"; {report.failed} span(s) not delivered: {report.first_failure}"
        if report.not_sent:
            line += f"; {report.not_sent} span(s) not sent"
        sys.stdout.write(line + "\n")
        missed += report.failed + report.not_sent
    if evaluations and not missed:
        graded = sum(1 for e in evaluations if e.trace_id in roots)
        sys.stdout.write(f"{graded} evaluation event(s) on {len(roots)} question span(s)\n")
    if args.to == "phoenix" and evaluations:
        missed += _annotate(args.endpoint, evaluations, roots, headers, budget, redaction)
    if budget.stopped:
        sys.stdout.write(f"export stopped: {budget.stopped}\n")
    return 3 if missed else 0


def _evaluations(run_dir: Path) -> list[Any]:
    """The grades of the run's latest grading, as `show` reads them (one verdict)."""
    from ...rundir.evaluations import evaluations_of
    from ...rundir.history import load_outcome

    outcome = load_outcome(run_dir)
    questions = [q for t in outcome.targets for q in t.questions]
    return evaluations_of(questions, grading=outcome.grading_id)


def _annotate(
    endpoint: str, evaluations: list, roots: dict, headers: dict, budget: Any, redaction: Any
) -> int:
    """Each grade as a Phoenix span annotation on its question's root span; the count missed."""
    from ...rundir.evaluations import phoenix_annotation
    from ...traces.phoenix import annotate_spans

    base = endpoint.removesuffix("/v1/traces")
    annotations = [
        phoenix_annotation(e, roots[e.trace_id], explanation=redaction.text(e.explanation))
        for e in evaluations
        if e.trace_id in roots
    ]
    report = annotate_spans(base, annotations, headers=headers, budget=budget)
    line = f"phoenix: {report.written} annotation(s) written to {base}"
    if report.failed:
        line += f"; {report.failed} not written: {report.first_failure}"
    sys.stdout.write(line + "\n")
    return report.failed
