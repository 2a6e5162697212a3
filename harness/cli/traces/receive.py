"""`tracegrade receive`: an OTLP/HTTP receiver grading each agent trace as it completes into a
monitor run (a normal run directory that grows), until stopped or a window ends."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ...ci.publish import report_outcome
from ...errors import InputError
from .. import conversation_book_of
from .._arguments import LOOPBACK, add_listen_flags, subcommand
from ._grading import add_grading_flags, add_target_flags, positive, target_and_policy
from ._headers import add_header_flag, headers_of

__all__ = ["register", "run"]

DESCRIPTION = """\
Receive OTLP/HTTP traces (POST /v1/traces, protobuf or JSON, gzip or plain) and grade each
agent trace when it completes (its root span arrived and no span of it for --quiet-period
seconds) with the target's dataset, graders and gate, into a monitor run: a normal run directory
(show, compare, label, promote work on it while it grows) with rollups per hour. Traces are
read and paired with questions as `grade-traces` does; with a trace policy (the target's
trace_policy:, --policy, --forbid, --max-calls, --goal) the traces that match no question are
graded against it as questions of their own.

Listens on 127.0.0.1 unless --host says otherwise. With a token (--token or the environment
variable TRACEGRADE_RECEIVE_TOKEN) a request without `Authorization: Bearer TOKEN` is 401.
--sample keeps that share of the traces, decided by a hash of the trace id (the same for every
span, request and restart). --forward posts every request received to another OTLP endpoint
(a collector, a backend) from a bounded queue: a failing endpoint never slows receiving and each
failed or dropped forward is counted. A request holding a trace's root span waits up to
--forward-wait seconds for the trace's grade and goes with one gen_ai.evaluation.result event per
grade on that span; past the wait it goes marked tracegrade.evaluation.status=ungraded (counted).

Incomplete traces are held in bounded memory (--max-traces, --max-spans, --max-held-mb, and
--trace-timeout for a trace whose root never arrives); what a bound drops is counted, reported
and makes the run incomplete (exit 3 under --gate). SIGINT or SIGTERM stops it gracefully: the requests in flight
are answered, every trace whose root arrived is graded, traces still waiting for their root are
kept in the run directory, and `receive --run RUN` continues the same run (nothing graded twice).

With --workers N the traces are graded in N processes (every core): each request is decoded
once in the receiving process, and each complete trace goes to the worker its trace id routes to
(its conversation id with --conversations), which grades and commits it into the same monitor
run. The bounds, the verdict and the exit codes are the same; a worker that dies is an error
(exit 3, whatever the gate), its traces counted as lost, and a fresh one takes its place.

With --window SECONDS it stops by itself after that long; with --gate its exit code is the
monitor run's verdict (a canary check after a deploy). Without --gate a clean stop exits 0.
"""


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not in (0, 1]")
    return value


# What receive holds and waits for, each a positive number: (flag, type, default, metavar, help)
_BOUNDS: tuple[tuple[str, type, Any, str | None, str], ...] = (
    (
        "--quiet-period",
        float,
        5.0,
        "SECONDS",
        "wait this long after a trace's last span before grading it (default 5)",
    ),
    (
        "--trace-timeout",
        float,
        300.0,
        "SECONDS",
        "drop a trace whose root span has not arrived this long after its first (300)",
    ),
    ("--max-traces", int, 10_000, None, "traces held at once (default 10000)"),
    ("--max-spans", int, 1_000_000, None, "spans held at once (default 1000000)"),
    (
        "--max-held-mb",
        float,
        512.0,
        "MB",
        "size of the spans held at once, their attribute values counted (default 512): "
        "past it spans are refused and counted, as past --max-spans",
    ),
    ("--max-body-mb", float, 32.0, "MB", "largest request body, inflated (default 32)"),
    (
        "--workers",
        int,
        None,
        "N",
        "grade in N processes, each trace routed by its trace id (its conversation's "
        "with --conversations); default: in the receiving process",
    ),
)


def register(subparsers: Any) -> None:
    parser = subcommand(
        subparsers,
        "receive",
        help="receive OTLP traces live and grade each agent trace as it completes",
        description=DESCRIPTION,
    )
    add_target_flags(parser)
    add_listen_flags(parser, port=4318, host_help="address to listen on (127.0.0.1)")
    parser.add_argument(
        "--token",
        default=None,
        help="require `Authorization: Bearer TOKEN` (default: $TRACEGRADE_RECEIVE_TOKEN)",
    )
    parser.add_argument(
        "--run", default=None, metavar="RUN", help="continue this monitor run (dir or id)"
    )
    parser.add_argument(
        "--sample", type=_fraction, default=1.0, help="share of traces graded (default 1)"
    )
    for flag, kind, default, metavar, text in _BOUNDS:
        parser.add_argument(flag, type=positive(kind), default=default, metavar=metavar, help=text)
    parser.add_argument("--forward", metavar="URL", help="forward every request to this URL")
    parser.add_argument(
        "--forward-wait",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="hold a forwarded trace's root span this long for its grade, carried as "
        "gen_ai.evaluation.result events; past it, forward it marked ungraded (default 10; "
        "0 forwards at once, unchanged). Longer than --quiet-period, or nothing waits long "
        "enough",
    )
    parser.add_argument(
        "--annotate",
        choices=["phoenix"],
        default=None,
        help="write each grade as a span annotation as traces are graded (phoenix: CODE for "
        "graders, LLM for judges), on the root span it judged; needs --annotate-endpoint",
    )
    parser.add_argument(
        "--annotate-endpoint",
        metavar="URL",
        default=None,
        help="Phoenix's base URL for --annotate, e.g. http://localhost:6006",
    )
    add_header_flag(
        parser,
        "--annotate-header",
        help="a header on every annotation request (an API key); repeatable",
    )
    parser.add_argument(
        "--annotate-settle",
        type=positive(float),
        default=20.0,
        metavar="SECONDS",
        help="how long an annotation for a span Phoenix has not stored yet is tried again "
        "(default 20; a busy Phoenix stores spans late)",
    )
    parser.add_argument(
        "--window", type=positive(float), metavar="SECONDS", help="stop after SECONDS"
    )
    parser.add_argument(
        "--gate", action="store_true", help="exit with the monitor run's verdict (see below)"
    )
    add_grading_flags(parser, live=True)
    parser.set_defaults(handler=run)


def _annotate_of(args: argparse.Namespace) -> tuple[str | None, dict[str, str]]:
    """Phoenix's base URL and the headers for `--annotate` (None: not annotating)."""
    from ...otel.otlp import endpoint_problem

    if args.annotate is None:
        if args.annotate_endpoint:
            raise InputError("--annotate-endpoint without --annotate", key="--annotate")
        return None, {}
    if not args.annotate_endpoint:
        raise InputError(
            "--annotate phoenix needs --annotate-endpoint: Phoenix's base URL",
            key="--annotate-endpoint",
            hint="e.g. --annotate-endpoint http://localhost:6006",
        )
    if why := endpoint_problem(args.annotate_endpoint):
        raise InputError(why, key="--annotate-endpoint")
    return args.annotate_endpoint, headers_of(args.annotate_header, flag="--annotate-header")


