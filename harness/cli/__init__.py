"""The `tracegrade` command: a thin argparse front over the library, one module per subcommand.

Each subcommand module exposes `register(subparsers)` which adds its parser and sets
`handler=<callable(args) -> int>`. Errors map to the exit codes of DESIGN.md here and only here.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import signal
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import ExitCode, TracegradeError
from ..redaction import RedactingFormatter, console_policy, use_console_policy
from ..reports.escaping import PrintableStream
from ._arguments import EPILOG, add_goal_flag, add_repeatable

__all__ = [
    "Interrupted",
    "add_id_flag",
    "add_trace_policy_flags",
    "build_parser",
    "handle_stop_signals",
    "main",
    "trace_policy_of",
]


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP (what CI runners send on cancel), handled exactly like Ctrl-C: the
    run flushes, says how to resume, and the process exits 128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_interrupted(signum: int, frame: object) -> None:
    raise Interrupted(signum)


# a run's event loop defers it to a safe point (`execution.executors.loops`), as it does Ctrl-C
_raise_interrupted.tracegrade_interrupts = True  # type: ignore[attr-defined]


@contextlib.contextmanager
def handle_stop_signals() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP interrupt like Ctrl-C (main thread only; a no-op
    elsewhere); the previous handlers come back after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signum = getattr(signal, name)
            previous[signum] = signal.signal(signum, _raise_interrupted)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


# each subcommand's module under tracegrade.cli, in the order `--help` lists them
SUBCOMMANDS: tuple[str, ...] = (
    "inputs.validate",
    "inputs.graders",
    "inputs.targets",
    "evaluation.run",
    "evaluation.grade",
    "traces.grade_traces",
    "traces.receive",
    "evaluation.runs",
    "evaluation.show",
    "evaluation.label",
    "inputs.dataset",
    "evaluation.merge",
    "evaluation.compare",
    "traces.export",
    "inputs.judges",
    "inputs.rubrics",
    "serve",
    "inputs.cassettes",
)


def _version() -> str:
    """The installed distribution's version (an uninstalled checkout says so)."""
    from .._version import __version__

    return __version__


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on usage errors; usage errors are invalid input (4) here."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(ExitCode.INVALID_INPUT, f"{self.prog}: error: {message}\n")


def _unrecognized(parser: argparse.ArgumentParser, args: Any, extras: list[str]) -> str:
    """argparse's "unrecognized arguments", with a did-you-mean for a misspelt flag among the
    subcommand's own (`--confg` -> `--config`)."""
    from ..errors import suggest

    command = parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            command = action.choices.get(str(getattr(args, "command", "")), parser)
    flags = [o for a in command._actions for o in a.option_strings if o.startswith("--")]
    hints = []
    for extra in extras:
        flag = extra.partition("=")[0]
        close = suggest(flag, flags) if flag.startswith("-") else None
        if close:
            hints.append(f"did you mean {close} for {flag}?")
    text = f"unrecognized arguments: {' '.join(extras)}"
    return f"{text} ({'; '.join(hints)})" if hints else text


def add_id_flag(
    parser: argparse.ArgumentParser,
    *,
    help: str = "only the question with this id; a glob pattern (quote it: 'Q0*') selects every "
    "matching id (repeatable)",
) -> None:
    """`--id ID` (repeatable, glob patterns), shared by the commands that select questions."""
    add_repeatable(parser, "--id", dest="ids", metavar="ID", help=help)


def add_trace_policy_flags(parser: argparse.ArgumentParser) -> None:
    """The trace policy flags of `grade-traces` and `receive` (tracegrade.traces.policy): what
    traces that match no dataset question are graded against."""
    group = parser.add_argument_group(
        "trace policy (traces that match no question; on top of the target's trace_policy:)"
    )
    group.add_argument(
        "--policy",
        type=Path,
        metavar="FILE",
        help="a YAML/JSON file: forbid, only, count, max_calls, goal",
    )
    add_repeatable(group, "--forbid", metavar="TOOL", help="a tool no trace may call (repeatable)")
    group.add_argument(
        "--max-calls", type=int, default=None, metavar="N", help="at most N tool calls a trace"
    )
    add_goal_flag(group, help="judge each trace against it")
    group.add_argument(
        "--checks",
        action="store_true",
        help="the record checks that need no expectation (record_checks, must pass), on every trace",
    )
    add_repeatable(
        group,
        "--check",
        metavar="NAME=VALUE",
        help="one record check set (max_steps=30, repeats=2, cycles=false; implies --checks)",
    )
    add_repeatable(
        group,
        "--claim",
        metavar="PATTERN=TOOL",
        help="a claim of action the answer may make and the tool that must back it (repeatable)",
    )


def _pairs(values: list[str], flag: str) -> dict[str, Any]:
    """`NAME=VALUE` flags as a mapping, each value read as YAML (`30`, `false`, `[a, b]`)."""
    import yaml

    from ..errors import InputError

    out: dict[str, Any] = {}
    for item in values:
        name, sep, value = item.rpartition("=") if flag == "--claim" else item.partition("=")
        if not sep or not name:
            raise InputError(f"{flag} takes NAME=VALUE, not {item!r}", key=flag)
        out[name] = yaml.safe_load(value) if flag == "--check" else value
    return out


