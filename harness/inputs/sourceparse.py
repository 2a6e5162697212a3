"""Parsing source files (YAML, JSON, JSONL) with a map from JSON pointer to line, and the
`Problem` and `Document` types. Public through `harness.inputs.sourcefile`; import from there.

A syntax error raises the caller's error class with its line: never an empty document.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


def _parse_error(path: Path, error_cls: type[InputError], message: str, line: int | None) -> None:
    problem = Problem(str(path), line, "", message)
    raise error_cls(message, file=str(path), line=line, problems=[problem])


def _yaml_lines(path: Path, root: yaml.Node) -> tuple[dict[str, int], list[Problem]]:
    lines: dict[str, int] = {"": root.start_mark.line + 1}
    problems: list[Problem] = []
    on_path: set[int] = set()  # guards recursive aliases

    def walk(node: yaml.Node, pointer: str) -> None:
        if id(node) in on_path:
            return
        on_path.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key_node, value_node in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue
                key = str(key_node.value)
                line = key_node.start_mark.line + 1
                child = f"{pointer}/{escape_pointer_token(key)}"
                if key in seen:
                    problems.append(
                        Problem(
                            str(path),
                            line,
                            child,
                            f"duplicate key {key!r} (first at line {seen[key]})",
                        )
                    )
                else:
                    seen[key] = line
                    lines[child] = line
                walk(value_node, child)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                child = f"{pointer}/{index}"
                lines[child] = item.start_mark.line + 1
                walk(item, child)
        on_path.discard(id(node))

    walk(root, "")
    return lines, problems


def _load_yaml(path: Path, text: str, error_cls: type[InputError]) -> Document:
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return Document(path, None, {"": 1}, "yaml")
        lines, problems = _yaml_lines(path, root)
        data = loader.construct_document(root)
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

    def value(self, i: int, pointer: str) -> int:
        i = self.skip(i)
        ch = self.text[i]
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
                i = self.skip(self.value(i, child))
                if self.text[i] == ",":
                    i = self.skip(i + 1)
            return i + 1
        if ch == "[":
            i = self.skip(i + 1)
            index = 0
            while self.text[i] != "]":
                child = f"{pointer}/{index}"
                self.lines[child] = self.line_at(i)
                i = self.skip(self.value(i, child))
                if self.text[i] == ",":
                    i = self.skip(i + 1)
                index += 1
            return i + 1
        _, end = self._decoder.raw_decode(self.text, i)
        return end


def _load_json(path: Path, text: str, error_cls: type[InputError]) -> Document:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        _parse_error(path, error_cls, f"JSON syntax error: {exc.msg}", exc.lineno)
    mapper = _JsonLines(path, text)
    start = mapper.skip(0)
    mapper.lines[""] = mapper.line_at(start)
    mapper.value(start, "")
    return Document(path, data, mapper.lines, "json", mapper.problems)


def _load_jsonl(path: Path, text: str, error_cls: type[InputError]) -> Document:
    rows: list[Any] = []
    lines: dict[str, int] = {"": 1}
    problems: list[Problem] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except json.JSONDecodeError as exc:
            _parse_error(path, error_cls, f"JSON syntax error: {exc.msg}", number)
        mapper = _JsonLines(path, raw, base_line=number - 1)
        mapper.value(0, f"/{len(rows)}")
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
        text = path.read_text(encoding="utf-8-sig")  # a BOM is not content
    except FileNotFoundError:
        _parse_error(path, error_cls, "file not found", None)
    except (OSError, UnicodeDecodeError) as exc:
        _parse_error(path, error_cls, f"cannot read file: {exc}", None)
    if suffix == ".json":
        return _load_json(path, text, error_cls)
    if suffix == ".jsonl":
        return _load_jsonl(path, text, error_cls)
    return _load_yaml(path, text, error_cls)
