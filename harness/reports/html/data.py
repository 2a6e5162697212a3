"""What the HTML report shows, gathered from a run: the outcome's scores and verdicts, the
store's question rows (input messages, answer) and the run's trace file (the tool calls).

Everything shown passes the run's redaction policy (`tracegrade.redaction`, the config's
`redaction:` block) again on the way out, and tool results are cut, so the page holds no more than the store and the trace file already hold.
The per-call `expected_tools` marks come from the same parsing and matching the
`tool_usage_grader` uses, on the same record, so a mark never disagrees with the grader.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...graders.nodes import node_of, node_steps, shown_path
from ...graders.tool_usage import (
    ATTEMPTED_OUTCOMES,
    EXECUTED_OUTCOMES,
    ExpectationError,
    ToolUsageGrader,
    args_match,
    parse_expectations,
)
from ...records import ToolCall, ToolRecord
from ...redaction import DEFAULT_POLICY, DeferredScan, RedactionPolicy, Scrubber
from ...verdicts.result import QuestionAnswer, QuestionResult
from ..common import outcome_line
from ..costs import question_cells
from .grader_rows import GraderRows, grader_row
from .texts import IN_TRACE, TEXT_CHARS, cut
from .texts import shown_text as _text

__all__ = [
    "RESULT_CHARS",
    "VERDICTS",
    "build_question",
    "gc_paused",
    "load_records",
    "load_sources",
    "question_verdict",
    "trace_link",
]

RESULT_CHARS = 400
"""A tool result is cut to this many characters on the page (the trace file keeps it whole)."""
ARGUMENT_CHARS = 2_000
"""A tool argument's string value is cut to this many characters on the page."""
ARGUMENTS_CHARS = 20_000
"""One call's arguments as JSON beyond this are replaced by a note (many or deep values)."""

VERDICTS = ("errored", "degraded", "failed", "review", "passed")
"""A question's verdict on the page, worst first."""


def question_verdict(q: QuestionResult) -> str:
    """errored (the agent failed), degraded (a grader failed), failed (a grader or required
    check did not pass), review (a required check left for a person), else passed."""
    if q.errored:
        return "errored"
    if q.degraded:
        return "degraded"
    if q.unmet or q.ended_early or q.critical_failures or q.required_check_failures:
        return "failed"
    if q.required_check_reviews:
        return "review"
    return "passed"