def add_conversation_flags(parser: argparse.ArgumentParser, *, live: bool) -> None:
    """`--conversations` of `grade-traces` and `receive`: the traces of one conversation
    (session.id, gen_ai.conversation.id, LangGraph's thread_id) graded together."""
    group = parser.add_argument_group("conversations (several traces, one per user turn)")
    group.add_argument(
        "--conversations",
        action="store_true",
        help="grade the traces that share a conversation id (session.id, "
        "gen_ai.conversation.id, LangGraph's thread_id) as one conversation, whole and per "
        "turn, paired with a question's turns: by its id or its first user message"
        + (", once it is quiet for --conversation-quiet seconds" if live else ", at the end"),
    )
    if live:
        group.add_argument(
            "--conversation-quiet",
            type=float,
            default=30.0,
            metavar="S",
            help="a conversation closes after S seconds without a new trace (default 30)",
        )
    group.add_argument(
        "--max-conversations",
        type=int,
        default=10_000,
        metavar="N",
        help="conversations held open at most (default 10000); past it a trace is graded alone",
    )


def conversation_book_of(args: argparse.Namespace) -> object:
    """The conversation book the flags ask for; None without --conversations."""
    from ..errors import InputError
    from ..traces.conversations import ConversationBook

    if not args.conversations:
        return None
    if args.max_conversations < 1:
        raise InputError("--max-conversations must be at least 1", key="--max-conversations")
    quiet = getattr(args, "conversation_quiet", 0.0)
    if quiet < 0:
        raise InputError("--conversation-quiet must not be negative", key="--conversation-quiet")
    return ConversationBook(quiet_s=quiet, max_open=args.max_conversations)


def trace_policy_of(args: argparse.Namespace, config: object) -> object:
    """The policy the target and the flags make (falsy when none)."""
    from ..traces.policy import trace_policy

    return trace_policy(
        config,  # type: ignore[arg-type]
        args.target,
        policy_file=args.policy,
        forbid=args.forbid,
        max_calls=args.max_calls,
        goal=args.goal,
        checks=_pairs(args.check, "--check") or (True if args.checks else None),
        claims=_pairs(args.claim, "--claim"),
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tracegrade",
        description=(
            "Evaluate LangGraph agents. tracegrade runs an agent over a dataset of questions, "
            "records every tool call as an OpenTelemetry span (the ground truth of what the "
            "agent did), grades each answer with deterministic graders and LLM judges, and "
            "gates CI with the exit codes below."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log debug detail (and full tracebacks)"
    )
    parser.add_argument(
        "--version", action="version", version=f"tracegrade {_version()}", help="print the version"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in SUBCOMMANDS:
        module = importlib.import_module(f"tracegrade.cli.{name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The `tracegrade` command. Called with no `argv` (as the installed command), it ends the
    process itself once done (see `_exit`); with `argv` (tests, library callers) it returns."""
    if argv is None:  # the process is ours: a question that holds the loop for good ends it
        from ..execution.executors.watchdog import set_stuck_handler

        set_stuck_handler(_stuck)
    code = _main(argv)
    if argv is None:
        _exit(code)
    return code


def _stuck(why: str) -> None:
    """A question holds the event loop and cannot be interrupted: end the run, exit 3. What
    was committed stays in the store; `--resume` runs the rest."""
    print(
        f"tracegrade: {console_policy().text(why)}; exit 3 (the evaluation could not finish). "
        "The questions committed so far are kept: run again with --resume to finish it.",
        file=sys.stderr,
    )
    sys.stderr.flush()
    os._exit(ExitCode.INCOMPLETE)


def _exit(code: int) -> None:
    """End the process without joining threads a stuck sync tool still holds: the reports are
    written and the store closed, and a thread that never returns must not hang CI."""
    stray = [t for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive()]
    if not any(not t.daemon for t in stray):
        return
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)


def _main(argv: Sequence[str] | None = None) -> int:
    # Answers, ids and reasons reach the console: their control and bidi characters (screen
    # clears, OSC window titles and clipboard writes, U+202E) are shown as escapes.
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = PrintableStream(stdout), PrintableStream(stderr)  # type: ignore[assignment]
    try:
        return _escaped_main(argv)
    finally:
        sys.stdout, sys.stderr = stdout, stderr


def _escaped_main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        parser.error(_unrecognized(parser, args, extras))
    # The console is an exit like any other: log lines, tracebacks and error messages are
    # printed through the redaction policy (the config's, once a command has loaded it).
    use_console_policy(None)
    handler = logging.StreamHandler()
    handler.setFormatter(RedactingFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING, handlers=[handler]
    )
    if getattr(args, "handler", None) is None:
        parser.print_help()
        return ExitCode.INVALID_INPUT
    try:
        return int(args.handler(args))
    except TracegradeError as exc:
        print(f"tracegrade: error: {exc.render(console_policy().text)}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt as exc:
        print("tracegrade: interrupted", file=sys.stderr)
        return 128 + exc.signum if isinstance(exc, Interrupted) else 130
    except Exception:  # the CLI's isolation point: anything else is a bug, exit 1
        print(console_policy().text(traceback.format_exc()), end="", file=sys.stderr)
        print("tracegrade: internal error (exit 1); this is a bug", file=sys.stderr)
        return ExitCode.INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
