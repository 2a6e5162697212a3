"""Building a YAML document's data straight from the parser's events, with hostile input
bounded, and optionally the pointer -> line map. Used by `tracegrade.inputs.sourceparse`.

Why events and not PyYAML's node graph: the graph of a file costs about 30 times the file in
memory (a node and two marks per value), and every consumer walked it again. Here each value is
built as its events arrive, in one pass, and the line map (another dozen times the file) is
only built when a problem needs a line. The data is what PyYAML's safe loader builds: the same
scalar resolution and constructors, aliases sharing one object, merge keys `<<` with explicit
keys winning.

Bounds, checked as the events arrive (so a bomb is refused before it is expanded anywhere):
- `MAX_DEPTH` levels of nesting (aliases count at the depth they are used);
- aliases may add at most `ALIAS_EXPANSION_MIN` values to a document, or expand it to
  `ALIAS_EXPANSION_RATIO` times the values it writes when that is more;
- an alias to a value still being built (a recursive alias) is refused.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = [
    "ALIAS_EXPANSION_MIN",
    "ALIAS_EXPANSION_RATIO",
    "MAX_DEPTH",
    "Bounded",
    "Built",
    "build",
]

MAX_DEPTH = 100
"""Deepest nesting of mappings and lists a source file may have (JSON, JSONL and YAML alike;
aliases count at the depth they are used)."""
ALIAS_EXPANSION_MIN = 100_000
"""Values aliases may add to any YAML document (each use of an alias counts every value under
what it names, merges `<<:` included)."""
ALIAS_EXPANSION_RATIO = 10
"""Beyond `ALIAS_EXPANSION_MIN`, aliases may expand a document to this many times the values it
writes."""

_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MERGE_TAG = "tag:yaml.org,2002:merge"


class Bounded(Exception):
    """A document past a bound, or a shape the safe loader refuses: message, line, pointer."""

    def __init__(self, message: str, line: int | None, pointer: str) -> None:
        super().__init__(message)
        self.message, self.line, self.pointer = message, line, pointer


class Built:
    """What `build` returns."""

    __slots__ = ("data", "duplicates", "lines")

    def __init__(self, data: Any, lines: dict[str, int] | None, duplicates: list) -> None:
        self.data = data
        self.lines = lines
        """JSON pointer -> line; None when not recorded."""
        self.duplicates = duplicates
        """(pointer, line, key, first line) of each duplicate mapping key (pointer and first
        line only when lines were recorded)."""


def _escape(token: Any) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


class _Frame:
    __slots__ = (
        "anchor",
        "explicit",
        "height",
        "items",
        "key",
        "key_line",
        "key_raw",
        "line",
        "merges",
        "pointer",
        "seen",
        "size",
        "wants_key",
    )

    def __init__(self, mapping: bool, anchor: str | None, pointer: str, line: int) -> None:
        self.anchor = anchor
        self.pointer = pointer
        self.line = line
        self.size = 1
        self.height = 0
        self.items: Any = {} if mapping else []
        self.explicit = mapping
        self.wants_key = mapping
        self.key: Any = None
        self.key_raw = ""
        self.key_line = 0
        self.seen: dict[Any, int] | None = {} if mapping else None
        self.merges: list | None = None


def build(loader: Any, *, record_lines: bool) -> Built:
    """Consume a single-document YAML stream from `loader` (a PyYAML loader) and build its
    data. Raises `Bounded` past a bound, `yaml.YAMLError` on a syntax error."""
    lines: dict[str, int] | None = {} if record_lines else None
    duplicates: list = []
    anchors: dict[str, tuple[Any, int, int]] = {}  # anchor -> (value, size, height)
    open_anchors: set[str] = set()
    stack: list[_Frame] = []
    written = 0
    expanded_extra = 0  # values aliases add beyond the ones written
    root: list[Any] = []
    constructors = loader.yaml_constructors
    undefined = constructors[None]
    resolve = loader.resolve

    def child_pointer(frame: _Frame | None) -> str:
        if frame is None or lines is None:  # without lines, errors are located by a rerun
            return ""
        if frame.explicit:
            return f"{frame.pointer}/{_escape(frame.key_raw)}"
        return f"{frame.pointer}/{len(frame.items)}"

    def add(value: Any, size: int, height: int, line: int, is_key_event: bool, raw: str) -> None:
        """Hand a finished value to the enclosing frame (or the document)."""
        if not stack:
            root.append(value)
            return
        frame = stack[-1]
        if frame.explicit and frame.wants_key:
            if not is_key_event:
                raise Bounded(
                    "a mapping key must be a plain value, not a mapping or list",
                    line,
                    frame.pointer,
                )
            frame.key, frame.key_raw, frame.key_line = value, raw, line
            frame.wants_key = False
            return
        frame.size += size
        frame.height = max(frame.height, height + 1)
        if frame.explicit:
            key = frame.key
            frame.wants_key = True
            if key is _MERGE:
                merged = value if isinstance(value, list) else [value]
                if not all(isinstance(m, dict) for m in merged):
                    raise Bounded(
                        "a merge key `<<` takes a mapping or a list of mappings",
                        frame.key_line,
                        frame.pointer,
                    )
                frame.merges = (frame.merges or []) + merged
                return
            try:
                first = frame.seen.get(key)  # type: ignore[union-attr]
            except TypeError:
                raise Bounded(
                    "a mapping key must be a plain value", frame.key_line, frame.pointer
                ) from None
            if first is not None:
                pointer = f"{frame.pointer}/{_escape(frame.key_raw)}" if record_lines else ""
                duplicates.append((pointer, frame.key_line, frame.key_raw, first))
            else:
                frame.seen[key] = frame.key_line  # type: ignore[index]
            frame.items[key] = value
        else:
            frame.items.append(value)

    def note_line(line: int) -> None:
        if lines is None or not stack:
            return
        frame = stack[-1]
        if frame.explicit:
            if not frame.wants_key:  # a value: its line is its key's
                pointer = f"{frame.pointer}/{_escape(frame.key_raw)}"
                if frame.key is not _MERGE:
                    lines.setdefault(pointer, frame.key_line)
        else:
            lines[f"{frame.pointer}/{len(frame.items)}"] = line

    while True:
        event = loader.get_event()
        kind = type(event)
        if kind is yaml.StreamStartEvent or kind is yaml.DocumentStartEvent:
            continue
        if kind is yaml.DocumentEndEvent:
            if not loader.check_event(yaml.StreamEndEvent):
                following = loader.peek_event()
                mark = following.start_mark
                raise Bounded(
                    "expected a single document, found another", mark.line + 1 if mark else None, ""
                )
            continue
        if kind is yaml.StreamEndEvent:
            break
        line = event.start_mark.line + 1
        is_key = bool(stack) and stack[-1].explicit and stack[-1].wants_key
        if len(stack) >= MAX_DEPTH and kind in (yaml.MappingStartEvent, yaml.SequenceStartEvent):
            raise Bounded(f"nested deeper than {MAX_DEPTH} levels", line, child_pointer(stack[-1]))
        if kind is yaml.ScalarEvent:
            tag = event.tag
            if tag is None or tag == "!":
                tag = resolve(yaml.ScalarNode, event.value, event.implicit)
            if is_key and tag == _MERGE_TAG:
                stack[-1].key, stack[-1].key_raw = _MERGE, "<<"
                stack[-1].key_line, stack[-1].wants_key = line, False
                continue
            node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
            value = constructors.get(tag, undefined)(loader, node)
            written += 1
            if not is_key:
                note_line(line)
            if event.anchor is not None:
                anchors[event.anchor] = (value, 1, 0)
            add(value, 1, 0, line, is_key, event.value)
        elif kind is yaml.AliasEvent:
            name = event.anchor
            pointer = child_pointer(stack[-1] if stack else None)
            if name in open_anchors:
                raise Bounded("recursive YAML alias: a value contains itself", line, pointer)
            if name not in anchors:
                raise Bounded(f"found undefined alias {name!r}", line, pointer)
            value, size, height = anchors[name]
            if len(stack) + height > MAX_DEPTH:
                raise Bounded(f"nested deeper than {MAX_DEPTH} levels", line, pointer)
            if is_key and isinstance(value, dict | list):
                raise Bounded("a mapping key must be a plain value", line, pointer)
            expanded_extra += size
            if expanded_extra > ALIAS_EXPANSION_MIN and expanded_extra > (
                ALIAS_EXPANSION_RATIO - 1
            ) * max(written, 1):
                raise Bounded(
                    f"YAML aliases expand the document past the bound: {written:,} values "
                    f"written, {expanded_extra:,} more through aliases (at most "
                    f"{ALIAS_EXPANSION_MIN:,}, or {ALIAS_EXPANSION_RATIO}x the values written; "
                    "an alias bomb?)",
                    line,
                    pointer,
                )
            if not is_key:
                note_line(line)
            add(value, size, height, line, is_key, str(value))
        elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
            mapping = kind is yaml.MappingStartEvent
            if event.tag not in (None, "!", _MAP_TAG if mapping else _SEQ_TAG):
                raise Bounded(f"unsupported tag {event.tag!r}", line, "")
            if is_key:
                raise Bounded(
                    "a mapping key must be a plain value, not a mapping or list",
                    line,
                    stack[-1].pointer,
                )
            note_line(line)
            pointer = child_pointer(stack[-1] if stack else None)
            if lines is not None and not stack:
                lines[""] = line
            stack.append(_Frame(mapping, event.anchor, pointer, line))
            written += 1
            if event.anchor is not None:
                open_anchors.add(event.anchor)
        elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
            frame = stack.pop()
            value = frame.items
            if frame.merges:
                merged: dict = {}
                for source in frame.merges:  # sizes were counted as the values arrived
                    for key, item in source.items():
                        merged.setdefault(key, item)
                merged.update(value)
                value = merged
            if frame.anchor is not None:
                open_anchors.discard(frame.anchor)
                anchors[frame.anchor] = (value, frame.size, frame.height)
            add(value, frame.size, frame.height, frame.line, False, "")
    if lines is not None:
        lines.setdefault("", 1)
    return Built(root[0] if root else None, lines, duplicates)


class _MergeKey:
    """Marks the pending key of a frame as `<<` (a merge, not a key of the data)."""

    def __repr__(self) -> str:
        return "<<"


_MERGE = _MergeKey()
