"""Parsing source files (YAML, JSON, JSONL) with a map from JSON pointer to line, and the
`Problem` and `Document` types. Public through `tracegrade.inputs.sourcefile`; import from there.

A syntax error raises the caller's error class with its line: never an empty document.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import yaml

from ..errors import DatasetError, InputError, located
from .files import missing_file_hint, not_a_file
from .yamlbuild import (
    ALIAS_EXPANSION_MIN,
    ALIAS_EXPANSION_RATIO,
    MAX_DEPTH,
    Bounded,
    Built,
    build,
)

__all__ = [
    "ALIAS_EXPANSION_MIN",
    "ALIAS_EXPANSION_RATIO",
    "MAX_DEPTH",
    "SUFFIXES",
    "Document",
    "Problem",
    "escape_pointer_token",
    "load_document",
    "pointer_of",
]

SUFFIXES = (".yaml", ".yml", ".json", ".jsonl")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a source file, located precisely enough to fix without searching."""

    file: str
    """The file as given (path string)."""
    line: int | None
    """1-based line of the offending key or item, None when unknown."""
    pointer: str
    """JSON pointer (RFC 6901) of the offending value; "" is the whole document."""
    message: str
    """What is wrong, naming the rule it breaks."""
    question_id: str | None = None
    """The id of the question the pointer is under (`/questions/N/...`), when it has one."""
    hint: str | None = None
    """A suggestion, e.g. "did you mean 'expected_facts'?"."""

    def __str__(self) -> str:
        return self.render()

    def render(self, redact: Callable[[str], str] | None = None) -> str:
        """As printed; `redact` touches what was supplied, never the words around it."""
        return located(
            redact(self.message) if redact is not None else self.message,
            where=self.file if self.line is None else f"{self.file}:{self.line}",
            key=self.pointer or "/",
            question_id=self.question_id,
            hint=self.hint,
            redact=redact,
        )


def escape_pointer_token(token: Any) -> str:
    """One JSON-pointer token (RFC 6901: `~` -> `~0`, `/` -> `~1`)."""
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer_of(parts: Iterable[Any]) -> str:
    """The JSON pointer of a path of keys and indexes (`["questions", 0]` -> `/questions/0`)."""
    return "".join("/" + escape_pointer_token(p) for p in parts)


@dataclass
class Document:
    """A parsed source file and where each value came from."""

    path: Path
    """The file read."""
    data: Any
    """The parsed content (JSONL: a list, one item per non-blank line)."""
    known_lines: dict[str, int] | None = None
    """The line map once built (see `lines`); None until then."""
    format: str = "yaml"
    """`yaml`, `json` or `jsonl`."""
    problems: list[Problem] = field(default_factory=list)
    """Problems found while parsing that do not stop it (duplicate mapping keys)."""
    mapper: Callable[[], dict[str, int]] | None = field(default=None, repr=False, compare=False)
    """Builds the line map on first use: a valid file never needs one, and for a large file
    it costs a dozen times the file in memory."""

    @property
    def lines(self) -> dict[str, int]:
        """JSON pointer -> 1-based line (of the key for a mapping entry, of the item in a
        list)."""
        if self.known_lines is None:
            self.known_lines = self.mapper() if self.mapper is not None else {"": 1}
            self.mapper = None
        return self.known_lines

    def line_of(self, pointer: str) -> int | None:
        """Line of `pointer`, or of its nearest ancestor that has one; None when none has."""
        lines = self.lines
        while True:
            if pointer in lines:
                return lines[pointer]
            if not pointer:
                return None
            pointer = pointer.rsplit("/", 1)[0]

    def wrapped(self, key: str) -> Document:
        """This document as the value of `key` in a new mapping (a JSONL file as `questions`)."""
        prefix = "/" + escape_pointer_token(key)

        def mapper() -> dict[str, int]:
            lines = {prefix + p: n for p, n in self.lines.items()}
            lines.setdefault("", 1)
            return lines

        problems = [
            Problem(p.file, p.line, prefix + p.pointer, p.message, p.question_id, p.hint)
            for p in self.problems
        ]
        return Document(self.path, {key: self.data}, None, self.format, problems, mapper)


# ---------------------------------------------------------------------------------- parsing


