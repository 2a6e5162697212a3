"""HTTP headers given on the command line as repeatable `K=V` flags (`export --header`,
`receive --annotate-header`, `grade-traces --header`): one reader, so each flag takes the same
form and fails the same way."""

from __future__ import annotations

from typing import Any

from ...errors import InputError
from .._arguments import add_repeatable


def add_header_flag(
    parser: Any, flag: str = "--header", *, metavar: str = "K=V", help: str
) -> None:
    """A repeatable `K=V` header flag (`headers_of` reads it, its error naming `metavar`)."""
    add_repeatable(parser, flag, metavar=metavar, help=help)


def headers_of(items: list[str], *, flag: str, form: str = "K=V") -> dict[str, str]:
    """The `K=V` items of `flag` as headers, key and value stripped; an item without `=` or
    with an empty key is invalid input naming the flag (exit 4). `form` is the flag's metavar,
    as its error says it."""
    headers: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"{flag} {item!r} is not {form}", key=flag)
        headers[key.strip()] = value.strip()
    return headers
