"""The HTML report's rows: every question as the page's script reads it, built from the
store's answers and the run's trace file (`data`), worst first, in blocks; read back from the
rows the run directory keeps (`tracegrade.rundir.kept_rows`) when they were built from the
same files, grading, options and code, else built and kept for the next page."""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...execution.executors.heap import frozen_heap
from ...redaction import DEFAULT_POLICY, RedactionPolicy, secret_env_values
from .blocks import FIRST_ROWS, ROWS_PER_BLOCK, in_blocks, json_for_script, rows_of
from .data import (
    VERDICTS,
    build_question,
    gc_paused,
    load_records,
    load_sources,
    question_verdict,
    trace_link,
)

__all__ = ["build_page_data", "page_header", "page_rows", "row_blocks"]

_HEX32 = re.compile("[0-9a-fA-F]{32}")


def _ordered(outcome: Any) -> list[tuple[int, Any, Any, str]]:
    """Every question as (run-order index, target, question, verdict), worst first as the list
    sorts by default (verdict, then composite, then run order): the first block of rows is the
    first page a person sees. Each verdict is judged here once, and the row built with it."""
    rank = {v: i for i, v in enumerate(VERDICTS)}
    found = [
        (i, t, q, question_verdict(q))
        for i, (t, q) in enumerate((t, q) for t in outcome.targets for q in t.questions)
    ]
    found.sort(key=lambda x: (rank[x[3]], 6 if x[2].composite is None else x[2].composite, x[0]))
    return found