# libyaml's parser when PyYAML was built with it: about 10x faster on large datasets, and its
# nodes carry the same marks, so lines are reported the same way.
_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc,valid-type]  # chosen at import time
    """SafeLoader without implicit timestamps: `id: 2024-01-01` stays the string it reads as."""


_Loader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for ch, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _parse_error(
    path: Path,
    error_cls: type[InputError],
    message: str,
    line: int | None,
    pointer: str = "",
    hint: str | None = None,
) -> NoReturn:
    problem = Problem(str(path), line, pointer, message, hint=hint)
    raise error_cls(
        message, file=str(path), line=line, key=pointer or None, hint=hint, problems=[problem]
    )


class _Bounded(Exception):
    """A JSON document past a bound: message, line, pointer."""

    def __init__(self, message: str, line: int | None, pointer: str) -> None:
        super().__init__(message)
        self.message, self.line, self.pointer = message, line, pointer


def _build_yaml(text: str, record_lines: bool) -> Built:
    loader = _Loader(text)
    try:
        return build(loader, record_lines=record_lines)
    finally:
        loader.dispose()


def _load_yaml(path: Path, text: str, error_cls: type[InputError]) -> Document:
    try:
        try:
            built = _build_yaml(text, record_lines=False)
            if built.duplicates:  # name each with its pointer and both lines
                built = _build_yaml(text, record_lines=True)
        except Bounded:  # locate it: the same parse again, recording pointers
            built = _build_yaml(text, record_lines=True)
    except Bounded as exc:
        _parse_error(path, error_cls, exc.message, exc.line, exc.pointer)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        detail = exc.problem or "invalid YAML"
        if exc.context:
            where = exc.context_mark
            started = f" (line {where.line + 1})" if where is not None else ""
            detail = f"{exc.context}{started}: {detail}"
        _parse_error(path, error_cls, f"YAML syntax error: {detail}", line)
    except yaml.YAMLError as exc:
        _parse_error(path, error_cls, f"YAML syntax error: {exc}", None)
    problems = [
        Problem(str(path), line, pointer, f"duplicate key {key!r} (first at line {first})")
        for pointer, line, key, first in built.duplicates
    ]
    if built.lines is not None:
        return Document(path, built.data, built.lines, "yaml", problems)

    def mapper() -> dict[str, int]:  # the file again: keeping its text costs as much
        again = path.read_text(encoding="utf-8-sig")
        lines = _build_yaml(again, record_lines=True).lines
        return lines if lines is not None else {"": 1}

    del text
    return Document(path, built.data, None, "yaml", problems, mapper)


class _JsonLines:
    """Walks JSON text once more (after json.loads accepted it) to map pointers to lines."""

    _decoder = json.JSONDecoder()

    def __init__(self, path: Path, text: str, base_line: int = 0) -> None:
        self.path, self.text, self.base = path, text, base_line
        self.newlines = [i for i, ch in enumerate(text) if ch == "\n"]
        self.lines: dict[str, int] = {}
        self.problems: list[Problem] = []

    def line_at(self, index: int) -> int:
        return bisect.bisect_left(self.newlines, index) + 1 + self.base

    def skip(self, i: int) -> int:
        while i < len(self.text) and self.text[i] in " \t\r\n":
            i += 1
        return i

    def value(self, i: int, pointer: str, depth: int = 0) -> int:
        i = self.skip(i)
        ch = self.text[i]
        if ch in "{[" and depth >= MAX_DEPTH:
            raise _Bounded(f"nested deeper than {MAX_DEPTH} levels", self.line_at(i), pointer)
        if ch == "{":
            i = self.skip(i + 1)
            seen: dict[str, int] = {}
            while self.text[i] != "}":
                line = self.line_at(i)
                key, i = json.decoder.scanstring(self.text, i + 1)  # type: ignore[attr-defined]
                child = f"{pointer}/{escape_pointer_token(key)}"
                if key in seen:
                    message = f"duplicate key {key!r} (first at line {seen[key]})"
                    self.problems.append(Problem(str(self.path), line, child, message))
                else:
                    seen[key] = self.lines[child] = line
                i = self.skip(self.skip(i) + 1)  # past ':'
                i = self.skip(self.value(i, child, depth + 1))
                if self.text[i] == ",":
                    i = self.skip(i + 1)
            return i + 1
        if ch == "[":
            i = self.skip(i + 1)
            index = 0
            while self.text[i] != "]":
                child = f"{pointer}/{index}"
                self.lines[child] = self.line_at(i)
                i = self.skip(self.value(i, child, depth + 1))
                if self.text[i] == ",":
                    i = self.skip(i + 1)
                index += 1
            return i + 1
        _, end = self._decoder.raw_decode(self.text, i)
        return end