def trace_link(template: str | None, *, trace_id: str | None, **fields: Any) -> str | None:
    """The trace's URL from `report.trace_url` (`{trace_id}`, `{project}`, `{target}`,
    `{run_id}`); None without a template or a trace id. Only http(s) links are made."""
    if not template or not trace_id:
        return None
    try:
        url = template.format(trace_id=trace_id, **fields)
    except (KeyError, IndexError, ValueError):
        return None
    return url if url.startswith(("http://", "https://")) else None


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector held off while page data is built: the build makes
    hundreds of thousands of small dicts and lists and no cycles, and each of the collector's
    passes over them all (the run's outcome is live) was a fifth of a 5,000-question build.
    Held for one block at a time, never across a `yield` to a slow reader."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


Key = tuple[str, int]
"""(question id, trial): a question asked k times (`repeats`) is k entries."""


def load_sources(
    run_dir: Path, targets: Sequence[str], *, traces: frozenset[str] | None = None
) -> tuple[dict[str, dict[Key, Any]], dict[str, dict[Key, ToolRecord]]]:
    """The stored question runs and the trace file's records of each target, by (question id,
    trial), `traces` as for `load_records`. A missing store or trace file gives empty maps:
    the page then says what is absent."""
    from ...rundir.directory import RunDirectory

    run = RunDirectory(run_dir)
    runs: dict[str, dict[Key, Any]] = {t: {} for t in targets}
    with gc_paused():
        if run.has_store():
            with run.read_store() as store:  # reading never changes a run
                for target in targets:
                    runs[target] = store.load_answers(target)
    return runs, load_records(run_dir, targets, traces=traces)


def load_records(
    run_dir: Path, targets: Sequence[str], *, traces: frozenset[str] | None = None
) -> dict[str, dict[Key, ToolRecord]]:
    """The trace file's records of each target, by (question id, trial); with `traces`, only
    those of these trace ids are to be trusted (`read_question_runs`)."""
    from ...capture.tracefile import read_trial_records
    from ...rundir.directory import RunDirectory

    run = RunDirectory(run_dir)
    records: dict[str, dict[Key, ToolRecord]] = {t: {} for t in targets}
    with gc_paused():
        for target in targets:
            trace_file = run.trace_file(target)
            if trace_file.is_file():
                records[target] = read_trial_records(trace_file, traces=traces)
    return records


def _arguments(arguments: Mapping[str, Any], policy: Scrubber) -> dict[str, Any]:
    """A call's arguments for the page: redacted, each string cut, the whole bounded."""
    # At most this many characters as JSON: a character is at most 6 (a \uXXXX escape). The
    # arguments are measured as JSON only when the bound is over the limit (the profile: a
    # json.dumps of every call's arguments was a tenth of the page's build).
    bound = [0]
    try:
        out = _cut_strings(policy.arguments(dict(arguments)), bound)
        size = bound[0]
        if size > ARGUMENTS_CHARS:
            size = len(json.dumps(out, ensure_ascii=False, default=str))
    except (RecursionError, ValueError, TypeError):
        return {"(cut)": f"arguments too deep to show here; {IN_TRACE}"}
    if size > ARGUMENTS_CHARS:
        return {"(cut)": f"arguments of {size:,} characters as JSON; {IN_TRACE}"}
    return out


_UNKNOWN = ARGUMENTS_CHARS + 1
"""The JSON length bound of a value whose length is not known: it is measured."""


def _cut_strings(value: Any, bound: list[int]) -> Any:
    """`value` with each string cut, adding to `bound[0]` a bound on its length as JSON. A
    function of its own, not a closure in `_arguments`: a closure that calls itself is a
    cycle, four a question, which only the collector frees (the profile: a collector pass
    per block over them)."""
    kind = type(value)  # the exact JSON types first: an ABC check per value costs more
    if kind is str:
        text = cut(value, ARGUMENT_CHARS, IN_TRACE)
        bound[0] += 6 * len(text) + 4
        return text
    if kind is dict:
        bound[0] += 2
        out = {}
        for k, v in value.items():
            bound[0] += 6 * len(k) + 6 if type(k) is str else _UNKNOWN
            out[k] = _cut_strings(v, bound)
        return out
    if kind is list:
        bound[0] += 2 + 2 * len(value)
        return [_cut_strings(v, bound) for v in value]
    if value is None or kind is bool or kind is float:
        bound[0] += 26
        return value
    if kind is int:
        bound[0] += len(str(value)) + 2  # str() of a huge int raises, as json.dumps would
        return value
    bound[0] += _UNKNOWN
    if isinstance(value, str):
        return cut(value, ARGUMENT_CHARS, IN_TRACE)
    if isinstance(value, Mapping):
        return {k: _cut_strings(v, bound) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_cut_strings(v, bound) for v in value]
    return value


def _messages(stored: Any, policy: Scrubber) -> list[dict[str, str]]:
    if stored is None:
        return []
    out = []
    for m in stored.messages or []:
        if isinstance(m, Mapping):
            content = _text(m.get("content", ""), policy)
            out.append({"role": str(m.get("role", "?")), "content": content})
    return out


def _parents(calls: Sequence[ToolCall]) -> dict[int, int | None]:
    """Each call's delegating call: the latest earlier call one level up whose span contains
    this call's start (sub-agent calls nest under the call that ran the sub-agent)."""
    parents: dict[int, int | None] = {}
    for i, call in enumerate(calls):
        parent = None
        if call.depth > 0:
            for j in range(i - 1, -1, -1):
                up = calls[j]
                if up.depth == call.depth - 1:
                    contains = up.start_ns <= call.start_ns and (
                        not up.end_ns or call.start_ns <= up.end_ns
                    )
                    if contains or parent is None:
                        parent = j
                    if contains:
                        break
        parents[i] = parent
    return parents


def _marks(call: ToolCall, expectations: Sequence[Any], met: Sequence[bool]) -> list[dict]:
    """The `expected_tools` entries this call met or broke (the grader's own matching)."""
    marks = []
    for i, e in enumerate(expectations):
        if not call.matches(e.tool):
            continue
        args_ok = e.args is None or args_match(call.arguments, e.args)
        if not e.should_run:
            if args_ok and call.outcome in ATTEMPTED_OUTCOMES:
                marks.append({"i": i, "ok": False, "why": "expected not to run"})
        elif call.outcome not in EXECUTED_OUTCOMES:
            if args_ok:
                marks.append({"i": i, "ok": False, "why": f"did not execute ({call.outcome})"})
        elif not args_ok:
            wrong = [
                f"{k}: expected {v!r}, got {call.arguments[k]!r}"
                if k in call.arguments
                else f"{k}: expected {v!r}, absent"
                for k, v in e.args or ()
                if not (k in call.arguments and args_match(call.arguments, ((k, v),)))
            ]
            marks.append({"i": i, "ok": False, "why": "wrong arguments: " + "; ".join(wrong)})
        else:
            marks.append({"i": i, "ok": bool(met[i]), "why": "" if met[i] else "order"})
    return marks


def _graded(graders: Sequence[Any], labels: list[str]) -> list[dict] | None:
    """The tool-usage grader's own verdict on these expectations, as the run stored it (its
    `details`), when it checked the record: the marks then need no second grading (the
    profile of a 5,000-question page: re-grading was a quarter of its build)."""
    for g in graders:
        details = g.details if g.grader_id == ToolUsageGrader.id else None
        if not isinstance(details, Mapping) or details.get("source") != "record":
            continue
        found = details.get("expectations")
        if (
            isinstance(found, list)
            and [f.get("expectation") if isinstance(f, Mapping) else None for f in found] == labels
        ):
            return found
    return None


def _expectations(
    row: Mapping[str, Any], record: ToolRecord | None, graders: Sequence[Any] = ()
) -> tuple[list, list[dict]]:
    raw = row.get("expected_tools")
    if not raw:
        return [], []
    try:
        parsed = parse_expectations(raw)
    except ExpectationError as exc:
        return [], [{"label": "expected_tools", "met": False, "why": f"setup failure: {exc}"}]
    if record is None:
        return parsed, [
            {"label": _plain(e.describe()), "met": None, "why": "no tool-call record to check"}
            for e in parsed
        ]
    found = _graded(graders, [e.describe() for e in parsed]) if record.complete else None
    if found is None:  # not attached, or not on the record: its own matching, here
        verdict = ToolUsageGrader().grade("", "", {"expected_tools": raw, "tool_calls": record})
        found = verdict.details.get("expectations") or []
        if len(found) != len(parsed):  # an incomplete record: the grader errored, none matched
            return parsed, [
                {"label": _plain(e.describe()), "met": None, "why": verdict.reason} for e in parsed
            ]
    out = []
    for f in found:
        label, why = str(f.get("expectation", "")), str(f.get("why", ""))
        if why.startswith(label + ": "):  # the grader's reason repeats the entry; once is enough
            why = why[len(label) + 2 :]
        out.append({"label": _plain(label), "met": f.get("met"), "why": _plain(why)})
    return parsed, out


def _plain(text: str) -> str:
    """The grader's Markdown code marks are noise on a page that sets code apart itself."""
    return text.replace("`", "")


def _calls(
    record: ToolRecord | None, expectations: list, verdicts: list[dict], policy: Scrubber
) -> list[dict]:
    if record is None:
        return []
    calls = list(record)
    parents = _parents(calls)
    nodes = record.nodes
    met = [bool(v.get("met")) for v in verdicts]
    out = []
    for i, c in enumerate(calls):
        out.append(
            {
                "n": c.name,
                "q": c.qualified_id,
                "a": c.agent,
                "d": c.depth,
                "p": parents[i],
                "t": c.model_turn,
                "o": str(c.outcome),
                "e": c.error_type,
                "w": c.world,
                "args": _arguments(c.arguments, policy),
                "r": None if c.result is None else _text(c.result, policy, RESULT_CHARS, IN_TRACE),
                "m": _marks(c, expectations, met) if expectations else [],
                "nd": node_of(c, nodes) if nodes else None,
            }
        )
    return out


def _pauses(record: ToolRecord | None, policy: Scrubber) -> list[dict[str, Any]]:
    """Each pause on `interrupt()`: where it fell among the calls (`at`: calls started
    before it), who asked, the payload and the answer given (None: nobody answered), each
    redacted like arguments."""
    if record is None:
        return []

    def shown(value: Any) -> dict[str, Any]:
        return _arguments(value if isinstance(value, Mapping) else {"value": value}, policy)

    return [
        {
            "at": i.calls_before,
            "node": i.node,
            "tool": i.tool,
            "agent": i.agent,
            "payload": shown(i.value),
            "resumed": i.resumed,
            "answer": shown(i.resume_value) if i.resumed else None,
        }
        for i in record.interruptions
    ]


def _cost_fields(q: QuestionResult) -> dict[str, Any]:
    """Tokens and cost as the list shows them, and the numbers it sorts by (None: unknown,
    unpriced or not recorded: sorted last, never as 0)."""
    if q.usage is None:
        return {"tokens": "-", "cost": "-", "cost_value": None, "tokens_value": None}
    _, cost, _ = question_cells(q.usage)
    total = q.usage.tokens
    return {
        "tokens": "unknown" if total is None else f"{total:,}",
        "cost": cost,
        "cost_value": q.usage.cost,
        "tokens_value": q.usage.tokens,
        "latency": round(q.usage.latency.wall_s, 3),
    }


def build_question(
    q: QuestionResult,
    *,
    stored: QuestionAnswer | None,
    record: ToolRecord | None,
    trace_url: str | None = None,
    redaction: RedactionPolicy = DEFAULT_POLICY,
    verdict: str | None = None,
    seen: dict[Any, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One question as the page's script reads it (short keys for the calls: they repeat),
    every text and argument through the `redaction` policy; `verdict` is
    `question_verdict(q)` when the caller has judged it already; `seen`: the grader rows
    already built for this page under this policy, by content (`GraderRows`)."""
    if verdict is None:
        verdict = question_verdict(q)  # judged once for both builds
    # Built once with the value scan put off, then all of the question's texts scanned in
    # one search (the profile of a 5,000-question page: a scan per text, 29 a question, was
    # a fifth of its build); only a question with something to redact is built again.
    deferred = DeferredScan(redaction)
    for policy in (deferred, redaction):
        graders = GraderRows(q.graders, seen)
        entry = _question(
            q,
            stored=stored,
            record=record,
            trace_url=trace_url,
            policy=policy,
            verdict=verdict,
            graders=graders.shown(policy),
        )
        if policy is redaction or deferred.clean():
            graders.keep()  # as the policy builds them: a later question may reuse them
            break
    return entry


def _question(
    q: QuestionResult,
    *,
    stored: QuestionAnswer | None,
    record: ToolRecord | None,
    trace_url: str | None,
    policy: Scrubber,
    verdict: str | None = None,
    graders: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    row = stored.row if stored is not None else {}
    record_state = "present"
    if record is None:
        record_state = "absent" if not (stored and stored.has_record) else "missing"
    elif not record.complete:
        record_state = "incomplete: " + ("; ".join(record.problems) or "capture failed")
    expectations, verdicts = _expectations(row, record, q.graders)
    return {
        "target": q.target,
        "id": q.id,
        "trial": q.trial,
        "split": q.split,
        "bundle": q.bundle,
        "tags": list(q.tags),
        "verdict": question_verdict(q) if verdict is None else verdict,
        "composite": q.composite,
        "objective": q.objective,
        "error": _text(q.error, policy) if q.error else None,
        "error_type": q.error_type,
        "outcome": outcome_line(q) if q.outcome is not None else None,
        "trace_id": q.trace_id,
        "trace_url": trace_url,
        "latency": round(stored.latency_s, 3) if stored is not None else None,
        **_cost_fields(q),
        "input": _messages(stored, policy),
        "response": cut(policy.answer(stored.response), TEXT_CHARS) if stored is not None else None,
        "graders": [grader_row(g, policy) for g in q.graders] if graders is None else graders,
        "record": record_state,
        "expected": verdicts,
        "calls": _calls(record, expectations, verdicts, policy),
        "pauses": _pauses(record, policy),
        "path": shown_path(node_steps(record)) if record is not None and record.nodes else None,
        "labels": [
            {
                "label": a["label"],
                "answer": bool(a["answer"]),
                "by": _text(a["by"], policy),
                "created": str(a["created"])[:16],
                "note": _text(a["note"], policy) if a.get("note") else None,
                "stale": bool(a.get("stale")),
            }
            for a in getattr(q, "annotations", [])
        ],
    }
