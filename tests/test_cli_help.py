"""Every command's `--help` and every flag's definition against a snapshot (regenerate with
UPDATE_GOLDEN=1 after a deliberate change, and read the diff).

The subcommands build their parsers from shared pieces (tracegrade.cli._arguments): a change to
one piece must not move another command's flags, defaults, help text or handler unnoticed."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tracegrade.cli import build_parser, main

GOLDEN = Path(__file__).resolve().parent / "golden" / "cli_help.txt"


def _parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ("tracegrade",)
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """The parser of every command and action (`dataset promote`, `judges validate`), in the
    order `--help` lists them."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


def _name(value: object) -> str:
    return getattr(value, "__qualname__", None) or repr(value)


def _definition(action: argparse.Action) -> str:
    """What a flag is, beyond its help text: what it stores, from what, by default."""
    return (
        f"  {', '.join(action.option_strings) or action.dest}: {type(action).__name__} "
        f"dest={action.dest} default={action.default!r} type={_name(action.type)} "
        f"nargs={action.nargs!r} const={action.const!r} choices={action.choices!r} "
        f"required={action.required} metavar={action.metavar!r}"
    )


def _snapshot() -> str:
    out = []
    for path, parser in _parsers(build_parser()):
        out.append(f"=== {' '.join(path)} --help")
        out.append(parser.format_help())
        out.append(f"--- {' '.join(path)}: flags")
        out += [
            _definition(a) for a in parser._actions if not isinstance(a, argparse._SubParsersAction)
        ]
        handler = parser._defaults.get("handler")
        out.append(f"  handler: {handler.__module__}.{handler.__qualname__}" if handler else "")
    return "\n".join(out) + "\n"


def test_every_command_help_and_flag_is_as_the_snapshot(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps to the terminal
    text = _snapshot()
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8")


def test_the_snapshot_covers_every_command_and_action():
    names = {" ".join(path) for path, _ in _parsers(build_parser())}
    golden = GOLDEN.read_text(encoding="utf-8")
    for name in names:
        assert f"=== {name} --help\n" in golden
    # every subcommand, and the actions of the commands that have them
    assert {"tracegrade run", "tracegrade receive", "tracegrade dataset promote"} <= names
    assert {"tracegrade judges validate", "tracegrade rubrics benchmark"} <= names


@pytest.mark.parametrize("command", ["show", "receive", "judges"])
def test_help_through_main_prints_the_parsers_text_and_exits_0(command, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    parser = dict(_parsers(build_parser()))[("tracegrade", command)]
    assert capsys.readouterr().out == parser.format_help()