_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[{]|[\]}]|\n')


def _too_deep_line(text: str, base_line: int = 0) -> int | None:
    """The line where `text` (JSON) first nests past `MAX_DEPTH`, without recursion."""
    depth, line = 0, base_line + 1
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token == "\n":
            line += 1
        elif token in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return line
        elif token in "]}":
            depth -= 1
        else:
            line += token.count("\n")
    return None


def _json_loads(path: Path, text: str, error_cls: type[InputError], base_line: int = 0) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        _parse_error(path, error_cls, f"JSON syntax error: {exc.msg}", exc.lineno + base_line)
    except RecursionError:  # the C decoder nests on the stack; past it, name the line
        message = f"nested deeper than {MAX_DEPTH} levels"
        _parse_error(path, error_cls, message, _too_deep_line(text, base_line))


def _map_json(
    path: Path, text: str, error_cls: type[InputError], mapper: _JsonLines, i: int, pointer: str
) -> None:
    try:
        mapper.value(i, pointer)
    except _Bounded as exc:
        _parse_error(path, error_cls, exc.message, exc.line, exc.pointer)


def _load_json(path: Path, text: str, error_cls: type[InputError]) -> Document:
    data = _json_loads(path, text, error_cls)
    mapper = _JsonLines(path, text)
    start = mapper.skip(0)
    mapper.lines[""] = mapper.line_at(start)
    _map_json(path, text, error_cls, mapper, start, "")
    return Document(path, data, mapper.lines, "json", mapper.problems)


def _load_jsonl(path: Path, text: str, error_cls: type[InputError]) -> Document:
    rows: list[Any] = []
    lines: dict[str, int] = {"": 1}
    problems: list[Problem] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        row = _json_loads(path, raw, error_cls, base_line=number - 1)
        mapper = _JsonLines(path, raw, base_line=number - 1)
        _map_json(path, raw, error_cls, mapper, 0, f"/{len(rows)}")
        lines[f"/{len(rows)}"] = number
        lines.update(mapper.lines)
        problems.extend(mapper.problems)
        rows.append(row)
    return Document(path, rows, lines, "jsonl", problems)


def load_document(path: str | Path, *, error_cls: type[InputError] = DatasetError) -> Document:
    """Parse a YAML (`.yaml`/`.yml`), JSON or JSONL file with a pointer -> line map.

    A missing file, an unknown extension or a syntax error raises `error_cls` with the line.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        _parse_error(
            path,
            error_cls,
            f"unsupported file type {suffix or '(none)'!r}: use .yaml, .yml, .json or .jsonl",
            None,
        )
    problem = not_a_file(path)
    if problem is not None:  # a FIFO would block the read, /dev/zero would never end it
        _parse_error(path, error_cls, problem, None, hint=missing_file_hint(path))
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        _parse_error(path, error_cls, "file not found", None)
    except IsADirectoryError:
        _parse_error(path, error_cls, "is a directory, not a file", None)
    except OSError as exc:
        _parse_error(path, error_cls, f"cannot read file: {exc.strerror or exc}", None)
    try:
        text = raw.decode("utf-8-sig")  # a BOM is not content
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        message = f"not UTF-8: byte 0x{raw[exc.start]:02x} at offset {exc.start} ({exc.reason})"
        _parse_error(path, error_cls, message, line)
    del raw  # the text alone from here (a large file is otherwise held twice)
    if suffix == ".json":
        return _without_extensions(_load_json(path, text, error_cls))
    if suffix == ".jsonl":
        return _load_jsonl(path, text, error_cls)
    return _without_extensions(_load_yaml(path, text, error_cls))


def _without_extensions(doc: Document) -> Document:
    """The document without its top-level `x-` keys: extension fields a user keeps for
    themselves (YAML anchors to merge with `<<: *name`, notes for other tools), as
    Compose files allow. Nothing reads them; the schemas never see them."""
    if isinstance(doc.data, dict):
        for key in [k for k in doc.data if isinstance(k, str) and k.startswith("x-")]:
            del doc.data[key]
    return doc