def run(args: argparse.Namespace) -> int:
    from ...traces.live.assembly import Limits
    from ...traces.live.monitor import Monitor
    from ...traces.live.receiver import TOKEN_ENV, Receiver, ReceiverOptions, bind

    config, policy = target_and_policy(args)
    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV) or None
    if args.forward and not args.forward.startswith(("http://", "https://")):
        raise InputError(f"--forward {args.forward!r} is not an http(s) URL", key="--forward")
    annotate, annotate_headers = _annotate_of(args)
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        raise InputError(
            f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", key="--port"
        ) from None
    if args.host not in LOOPBACK and not token:
        print(
            f"tracegrade: listening on {args.host} without a token: anyone who can reach it "
            "can send traces",
            file=sys.stderr,
        )
    try:
        monitor = Monitor(
            config,
            args.target,
            run=args.run,
            use_cache=not args.no_cache,
            sample=args.sample,
            policy=policy or None,
            conversations=conversation_book_of(args),  # type: ignore[arg-type]
        )
    except BaseException:
        sock.close()
        raise
    options = ReceiverOptions(
        token=token,
        limits=Limits(
            max_traces=args.max_traces,
            max_spans=args.max_spans,
            max_bytes=int(args.max_held_mb * 2**20),
            quiet_s=args.quiet_period,
            timeout_s=args.trace_timeout,
            sample=args.sample,
        ),
        forward=args.forward,
        forward_wait_s=max(0.0, args.forward_wait),
        annotate=annotate,
        annotate_headers=annotate_headers,
        annotate_settle_s=args.annotate_settle,
        max_body=int(args.max_body_mb * 1024 * 1024),
        window_s=args.window,
        workers=args.workers or 0,
    )

    def announce(text: str) -> None:
        print(f"tracegrade receive: {text}", flush=True)

    receiver = Receiver(monitor, sock, options, announce=announce)
    outcome = receiver.run()
    if receiver.stopped_by:
        outcome.notes.append(
            f"stopped by {receiver.stopped_by}; continue this run with "
            f"`tracegrade receive --target {args.target} --run {outcome.run_id}`"
        )
    # dropped agent traces make the window incomplete (3), never "nothing to gate"
    empty = (
        not receiver.stopped_by
        and not any(t.questions for t in outcome.targets)
        and not outcome.lost_spans
    )
    if empty:  # decided before any report is written, so each says what the exit code says
        outcome.nothing_to_run = "no agent trace was graded in the window"
    report_outcome(args, outcome, config=config)
    if receiver.pool is not None and receiver.pool.failures:  # an error, gate or no gate
        for failure in receiver.pool.failures:
            print(f"tracegrade: {failure}", file=sys.stderr)
        return 3
    if not args.gate:
        return 0
    if receiver.stopped_by:  # the window did not end: no verdict on it
        import signal

        return 128 + int(signal.Signals[receiver.stopped_by])
    if empty:
        print(
            "tracegrade: no agent trace was graded in the window: nothing to gate (exit 5)",
            file=sys.stderr,
        )
    return int(outcome.exit_code)
