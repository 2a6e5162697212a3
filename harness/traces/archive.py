"""Agent traces from files and backends: spans grouped by trace, each trace read by its dialect,
and paired with the dataset's questions.

Pairing, in order: an explicit question id attribute on the trace (`tracegrade.question.id`,
`agentevals.eval.case.id`), then `gen_ai.conversation.id` (or OpenInference's `session.id`)
equal to a question id, then the first user message equal to a question's input, then equal
once both are normalised (case, whitespace, punctuation at the ends). Each pair says how it was
made; a trace that matches nothing is listed as unmatched, never graded against a guess.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, NothingToRunError
from .dialects import AgentTrace, agent_trace
from .spans import ReadProblems, Span, files_under, read_spans

__all__ = [
    "MAX_SPANS_PER_TRACE",
    "Pair",
    "Pairer",
    "Pairing",
    "TraceSet",
    "keep_window",
    "pair_traces",
    "parse_time",
    "read_trace_files",
    "traces_of_spans",
]

MAX_SPANS_PER_TRACE = 100_000
"""A trace with more spans than this is dropped whole (counted and reported): no agent run
makes that many, and holding them would make memory grow with one hostile trace."""


@dataclass(slots=True)
class TraceSet:
    """The agent traces read, and what was left out (counted, described)."""

    traces: list[AgentTrace] = field(default_factory=list)
    problems: ReadProblems = field(default_factory=ReadProblems)
    spans: int = 0
    not_agent: int = 0
    """Traces with no agent spans (HTTP handlers, database calls...): not graded."""
    too_large: list[str] = field(default_factory=list)
    outside_window: int = 0

    def notes(self) -> list[str]:
        out = [f"read {self.spans} span(s) in {len(self.traces) + self.not_agent} trace(s)"]
        if self.not_agent:
            out.append(f"{self.not_agent} trace(s) hold no agent spans; not graded")
        if self.too_large:
            out.append(
                f"{len(self.too_large)} trace(s) dropped for holding more than "
                f"{MAX_SPANS_PER_TRACE} spans (an agent trace among them leaves the run "
                f"incomplete): {', '.join(self.too_large[:5])}"
            )
        if self.outside_window:
            out.append(f"{self.outside_window} trace(s) outside --since/--until; not graded")
        if self.problems.skipped_lines:
            out.append(f"{self.problems.skipped_lines} unreadable line(s) skipped")
            out += self.problems.details[:10]
        return out


def traces_of_spans(spans: Iterable[Span], into: TraceSet | None = None) -> TraceSet:
    """Group spans by trace id and read each trace's agent run."""
    result = into if into is not None else TraceSet()
    grouped: dict[str, list[Span]] = {}
    counts: dict[str, int] = {}
    for span in spans:
        result.spans += 1
        n = counts[span.trace_id] = counts.get(span.trace_id, 0) + 1
        if n > MAX_SPANS_PER_TRACE:
            if span.trace_id in grouped:
                del grouped[span.trace_id]
                result.too_large.append(span.trace_id)
            continue
        grouped.setdefault(span.trace_id, []).append(span)
    for spans_of_trace in grouped.values():
        trace = agent_trace(spans_of_trace)
        if trace is None:
            result.not_agent += 1
        else:
            result.traces.append(trace)
    result.traces.sort(key=lambda t: (t.start_ns, t.trace_id))
    return result


def read_trace_files(paths: Sequence[Path | str]) -> TraceSet:
    """Every agent trace in the files (directories: the trace files under them)."""
    files = files_under(paths)
    result = TraceSet()

    def all_spans() -> Iterator[Span]:
        for path in files:
            yield from read_spans(path, result.problems)

    traces_of_spans(all_spans(), result)
    return result


# -- pairing ------------------------------------------------------------------------------
@dataclass(slots=True)
class Pair:
    question: Any
    trace: AgentTrace
    how: str
    """question-id, conversation-id, input (exact) or input (normalised)."""


@dataclass(slots=True)
class Pairing:
    pairs: list[Pair]
    unmatched: list[AgentTrace]
    ambiguous: list[tuple[AgentTrace, list[str]]]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.pairs:
            out[p.how] = out.get(p.how, 0) + 1
        return out


_SPACE = re.compile(r"\s+")
_EDGE = re.compile(r"^[\W_]+|[\W_]+$")