def page_header(outcome: Any, *, links: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What the page's script reads before any question: the run, its targets and how many
    questions the blocks of rows (`page_rows`) will bring."""
    header: dict[str, Any] = {
        "run_id": outcome.run_id,
        "targets": [t.target for t in outcome.targets],
        "total": sum(len(t.questions) for t in outcome.targets),
    }
    if links:
        header["links"] = dict(links)
    return header


def page_rows(
    outcome: Any,
    *,
    runs: Mapping[str, Mapping[tuple[str, int], Any]],
    records: Mapping[str, Mapping[tuple[str, int], Any]],
    trace_url: str | None = None,
    project: str | None = None,
    redaction: RedactionPolicy = DEFAULT_POLICY,
    ordered: Sequence[tuple[int, Any, Any, str]] | None = None,
    encode: Callable[[dict[str, Any]], Any] | None = None,
) -> Iterator[list[Any]]:
    """Every question as the page's script reads it, in blocks, worst first (`ordered`: as
    `_ordered` gives, when already known); each carries `i`, its place in run order. A block
    is built only when asked for, so a page that streams them (`tracegrade serve`) shows its
    first rows before the rest are built. With `encode`, each row is encoded as soon as it is
    built and only what `encode` gives is kept: its dicts are gone before the collector runs
    again (the profile of a 5,000-question page: the collector walking each block's rows as it
    came back on was a third of the build)."""

    def entry(index: int, t: Any, q: Any, verdict: str) -> dict[str, Any]:
        link = trace_link(
            trace_url,
            trace_id=q.trace_id,
            project=project or "default",
            target=t.target,
            run_id=outcome.run_id,
        )
        built = build_question(
            q,
            stored=runs.get(t.target, {}).get((q.id, q.trial)),
            record=records.get(t.target, {}).get((q.id, q.trial)),
            trace_url=link,
            redaction=redaction,
            verdict=verdict,
            seen=seen,
        )
        built["i"] = index
        return built

    if ordered is None:
        ordered = _ordered(outcome)
    seen: dict[Any, dict[str, Any]] = {}  # grader rows by content, under this policy
    start, size = 0, FIRST_ROWS
    while start < len(ordered):
        with gc_paused():  # a block at a time: never held while a slow reader takes one
            if encode is None:
                block: list[Any] = [entry(*found) for found in ordered[start : start + size]]
            else:
                block = [encode(entry(*found)) for found in ordered[start : start + size]]
        yield block
        start, size = start + size, ROWS_PER_BLOCK


def build_page_data(outcome: Any, **sources: Any) -> dict[str, Any]:
    """The page's header and every question of every target, in run order (`sources` as for
    `page_rows`)."""
    questions = [q for block in page_rows(outcome, **sources) for q in block]
    questions.sort(key=lambda q: q["i"])
    return {**page_header(outcome), "questions": questions}


_ROW_CODE = (
    ".rows",
    ".blocks",
    ".data",
    ".grader_rows",
    ".texts",
    "..common",
    "..costs",
    "...graders.tool_usage",
    "...graders.nodes",
    "...redaction",
    "...capture.tracefile",
    "...verdicts.result",
    "...verdicts.scoring",
    "...rundir.store",
    "...rundir.annotations",
)
"""The modules whose code shapes a row: a change to any (released or not) builds rows anew."""


@functools.cache
def _row_code() -> str | None:
    from ..._version import __version__

    digest = hashlib.sha256(__version__.encode())
    for name in _ROW_CODE:
        try:
            digest.update(
                Path(str(importlib.import_module(name, __package__).__file__)).read_bytes()
            )
        except OSError:  # no source to read: nothing says the rows are this code's
            return None
    return digest.hexdigest()


def row_blocks(
    outcome: Any,
    *,
    trace_url: str | None = None,
    project: str | None = None,
    redaction: RedactionPolicy = DEFAULT_POLICY,
    streamed: bool = True,
) -> Iterator[str]:
    """The page's blocks of rows (`rows_element`), worst first, for `outcome.run_dir`'s run:
    read back from the rows kept in the run directory when they were built from the same
    files, grading, options and code (`tracegrade.rundir.kept_rows`); else built from the
    store and the trace file (`page_rows`), each row encoded once, and kept for the next
    page. Nothing is read before the first block is asked for. `streamed`: each block is
    sent as it is built (serve's run page), so the first block's records are read from their
    own lines of the trace file first (`_first_records`); a page written whole reads the
    file whole, once (the narrowed read was a twentieth of its build, for no one's wait)."""
    from ...rundir.directory import RunDirectory
    from ...rundir.kept_rows import content_stamp, keep_rows, read_rows

    # in run order (the order `_ordered` numbers them), the verdicts sorted by only when read
    keys = [json.dumps([t.target, q.id, q.trial]) for t in outcome.targets for q in t.questions]
    run, names = RunDirectory(outcome.run_dir), [t.target for t in outcome.targets]
    code, stamp = _row_code(), None
    if code is not None and run.has_store():
        options = [str(outcome.grading_id), repr(redaction), trace_url or "", project or ""]
        stamp = content_stamp(run, names, code, *options)
        kept = read_rows(run, stamp)
        if kept is not None and [k for k, _ in kept] == keys and _masked(kept, redaction):
            texts = [kept[i][1] for i, _, _, _ in _ordered(outcome)]
            yield from (rows_of(b) for b in in_blocks(texts) if b)
            return
    # The heap as it stands (the outcome; serve's runs) kept out of the collector's full
    # collections while the rows are built (the profile, in serve's process: full
    # collections walking it as each block's records were promoted, 0.38 s a build)
    with frozen_heap():
        ordered = _ordered(outcome)  # once: the first block's records and every block's order
        if streamed:
            runs, records = _first_records(outcome, names, ordered)
        else:
            runs, records = load_sources(Path(outcome.run_dir), names)
        built = [""] * len(keys)
        for block in page_rows(
            outcome,
            runs=runs,
            records=records,
            trace_url=trace_url,
            project=project,
            redaction=redaction,
            ordered=ordered,
            encode=lambda q: (q["i"], json_for_script(q)),
        ):
            for i, text in block:
                built[i] = text
            yield rows_of([text for _, text in block])
        if stamp is not None:
            keep_rows(run, stamp, list(zip(keys, built, strict=True)))


def _first_records(
    outcome: Any, names: list[str], ordered: Sequence[tuple[int, Any, Any, str]] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The store's answers, and the records of the first block's questions read from the trace
    file's lines naming their trace ids; any other record reads the file whole, once (the
    profile: reading it whole was most of the wait for the first rows)."""
    first = (_ordered(outcome) if ordered is None else ordered)[:FIRST_ROWS]
    # only an id written as itself (32 hex digits) is found by name in a line
    traces = frozenset(
        q.trace_id.lower() for _, _, q, _ in first if q.trace_id and _HEX32.fullmatch(q.trace_id)
    )
    narrowed = {
        (t.target, q.id, q.trial)
        for _, t, q, _ in first
        if q.trace_id and q.trace_id.lower() in traces
    }
    runs, some = load_sources(Path(outcome.run_dir), names, traces=traces)
    whole: list[dict[str, Any]] = []

    def record(target: str, key: tuple[str, int]) -> Any:
        # a first-block record read from its trace's lines is what the whole read gives; any
        # other (none found there, or not among them) may still be in the file
        if (target, *key) in narrowed and key in some.get(target, {}):
            return some[target][key]
        if not whole:
            whole.append(load_records(Path(outcome.run_dir), names))
        return whole[0].get(target, {}).get(key)

    return runs, {t: _Records(t, record) for t in names}


class _Records(Mapping[tuple[str, int], Any]):
    """One target's records as `page_rows` asks for them, each from `record(target, key)`."""

    def __init__(self, target: str, record: Any) -> None:
        self.target, self.record = target, record

    def get(self, key: Any, default: Any = None) -> Any:
        found = self.record(self.target, key)
        return default if found is None else found

    def __getitem__(self, key: tuple[str, int]) -> Any:
        found = self.record(self.target, key)
        if found is None:
            raise KeyError(key)
        return found

    def __iter__(self) -> Iterator[tuple[str, int]]:
        raise TypeError("the records are found one by one")

    def __len__(self) -> int:
        raise TypeError("the records are found one by one")


def _masked(kept: Sequence[tuple[str, str]], redaction: RedactionPolicy) -> bool:
    """No value the policy masks from the environment (`redaction.env`, secret-named
    variables) is in the kept rows: those values are read when the page is made and are no
    part of the stamp (a secret's digest written down could be guessed back)."""
    values = [v for v in secret_env_values(os.environ, redaction.env) if v not in redaction.allow]
    if not values:
        return True
    text = "\n".join(t for _, t in kept)
    forms = {f for v in values for f in (v, json.dumps(v)[1:-1], json_for_script(v)[1:-1])}
    return not any(f in text for f in forms)
