"""The run's local trace file: OTLP JSON lines (one `ExportTraceServiceRequest` per line, the
format the OpenTelemetry Collector's file exporter writes), and the records read back from it.

The file keeps full fidelity (no truncation) except secrets, which never reach disk: argument
names matching the secret fragments and secret-looking values are redacted by the one rule in
`tracegrade.redaction`. `read_records` rebuilds each question's ToolRecord for re-grading, through
the same `finalize_calls` the live recorder uses, so both give the same record.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ..canonical import json_loads
from ..errors import InputError
from ..graph_path import NodeRun, decode_nodes, encode_nodes
from ..otel import semconv as sc
from ..records import (
    Interruption,
    Outcome,
    ToolCall,
    ToolRecord,
    finalize_calls,
    finalize_interruptions,
)
from ..redaction import DEFAULT_POLICY, RedactionPolicy, compile_pattern, truncate
from ..toolspec import ToolSpec, decode_specs, encode_specs

__all__ = [
    "QuestionRunKey",
    "TraceFileExporter",
    "decode_value",
    "encode_line",
    "encode_spans",
    "read_question_runs",
    "read_records",
    "read_trial_records",
    "redacted_attributes",
]

log = logging.getLogger(__name__)


# -- redaction shared with the OTLP wrapper -------------------------------------------------
def _redact_json_text(text: str, policy: RedactionPolicy) -> str:
    if not policy.mentions_secret_name(text):
        return policy.text(text)  # no secret-named key can be inside: values only
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # malformed, or nested too deep
        return policy.text(text)
    if isinstance(value, (Mapping, list)):
        return json.dumps(policy.value(value), ensure_ascii=False)
    return policy.text(text)


def redacted_attributes(
    attributes: Mapping[str, Any],
    *,
    truncate_to: int | None = None,
    policy: RedactionPolicy = DEFAULT_POLICY,
) -> dict[str, Any]:
    """A copy of span attributes with secrets redacted (argument names and value patterns) and,
    when `truncate_to` is given, the argument/result/input/output values cut to that length."""
    out: dict[str, Any] = {}
    done: dict[str, str] = {}  # arguments and input.value usually hold the same text
    for key, value in attributes.items():
        kind = type(value)
        if kind is int or kind is bool or kind is float:  # a third of the values: as they are
            out[key] = value
            continue
        if kind is str or isinstance(value, str):
            if key not in sc.STRUCTURAL_ATTRIBUTES:
                cleaned = done.get(value)
                if cleaned is None:
                    if key in sc.ARGUMENT_ATTRIBUTES or (
                        key in sc.TRUNCATED_ATTRIBUTES and value[:1] in ("{", "[")
                    ):
                        cleaned = _redact_json_text(value, policy)
                    else:
                        cleaned = policy.text(value)
                    done[value] = cleaned
                value = cleaned
            if truncate_to is not None and key in sc.TRUNCATED_ATTRIBUTES:
                value = truncate(value, truncate_to)
        elif isinstance(value, (list, tuple)):
            value = [policy.text(v) if isinstance(v, str) else v for v in value]
        out[key] = value
    return out


# -- OTLP JSON encoding ---------------------------------------------------------------------
# The trace file's line, written as a string directly: building dicts for json.dumps cost twice
# as much, and this runs for every span of every question. A test checks it byte for byte
# against a dict-built reference of the OTLP JSON mapping.
_json_str = json.encoder.encode_basestring  # the C encoder when available
_INT64 = (-(2**63), 2**63 - 1)
# OTLP JSON writes non-finite doubles as these strings (a bare NaN is not JSON)
_NON_FINITE = {"nan": '"NaN"', "inf": '"Infinity"', "-inf": '"-Infinity"'}
_SURROGATE = re.compile("[\ud800-\udfff]")


def _value_line(value: Any) -> str:
    if isinstance(value, str):
        return '{"stringValue":' + _json_str(value) + "}"
    if isinstance(value, bool):
        return '{"boolValue":true}' if value else '{"boolValue":false}'
    if isinstance(value, int):
        if _INT64[0] <= value <= _INT64[1]:
            return '{"intValue":"' + str(value) + '"}'
        return '{"stringValue":"' + str(value) + '"}'  # int64 is all OTLP carries
    if isinstance(value, float):
        text = repr(value)
        return '{"doubleValue":' + _NON_FINITE.get(text, text) + "}"
    if isinstance(value, (list, tuple)):
        return '{"arrayValue":{"values":[' + ",".join(map(_value_line, value)) + "]}}"
    return '{"stringValue":' + _json_str(str(value)) + "}"


_KEY_PREFIXES: dict[str, str] = {}
"""Each attribute key's `{"key":...,"value":` text: the keys are a few dozen names that recur in
every span (encoding them was a fifth of the writer's CPU). Bounded: keys a caller makes up
(an event's attributes) are encoded each time once it is full."""
_KEY_PREFIXES_MAX = 4096


def _key_values_line(attributes: Mapping[str, Any]) -> str:
    prefixes = _KEY_PREFIXES
    parts = []
    for k, v in attributes.items():
        prefix = prefixes.get(k)
        if prefix is None:
            prefix = '{"key":' + _json_str(k) + ',"value":'
            if type(k) is str and len(prefixes) < _KEY_PREFIXES_MAX:
                prefixes[k] = prefix
        if type(v) is str:  # most values: their line without the type tests
            parts.append(prefix + '{"stringValue":' + _json_str(v) + "}}")
        else:
            parts.append(prefix + _value_line(v) + "}")
    return ",".join(parts)


def _span_line(span: ReadableSpan, attributes: Mapping[str, Any], policy: RedactionPolicy) -> str:
    ctx = span.context
    status = span.status
    parts = [
        '{"traceId":"',
        format(ctx.trace_id, "032x"),
        '","spanId":"',
        format(ctx.span_id, "016x"),
        '","name":',
        _json_str(span.name),
        ',"kind":',
        str(span.kind.value + 1),  # OTLP's enum starts at UNSPECIFIED=0
        ',"startTimeUnixNano":"',
        str(span.start_time or 0),
        '","endTimeUnixNano":"',
        str(span.end_time or 0),
        '","attributes":[',
        _key_values_line(attributes),
        '],"status":{"code":',
        str(status.status_code.value),
    ]
    if status.description:
        parts += [',"message":', _json_str(policy.text(status.description))]
    parts.append("}")
    if span.parent is not None:
        parts += [',"parentSpanId":"', format(span.parent.span_id, "016x"), '"']
    if span.events:
        events = (
            '{"timeUnixNano":"'
            + str(e.timestamp)
            + '","name":'
            + _json_str(e.name)
            + ',"attributes":['
            + _key_values_line(redacted_attributes(e.attributes or {}, policy=policy))
            + "]}"
            for e in span.events
        )
        parts += [',"events":[', ",".join(events), "]"]
    parts.append("}")
    return "".join(parts)


def encode_spans(
    spans: Sequence[ReadableSpan],
    *,
    truncate_to: int | None = None,
    policy: RedactionPolicy = DEFAULT_POLICY,
) -> dict:
    """One OTLP/JSON `ExportTraceServiceRequest` holding `spans`, secrets redacted."""
    return json.loads(encode_line(spans, truncate_to=truncate_to, policy=policy))


def encode_line(
    spans: Sequence[ReadableSpan],
    *,
    truncate_to: int | None = None,
    policy: RedactionPolicy = DEFAULT_POLICY,
) -> str:
    """`encode_spans` as one compact JSON line: the trace file's format."""
    groups: dict[tuple, tuple[Any, Any, list[str]]] = {}
    for span in spans:
        key = (id(span.resource), id(span.instrumentation_scope))
        group = groups.get(key)
        if group is None:
            group = groups[key] = (span.resource, span.instrumentation_scope, [])
        attributes = redacted_attributes(
            span.attributes or {}, truncate_to=truncate_to, policy=policy
        )
        group[2].append(_span_line(span, attributes, policy))
    out = []
    for resource, scope, lines in groups.values():
        name, version = (scope.name, scope.version) if scope else ("", None)
        scope_json = '{"name":' + _json_str(name)
        if version:
            scope_json += ',"version":' + _json_str(version)
        scope_json += "}"
        out.append(
            '{"resource":{"attributes":['
            + _key_values_line(dict(resource.attributes or {}))
            + ']},"scopeSpans":[{"scope":'
            + scope_json
            + ',"spans":['
            + ",".join(lines)
            + "]}]}"
        )
    return '{"resourceSpans":[' + ",".join(out) + "]}"


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, 2)
        return handle.read(1) == b"\n"


class TraceFileExporter(SpanExporter):
    """Appends each batch of spans to `path` as one OTLP JSON line, secrets redacted."""

    def __init__(self, path: Path | str, *, redaction: RedactionPolicy = DEFAULT_POLICY) -> None:
        self.path = Path(path)
        self.redaction = redaction
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._file = self.path.open("a", encoding="utf-8")
        self.written = 0
        """Spans written so far."""
        self.failed = 0
        """Spans that could not be written (counted in the run's notes and exit status)."""
        self.first_failure: str | None = None
        if self._file.tell() and not _ends_with_newline(self.path):
            # a process killed mid-write left half a line: end it, so the resumed run's first
            # line is not glued onto it (the reader skips the broken line alone)
            try:
                self._file.write("\n")
                self._file.flush()
            except OSError as exc:  # a full disk: the spans that follow fail and are counted
                self.first_failure = f"{type(exc).__name__}: {exc}"

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            line = encode_line(spans, policy=self.redaction)
            try:
                data = (line + "\n").encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate (from a tool result, say)
                data = (_SURROGATE.sub("\ufffd", line) + "\n").encode("utf-8")
            with self._lock:
                if self._file.closed:
                    raise ValueError("the trace file is closed")
                self._file.write(data.decode("utf-8"))
                self._file.flush()
                self.written += len(spans)
        except Exception as exc:  # isolation point: an exporter never raises into the run
            log.warning("writing %d span(s) to %s failed: %s", len(spans), self.path, exc)
            with self._lock:
                self.failed += len(spans)
                if self.first_failure is None:
                    self.first_failure = f"{type(exc).__name__}: {exc}"
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            try:
                self._file.close()
            except OSError as exc:  # a full disk: what it held was counted failed when written
                log.warning("closing %s failed: %s", self.path, exc)
                self.failed = max(self.failed, 1)
                if self.first_failure is None:
                    self.first_failure = f"{type(exc).__name__}: {exc}"

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


# -- reading back ---------------------------------------------------------------------------
def decode_value(value: Mapping[str, Any]) -> Any:
    """One OTLP/JSON `AnyValue` as a Python value (None for an empty or unknown one)."""
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "arrayValue" in value:
        return [decode_value(v) for v in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return {
            kv["key"]: decode_value(kv.get("value") or {})
            for kv in (value["kvlistValue"] or {}).get("values", [])
        }
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


_TRACE_ID = re.compile(r'"traceId"\s*:\s*"([0-9a-fA-F]{32})"')


def _spans_of(
    path: Path, broken: dict[int, set[str]], traces: frozenset[str] | None = None
) -> Iterator[tuple[int, dict]]:
    """Every span of the file (of the lines naming one of `traces`, lower-case trace ids). A
    line that is not OTLP JSON (half-written when a process was killed, or damaged, or JSON of
    another shape) is skipped; `broken[line] = trace ids still legible in it`."""
    # a line naming none of `traces` anywhere holds no span of them (each names its trace id,
    # as a broken line's legible ones do): one linear RE2 scan a line
    named = compile_pattern("(?i)" + "|".join(sorted(traces))).search if traces else None
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            if traces is not None and (named is None or named(line) is None):
                continue
            try:
                request = json_loads(line)
                if not isinstance(request, dict):
                    raise ValueError("not a JSON object")
                spans = [
                    span
                    for resource_spans in request.get("resourceSpans", [])
                    for scope_spans in resource_spans.get("scopeSpans", [])
                    for span in scope_spans.get("spans", [])
                ]
                if not all(isinstance(span, dict) for span in spans):
                    raise ValueError("a span that is not a JSON object")
            except (ValueError, TypeError, AttributeError, RecursionError) as exc:
                log.warning("%s:%d: not an OTLP JSON line (%s); skipped", path, line_no, exc)
                broken[line_no] = set(m.lower() for m in _TRACE_ID.findall(line))
                continue
            for span in spans:
                yield line_no, span


def _tool_call(span: dict, attrs: dict) -> ToolCall:
    arguments_text = attrs.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS, "{}")
    try:
        arguments = json_loads(arguments_text)
    except (ValueError, RecursionError):  # malformed, or nested too deep
        arguments = {"input": arguments_text}
    result = attrs.get(sc.GEN_AI_TOOL_CALL_RESULT)
    if result is not None and attrs.get(sc.TG_RESULT_ENCODING) == sc.RESULT_JSON:
        result = json_loads(result)
    name = attrs.get(sc.GEN_AI_TOOL_NAME, span.get("name", ""))
    agent = attrs.get(sc.TG_AGENT, "")
    error_type = attrs.get(sc.ERROR_TYPE)
    # The status message is the error's message, or its kind when the error said nothing.
    message = (span.get("status") or {}).get("message") or None
    if message in (error_type, attrs.get(sc.TG_OUTCOME)):
        message = None
    return ToolCall(
        seq=int(attrs.get(sc.TG_SEQ, 0)),
        name=name,
        qualified_id=attrs.get(sc.TG_QUALIFIED_ID, f"{agent}:{name}"),
        call_id=attrs.get(sc.GEN_AI_TOOL_CALL_ID),
        arguments=arguments,
        outcome=Outcome(attrs.get(sc.TG_OUTCOME, Outcome.CANCELLED.value)),
        error_type=error_type,
        error_message=message,
        result=result,
        agent=agent,
        depth=int(attrs.get(sc.TG_DEPTH, 0)),
        model_turn=attrs.get(sc.TG_MODEL_TURN),
        index_in_turn=attrs.get(sc.TG_INDEX_IN_TURN),
        span_id=span.get("spanId"),
        trace_id=span.get("traceId"),
        start_ns=int(span.get("startTimeUnixNano", 0)),
        end_ns=int(span.get("endTimeUnixNano", 0)),
        world=attrs.get(sc.TG_WORLD),
    )


def _json_attribute(text: Any) -> Any:
    if not isinstance(text, str):
        return None
    try:
        return json_loads(text)
    except (ValueError, RecursionError):  # malformed, or nested too deep
        return text


def _interruption(span: dict, attrs: dict) -> Interruption:
    return Interruption(
        seq=int(attrs.get(sc.TG_INTERRUPT_SEQ, 0)),
        value=_json_attribute(attrs.get(sc.TG_INTERRUPT_VALUE)),
        node=str(attrs.get(sc.TG_INTERRUPT_NODE, "")),
        agent=str(attrs.get(sc.TG_AGENT, "")),
        depth=int(attrs.get(sc.TG_DEPTH, 0)),
        interrupt_id=attrs.get(sc.TG_INTERRUPT_ID),
        tool=attrs.get(sc.TG_INTERRUPT_TOOL),
        call_id=attrs.get(sc.TG_INTERRUPT_CALL_ID),
        resumed=bool(attrs.get(sc.TG_INTERRUPT_RESUMED, False)),
        resume_value=_json_attribute(attrs.get(sc.TG_INTERRUPT_RESUME)),
        span_id=span.get("spanId"),
        trace_id=span.get("traceId"),
        start_ns=int(span.get("startTimeUnixNano", 0)),
        end_ns=int(span.get("endTimeUnixNano", 0)),
    )


class QuestionRunKey(NamedTuple):
    """One question run in a trace file or archive: (run, target, question, trial). A span
    written before run ids were recorded has run "" (one run per file, as runs wrote them)."""

    run: str
    target: str
    question_id: str
    trial: int


def read_records(
    path: Path | str,
    *,
    target: str | None = None,
    run: str | None = None,
    unreadable: list[str] | None = None,
) -> dict[str, ToolRecord]:
    """The tool-call records in a run's trace file, keyed by question id (the first trial of
    each question; `read_trial_records` has every trial). See `read_trial_records` for a file
    that mixes runs or targets."""
    records = read_trial_records(path, target=target, run=run, unreadable=unreadable)
    return {qid: record for (qid, trial), record in records.items() if not trial}


def _read_span(
    span: dict,
    questions: dict[QuestionRunKey, tuple[int, str, bool, tuple[str, ...], tuple[int, ...], dict]],
    calls: dict[str, list[ToolCall]],
    interrupts: dict[str, list[Interruption]],
) -> None:
    attrs = {kv["key"]: decode_value(kv.get("value", {})) for kv in span.get("attributes", [])}
    trace_id = span.get("traceId", "")
    if not isinstance(trace_id, str):
        raise ValueError(f"traceId {trace_id!r} is not a string")
    if span.get("name") == sc.SPAN_QUESTION and sc.TG_QUESTION_ID in attrs:
        key = QuestionRunKey(
            str(attrs.get(sc.TG_RUN_ID) or ""),
            str(attrs.get(sc.TG_TARGET) or ""),
            str(attrs[sc.TG_QUESTION_ID]),
            int(attrs.get(sc.TG_TRIAL) or 0),
        )
        start = int(span.get("startTimeUnixNano", 0))
        previous = questions.get(key)
        if previous is None or previous[0] <= start:
            problems = tuple(attrs.get(sc.TG_RECORD_PROBLEMS) or ())
            complete = bool(attrs.get(sc.TG_RECORD_COMPLETE, False))
            turns = tuple(int(t) for t in attrs.get(sc.TG_TURN_STARTS) or ())
            questions[key] = (start, trace_id, complete, problems, turns, graph_facts(attrs))
    elif attrs.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_EXECUTE_TOOL:
        calls.setdefault(trace_id, []).append(_tool_call(span, attrs))
    elif span.get("name") == sc.SPAN_INTERRUPT:
        interrupts.setdefault(trace_id, []).append(_interruption(span, attrs))


def read_trial_records(
    path: Path | str,
    *,
    target: str | None = None,
    run: str | None = None,
    unreadable: list[str] | None = None,
    traces: frozenset[str] | None = None,
) -> dict[tuple[str, int], ToolRecord]:
    """Every record of one run's target in a trace file, keyed by (question id, trial).

    A run's own trace file holds one target (a merged run: the runs of its shards, each question
    in one of them). A file that holds more (a collector archive, files concatenated) is
    narrowed by `target` and `run`; when a question is still there from two runs or targets,
    keying by question id would merge them, so this raises `InputError` naming them
    (`read_question_runs` keeps them all apart)."""
    runs = read_question_runs(path, unreadable=unreadable, traces=traces)
    chosen = {
        k: r
        for k, r in runs.items()
        if (target is None or k.target == target) and (run is None or k.run == run)
    }
    seen: dict[tuple[str, int], QuestionRunKey] = {}
    for key in chosen:
        other = seen.setdefault((key.question_id, key.trial), key)
        if other != key:
            runs_of = sorted({(k.run, k.target) for k in chosen})
            listed = ", ".join(f"run {r or '(unnamed)'} target {t}" for r, t in runs_of[:6])
            more = f" and {len(runs_of) - 6} more" if len(runs_of) > 6 else ""
            raise InputError(
                f"{path} holds question {key.question_id!r} (trial {key.trial}) more than once, "
                f"from different runs or targets ({listed}{more})",
                file=str(path),
                hint="name the one to read with target= and run=, or use read_question_runs",
            )
    return {(k.question_id, k.trial): r for k, r in chosen.items()}


def read_question_runs(
    path: Path | str,
    *,
    unreadable: list[str] | None = None,
    traces: frozenset[str] | None = None,
) -> dict[QuestionRunKey, ToolRecord]:
    """Every question run's record in a trace file or archive, keyed by (run, target, question,
    trial); a question span without a trial attribute (an older trace file) is trial 0.

    A question run more than once under the same key (a resumed run) keeps its latest run. Calls
    are de-duplicated and numbered exactly as the live recorder does; completeness comes from the
    question span. A line that cannot be read is skipped, and only the questions whose spans it
    held are affected: incomplete when their trace id is legible in it, absent when their
    question span was in it. Each skipped line is described in `unreadable` when a list is given.

    `traces` (lower-case trace ids): only the lines naming one of them are parsed, so the
    records of those traces are what a whole read gives (and no others are to be trusted: a
    record of another trace may lack lines); a page's first rows wait for a few of them only.
    """
    path = Path(path)
    questions: dict[
        QuestionRunKey, tuple[int, str, bool, tuple[str, ...], tuple[int, ...], dict]
    ] = {}
    calls: dict[str, list[ToolCall]] = {}
    interrupts: dict[str, list[Interruption]] = {}
    broken: dict[int, set[str]] = {}
    for line_no, span in _spans_of(path, broken, traces):
        try:
            _read_span(span, questions, calls, interrupts)
        except (
            ValueError,
            TypeError,
            AttributeError,
            KeyError,
            RecursionError,
        ) as exc:  # another shape
            log.warning("%s:%d: not an OTLP span (%s); skipped", path, line_no, exc)
            trace_id = span.get("traceId")
            broken.setdefault(line_no, set()).update(
                [trace_id.lower()] if isinstance(trace_id, str) else []
            )
    damaged: dict[str, list[int]] = {}
    for line_no, trace_ids in sorted(broken.items()):
        for trace_id in trace_ids:
            damaged.setdefault(trace_id, []).append(line_no)
    if unreadable is not None:
        unreadable += [f"{path}:{n}: not an OTLP JSON line; skipped" for n in sorted(broken)]
    out = {}
    for key, (_start, trace_id, complete, problems, turns, facts) in questions.items():
        lost = damaged.get(trace_id.lower())
        if lost:
            where = ", ".join(map(str, lost))
            problems = (*problems, f"trace file line {where} unreadable: part of the record lost")
            complete = False
        final = finalize_calls(calls.get(trace_id, ()))
        out[key] = ToolRecord(
            final,
            complete=complete,
            problems=problems,
            interruptions=finalize_interruptions(interrupts.get(trace_id, ()), final),
            turn_starts=turns,
            **facts,
        )
    return out


def graph_attributes(
    nodes: Sequence[NodeRun], offered: Sequence[ToolSpec] | None, answer_ns: int | None
) -> dict[str, Any]:
    """The question span's attributes for what `graph_facts` reads back (absent ones left out)."""
    out: dict[str, Any] = {}
    if nodes:
        out[sc.TG_NODES] = encode_nodes(nodes)
    if offered is not None:
        out[sc.TG_TOOLS] = encode_specs(offered)
    if answer_ns is not None:
        out[sc.TG_ANSWER_NS] = answer_ns
    return out


def graph_facts(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """What a question span says beyond the calls: the path through the graph, the tools
    offered, when the answer was given (`ToolRecord`'s keyword arguments)."""
    answer = attrs.get(sc.TG_ANSWER_NS)
    return {
        "nodes": decode_nodes(attrs.get(sc.TG_NODES)),
        "offered": decode_specs(attrs[sc.TG_TOOLS]) if sc.TG_TOOLS in attrs else None,
        "answer_ns": int(answer) if answer is not None else None,
    }