def normalise(text: str) -> str:
    """Case, Unicode form, runs of whitespace and punctuation at the ends do not count."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return _EDGE.sub("", _SPACE.sub(" ", text).strip())


def _conversation_question(conversation_id: str, ids: Collection[str]) -> str | None:
    if conversation_id in ids:
        return conversation_id
    # tracegrade's own: <run>/<target>/<question>/<trial>
    parts = conversation_id.split("/")
    if len(parts) >= 4 and "/".join(parts[2:-1]) in ids:
        return "/".join(parts[2:-1])
    return None


class Pairer:
    """The dataset's questions indexed once (by id, exact input, normalised input), so each
    trace is paired in constant time however large the dataset (the receiver pairs one trace
    at a time)."""

    def __init__(self, questions: Sequence[Any]) -> None:
        self.by_id = {str(q.id): q for q in questions}
        self.exact: dict[str, list[Any]] = {}
        self.loose: dict[str, list[Any]] = {}
        for q in questions:
            text = q.flattened_input() if hasattr(q, "flattened_input") else str(q.input)
            first = _first_user(q) or text
            self.exact.setdefault(first, []).append(q)
            self.loose.setdefault(normalise(first), []).append(q)

    def pair(self, trace: AgentTrace) -> Pair | list[str] | None:
        """The pair, the question ids an ambiguous input matches, or None (unmatched)."""
        by_id = self.by_id
        if trace.question_id is not None:
            if trace.question_id in by_id:
                return Pair(by_id[trace.question_id], trace, "question-id")
            return None  # it names a question this dataset does not have
        if trace.conversation_id is not None:
            qid = _conversation_question(trace.conversation_id, by_id.keys())
            if qid is not None:
                return Pair(by_id[qid], trace, "conversation-id")
        text = trace.user_message
        if text is None:
            return None
        for how, table, key in (
            ("input (exact)", self.exact, text),
            ("input (normalised)", self.loose, normalise(text)),
        ):
            found = table.get(key)
            if found:
                if len(found) > 1:
                    return [str(q.id) for q in found]
                return Pair(found[0], trace, how)
        return None


def pair_traces(traces: Sequence[AgentTrace], questions: Sequence[Any] | Pairer) -> Pairing:
    pairer = questions if isinstance(questions, Pairer) else Pairer(questions)
    pairs: list[Pair] = []
    unmatched: list[AgentTrace] = []
    ambiguous: list[tuple[AgentTrace, list[str]]] = []
    for trace in traces:
        found = pairer.pair(trace)
        if isinstance(found, Pair):
            pairs.append(found)
        elif isinstance(found, list):
            ambiguous.append((trace, found))
        else:
            unmatched.append(trace)
    return Pairing(pairs, unmatched, ambiguous)


def _first_user(question: Any) -> str | None:
    try:
        messages = question.input_messages()
    except Exception:
        return None
    for m in messages:
        if m.get("role") == "user":
            content = m.get("content")
            return content if isinstance(content, str) else None
    return None


def parse_time(text: str | None, *, key: str) -> int | None:
    """An ISO 8601 time (UTC when it names no zone) in Unix nanoseconds; None for None."""
    if text is None:
        return None
    from datetime import UTC, datetime

    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(
            f"{text!r} is not an ISO 8601 time", key=key, hint="for example 2026-12-01T09:30:00"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1_000_000_000)


def keep_window(traces: TraceSet, *, since_ns: int | None, until_ns: int | None) -> None:
    """Keep the traces that started in [since, until); the others are counted in the notes."""
    if since_ns is None and until_ns is None:
        return
    kept = [
        t
        for t in traces.traces
        if (since_ns is None or t.start_ns >= since_ns)
        and (until_ns is None or t.start_ns < until_ns)
    ]
    traces.outside_window += len(traces.traces) - len(kept)
    traces.traces = kept


def require_traces(traces: TraceSet, where: Sequence[Path | str]) -> None:
    """Nothing to grade (exit 5) when the files hold no agent trace (in the window)."""
    if not traces.traces:
        raise NothingToRunError(
            f"no agent trace in {', '.join(map(str, where))} (" + "; ".join(traces.notes()) + ")",
            hint="the spans need a tracegrade, OpenInference or OTel GenAI agent span",
        )
