"""Parsing source files (YAML, JSON, JSONL) with a map from JSON pointer to line, and the
`Problem` and `Document` types. Public through `harness.inputs.sourcefile`; import from there.

A syntax error raises the caller's error class with its line: never an empty document.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import yaml

from harness.errors import DatasetError, InputError

__all__ = ["SUFFIXES", "Document", "Problem", "escape_pointer_token", "load_document", "pointer_of"]

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
        loc = self.file if self.line is None else f"{self.file}:{self.line}"
        parts = [f"{loc}:"]
        if self.question_id is not None:
            parts.append(f"question {self.question_id!r}:")
        parts.append(f"at {self.pointer or '/'}:")
        parts.append(self.message)
        text = " ".join(parts)
        return f"{text} ({self.hint})" if self.hint else text


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
    lines: dict[str, int] = field(default_factory=dict)
    """JSON pointer -> 1-based line (of the key for a mapping entry, of the item in a list)."""
    format: str = "yaml"
    """`yaml`, `json` or `jsonl`."""
    problems: list[Problem] = field(default_factory=list)
    """Problems found while parsing that do not stop it (duplicate mapping keys)."""

    def line_of(self, pointer: str) -> int | None:
        """Line of `pointer`, or of its nearest ancestor that has one; None when none has."""
        while True:
            if pointer in self.lines:
                return self.lines[pointer]
            if not pointer:
                return None
            pointer = pointer.rsplit("/", 1)[0]

    def wrapped(self, key: str) -> Document:
        """This document as the value of `key` in a new mapping (a JSONL file as `questions`)."""
        prefix = "/" + escape_pointer_token(key)
        lines = {prefix + p: n for p, n in self.lines.items()}
        lines.setdefault("", 1)
        problems = [
            Problem(p.file, p.line, prefix + p.pointer, p.message, p.question_id, p.hint)
            for p in self.problems
        ]
        return Document(self.path, {key: self.data}, lines, self.format, problems)


# ---------------------------------------------------------------------------------- parsing


# libyaml's parser when PyYAML was built with it: about 10x faster on large datasets, and its
# nodes carry the same marks, so lines are reported the same way.
_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):
    """SafeLoader without implicit timestamps: `id: 2024-01-01` stays the string it reads as."""


_Loader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for ch, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}

_MERGE_TAG = "tag:yaml.org,2002:merge"


def _parse_error(
    path: Path, error_cls: type[InputError], message: str, line: int | None, pointer: str = ""
) -> NoReturn:
    problem = Problem(str(path), line, pointer, message)
    raise error_cls(message, file=str(path), line=line, key=pointer or None, problems=[problem])


# Hostile input stays bounded. An alias names a node already written, so a few lines of YAML
# can stand for billions of values ("billion laughs"); every consumer (the line map, the
# schema, the models) walks the expanded document. Expansion is measured on the node graph
# before anything walks it, in time linear in the nodes written.
MAX_DEPTH = 100
"""Deepest nesting of mappings and lists a source file may have (JSON, JSONL and YAML alike;
aliases count at the depth they are used)."""
ALIAS_EXPANSION_MIN = 100_000
"""Nodes aliases may add to any YAML document (each use of an alias counts every node under
what it names, merges `<<:` included)."""
ALIAS_EXPANSION_RATIO = 10
"""Beyond `ALIAS_EXPANSION_MIN`, aliases may expand a document to this many times the nodes it
writes."""


class _Bounded(Exception):
    """A document past a bound: message, line, pointer."""

    def __init__(self, message: str, line: int | None, pointer: str) -> None:
        super().__init__(message)
        self.message, self.line, self.pointer = message, line, pointer


def _yaml_lines(path: Path, root: yaml.Node) -> tuple[dict[str, int], list[Problem]]:
    """The pointer -> line map and duplicate keys, walking each written node once. Raises
    `_Bounded` for a recursive alias, nesting past `MAX_DEPTH`, or aliases expanding past the
    budget."""
    lines: dict[str, int] = {"": root.start_mark.line + 1}
    problems: list[Problem] = []
    # id(node) -> (expanded size, expanded height); a node on the current path has no entry yet
    done: dict[int, tuple[int, int]] = {}
    on_path: set[int] = set()
    widest: list[tuple[int, str, int]] = []  # (size, pointer, line) of the largest alias use

    def walk(node: yaml.Node, pointer: str, line: int, depth: int, record: bool) -> tuple[int, int]:
        key = id(node)
        if key in on_path:
            raise _Bounded("recursive YAML alias: a value contains itself", line, pointer)
        if key in done:  # an alias: counted, not walked again
            size, height = done[key]
            if depth + height > MAX_DEPTH:
                raise _Bounded(f"nested deeper than {MAX_DEPTH} levels", line, pointer)
            if not widest or size > widest[0][0]:
                widest[:] = [(size, pointer, line)]
            return size, height
        if depth > MAX_DEPTH:
            raise _Bounded(f"nested deeper than {MAX_DEPTH} levels", line, pointer)
        on_path.add(key)
        size, height = 1, 0
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key_node, value_node in node.value:
                key_line = key_node.start_mark.line + 1
                if key_node.tag == _MERGE_TAG:  # merged pairs count, their lines are elsewhere
                    s, h = walk(value_node, pointer, key_line, depth + 1, False)
                    size, height = size + s, max(height, h)
                    continue
                name = str(key_node.value)
                child = f"{pointer}/{escape_pointer_token(name)}"
                if record and name in seen:
                    message = f"duplicate key {name!r} (first at line {seen[name]})"
                    problems.append(Problem(str(path), key_line, child, message))
                elif record:
                    seen[name] = key_line
                    lines[child] = key_line
                s, h = walk(value_node, child, key_line, depth + 1, record)
                size, height = size + 1 + s, max(height, h + 1)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                child = f"{pointer}/{index}"
                item_line = item.start_mark.line + 1
                if record:
                    lines[child] = item_line
                s, h = walk(item, child, item_line, depth + 1, record)
                size, height = size + s, max(height, h + 1)
        on_path.discard(key)
        done[key] = (size, height)
        return size, height

    expanded, _ = walk(root, "", lines[""], 0, True)
    written = len(done)
    allowed = max(ALIAS_EXPANSION_MIN, ALIAS_EXPANSION_RATIO * written)
    if expanded - written > ALIAS_EXPANSION_MIN and expanded > allowed:
        _, pointer, line = widest[0]
        raise _Bounded(
            f"YAML aliases expand {written:,} written nodes to {expanded:,}: more than the "
            f"{allowed:,} allowed (an alias bomb?)",
            line,
            pointer,
        )
    return lines, problems


def _load_yaml(path: Path, text: str, error_cls: type[InputError]) -> Document:
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return Document(path, None, {"": 1}, "yaml")
        lines, problems = _yaml_lines(path, root)
        data = loader.construct_document(root)
    except _Bounded as exc:
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
    finally:
        loader.dispose()
    return Document(path, data, lines, "yaml", problems)


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
                key, i = json.decoder.scanstring(self.text, i + 1)
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
    if suffix == ".json":
        return _load_json(path, text, error_cls)
    if suffix == ".jsonl":
        return _load_jsonl(path, text, error_cls)
    return _load_yaml(path, text, error_cls)
