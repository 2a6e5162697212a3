"""tracegrade from Python: run a config, evaluate an in-memory graph, capture one run's record.

Exported from the `harness` facade (docs/api.md):

- `run(config, *, targets=None, selection=None) -> RunResult` and `await arun(...)`: what
  `tracegrade run` does, without the console. `run` is safe inside a running event loop (a
  notebook): it then runs on a worker thread's own loop.
- `evaluate(graph, questions, *, graders, environment=None) -> RunResult` and `aevaluate`: an
  in-memory graph (or graph factory) and questions (dicts, or a dataset path), no config file.
- `capture(graph, input, *, config=None) -> ToolRecord` and `acapture`: one run of the graph
  and the record of the tool calls it made, for unit tests of agents.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from .errors import ConfigError
from .execution.run.lifecycle import astart_run
from .inputs.config import Config, GateConfig, config_from_document, load_config
from .inputs.sourceparse import Document
from .records import ToolRecord
from .rundir.outcome import RunOutcome, Selection, TargetResult
from .verdicts.gate import GateVerdict
from .verdicts.result import QuestionResult

__all__ = [
    "RunResult",
    "acapture",
    "aevaluate",
    "arun",
    "capture",
    "evaluate",
    "failure_reasons",
    "run",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RunResult:
    """What a run produced: every question's verdict, each target's gate, where it all is."""

    run_id: str
    """The run's id (`YYYYmmdd-HHMMSS-xxxxxx`), its directory's name under `runs_dir`."""
    run_dir: Path
    """The run directory: identity.json, results.sqlite, traces/ (see docs/running.md)."""
    exit_code: int
    """What `tracegrade run` would exit with: 0 passed, 2 gate failed, 3 incomplete."""
    targets: list[TargetResult]
    """Per target: its questions, grader summaries, advisories and gate verdict."""
    reports: dict[str, Path] = field(default_factory=dict)
    """Report files written, by kind (`json`, `junit`, `markdown`)."""
    notes: list[str] = field(default_factory=list)
    """Operator notes: spans not exported, targets whose selection was empty."""
    outcome: RunOutcome | None = None
    """The underlying outcome, for `tracegrade.reports` renderers."""

    @property
    def passed(self) -> bool:
        """Every target's gate passed and the run was complete (exit code 0)."""
        return self.exit_code == 0

    @property
    def questions(self) -> list[QuestionResult]:
        """Every question's verdict, target by target, in selection order."""
        return [q for t in self.targets for q in t.questions]

    @property
    def gate(self) -> dict[str, GateVerdict]:
        """Each target's gate verdict, by target name."""
        return {t.target: t.verdict for t in self.targets}

    def question(self, target: str, question_id: str) -> QuestionResult:
        """One question's verdict; `KeyError` when the run has no such question."""
        for t in self.targets:
            if t.target == target:
                for q in t.questions:
                    if q.id == question_id:
                        return q
        raise KeyError(f"{target}::{question_id}")

    def failures(self) -> dict[str, list[str]]:
        """`target::question` -> why it failed, for every question that did not pass."""
        out = {}
        for t in self.targets:
            gate = _gate_of(self, t.target)
            for q in t.questions:
                reasons = failure_reasons(q, gate)
                if reasons:
                    out[f"{t.target}::{q.id}"] = reasons
        return out


def _gate_of(result: RunResult, target: str) -> GateConfig | None:
    if result.outcome is None:
        return None
    stored = result.outcome.manifest.target(target) if result.outcome.manifest else None
    from .inputs.config import parse_gate

    return parse_gate(stored.config.get("gate")) if stored is not None else None


def failure_reasons(question: QuestionResult, gate: GateConfig | None = None) -> list[str]:
    """Why `question` did not pass, one line per cause ([] when it passed): the agent's error,
    each grader that errored or scored below its bar (with the grader's reason), each failed
    required or critical rubric check, and checks left in Review unless the gate allows it."""
    if question.errored:
        return [f"agent error: {question.error}"]
    reasons = []
    for g in question.graders:
        if g.error:
            reasons.append(f"{g.grader_id} errored: {g.reason}")
        elif g.passed is False:
            bar = f"max {g.max_score:g}" if g.binary else f"threshold {g.threshold:g}"
            must = ", must pass" if g.must_pass else ""
            reasons.append(f"{g.grader_id} {g.score:g}/{g.max_score:g} ({bar}{must}): {g.reason}")
    failed = set(question.required_check_failures) | set(question.critical_failures)
    reasons += [f"rubric check {name} failed" for name in sorted(failed)]
    if gate is None or not gate.allow_review:
        reasons += [f"rubric check {n} left in Review" for n in question.required_check_reviews]
    return reasons


def _on_own_loop(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from sync code: `asyncio.run` when no loop is running in
    this thread, else on a worker thread's own loop (a notebook's loop is busy running us)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_awaited(make))
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tracegrade") as pool:
        return pool.submit(lambda: asyncio.run(_awaited(make))).result()


async def _awaited(make: Callable[[], Awaitable[T]]) -> T:
    return await make()


def _write_reports(outcome: RunOutcome, paths: Mapping[str, Path | str | None]) -> dict[str, Path]:
    from .reports.json_report import write_json_report
    from .reports.junit import write_junit
    from .reports.markdown import write_markdown

    writers: dict[str, Callable[[Any, Path], Any]] = {
        "json": write_json_report,
        "junit": write_junit,
        "markdown": write_markdown,
    }
    written = {}
    for kind, path in paths.items():
        if path is not None:
            writers[kind](outcome, Path(path))
            written[kind] = Path(path)
    return written


def _result(outcome: RunOutcome, reports: dict[str, Path]) -> RunResult:
    return RunResult(
        run_id=outcome.run_id,
        run_dir=outcome.run_dir,
        exit_code=outcome.exit_code,
        targets=list(outcome.targets),
        reports=reports,
        notes=list(outcome.notes),
        outcome=outcome,
    )


async def arun(
    config: Config | str | Path,
    *,
    targets: Sequence[str] | None = None,
    selection: Selection | None = None,
    json_report: Path | str | None = None,
    junit: Path | str | None = None,
    markdown: Path | str | None = None,
    use_cache: bool = True,
    on_done: Callable[[QuestionResult], None] | None = None,
) -> RunResult:
    """Run a config's targets over their datasets, grade and score them: `tracegrade run`.

    `config` is a loaded `Config` or the path of a config file. `targets` names the targets to
    run (default all; it overrides `selection.targets`); `selection` filters the questions
    (split, bundles, tags, limit). Report files are written where the keyword arguments say.
    Invalid input raises `InputError` (exit code 4 on the CLI), an empty selection
    `NothingToRunError` (5); a failed gate is not an exception: see `RunResult.exit_code`.
    """
    loaded = config if isinstance(config, Config) else load_config(config)
    chosen = selection or Selection()
    if targets is not None:
        chosen = replace(chosen, targets=tuple(targets))
    outcome = await astart_run(loaded, chosen, use_cache=use_cache, on_done=on_done)
    reports = {"json": json_report, "junit": junit, "markdown": markdown}
    return _result(outcome, _write_reports(outcome, reports))


def run(config: Config | str | Path, **options: Any) -> RunResult:
    """`arun` from sync code; inside a running event loop it runs on a worker thread's loop."""
    return _on_own_loop(lambda: arun(config, **options))


# ------------------------------------------------------------------------------- evaluate


def _is_runnable(obj: Any) -> bool:
    return hasattr(obj, "ainvoke") and hasattr(obj, "invoke")


def _is_chat_model(obj: Any) -> bool:
    if "langchain_core" not in sys.modules:
        return False
    from langchain_core.language_models import BaseChatModel

    return isinstance(obj, BaseChatModel)


async def aevaluate(
    graph: Any,
    questions: Sequence[Mapping[str, Any]] | str | Path,
    *,
    graders: Sequence[str | Mapping[str, Any]],
    environment: Callable[[], Any] | None = None,
    gate: Mapping[str, Any] | None = None,
    judge: Mapping[str, Any] | None = None,
    rubrics: Path | str | None = None,
    runs_dir: Path | str = "runs",
    name: str = "agent",
    system_prompt: str | None = None,
    concurrency: int = 8,
    timeout_s: float = 60.0,
    json_report: Path | str | None = None,
    junit: Path | str | None = None,
    markdown: Path | str | None = None,
) -> RunResult:
    """Evaluate an in-memory graph on questions, without a config file.

    `graph` is a compiled LangGraph graph, a factory returning one (called as
    `graph(environment=env)` when `environment` is given), or a LangChain chat model (chat mode:
    no tool record). `questions` is a list of question mappings (the dataset format's
    questions) or a dataset file's path. `graders` lists grader ids or mappings as in a config's
    `graders:`; `environment` is a zero-argument factory of a fresh environment per question;
    `gate` and `judge` are a config's `gate:` and `judge:` blocks, `rubrics` the directory of the
    rubrics questions reference (`rubric_ref`). Every input is validated as
    a config file would be; the run lands in `runs_dir/<run id>/`.
    """
    if environment is not None and _is_runnable(graph):
        raise ConfigError(
            "with an environment, pass a graph factory: `build_graph(environment=env)` returning "
            "a compiled graph, so the agent's tools act on each question's environment",
            key="graph",
        )
    chat = _is_chat_model(graph)
    with tempfile.TemporaryDirectory(prefix="tracegrade-evaluate-") as tmp:
        if isinstance(questions, str | Path):
            dataset = Path(questions).resolve()
        else:
            # The run's manifest names its dataset by file and hash, as a config's run does.
            dataset = Path(tmp) / f"{name}.json"
            dataset.write_text(json.dumps({"questions": [dict(q) for q in questions]}))
        # The objects themselves go on the target once the document is validated; the
        # document names them by placeholders the schema accepts.
        target: dict[str, Any] = {
            "chat_model" if chat else "agent": "evaluate:graph",
            "dataset": str(dataset),
            "graders": [g if isinstance(g, str) else dict(g) for g in graders],
            "concurrency": concurrency,
            "timeout_s": timeout_s,
        }
        if environment is not None:
            target["environment"] = "evaluate:environment"
        if system_prompt is not None:
            target["system_prompt"] = system_prompt
        if gate is not None:
            target["gate"] = dict(gate)
        document: dict[str, Any] = {
            "version": 1,
            "runs_dir": str(Path(runs_dir).resolve()),
            "targets": {name: target},
        }
        if judge is not None:
            document["judge"] = dict(judge)
        if rubrics is not None:
            document["rubrics"] = str(Path(rubrics).resolve())
        where = Path.cwd() / "evaluate()"  # what error messages name as the "file"
        config = config_from_document(
            Document(path=where, data=document, known_lines={}, format="json")
        )
        built = config.targets[name]
        built.factory = graph if chat or not _is_runnable(graph) else (lambda: graph)
        built.environment = environment
        return await arun(config, json_report=json_report, junit=junit, markdown=markdown)


def evaluate(graph: Any, questions: Any, **options: Any) -> RunResult:
    """`aevaluate` from sync code; inside a running event loop it runs on a worker thread's
    loop."""
    return _on_own_loop(lambda: aevaluate(graph, questions, **options))


# ------------------------------------------------------------------------------- capture


def _graph_input(input: Any) -> Any:
    if isinstance(input, str):
        return {"messages": [{"role": "user", "content": input}]}
    if isinstance(input, list):
        return {"messages": input}
    return input


def _with_recorder(config: Mapping[str, Any] | None, recorder: Any) -> dict[str, Any]:
    merged = dict(config or {})
    callbacks = merged.get("callbacks")
    if callbacks is None:
        merged["callbacks"] = [recorder]
    elif isinstance(callbacks, list):
        merged["callbacks"] = [*callbacks, recorder]
    else:  # a callback manager: a copy with the recorder added
        manager = callbacks.copy()
        manager.add_handler(recorder, inherit=True)
        merged["callbacks"] = manager
    return merged


def _recorder(graph: Any) -> tuple[Any, Any]:
    from .capture.recorder import Recorder
    from .capture.telemetry import RunTelemetry

    telemetry = RunTelemetry(trace_file=None)
    name = str(getattr(graph, "name", None) or "agent")
    recorder = Recorder(
        tracer=telemetry.tracer, question_id="capture", dataset="", target=name, agent_name=name
    )
    return telemetry, recorder


def capture(graph: Any, input: Any, *, config: Mapping[str, Any] | None = None) -> ToolRecord:
    """Invoke `graph` once on `input` and return the record of the tool calls it made.

    `input` is the graph's input (a mapping such as `{"messages": [...]}`), a list of messages
    or a plain string (one user message). `config` is the graph's `RunnableConfig`; the recorder
    is added to its callbacks. An exception of the graph propagates; `record.complete` is False
    when the recorder could not seal the record.
    """
    telemetry, recorder = _recorder(graph)
    state = None
    try:
        with recorder.question_span():
            state = graph.invoke(_graph_input(input), config=_with_recorder(config, recorder))
        return recorder.seal(final_state=state)
    finally:
        recorder.seal(final_state=state)
        telemetry.shutdown()


async def acapture(
    graph: Any, input: Any, *, config: Mapping[str, Any] | None = None
) -> ToolRecord:
    """`capture`'s async twin: `await graph.ainvoke(...)`."""
    telemetry, recorder = _recorder(graph)
    state = None
    try:
        async with recorder.question_span():
            state = await graph.ainvoke(
                _graph_input(input), config=_with_recorder(config, recorder)
            )
        return recorder.seal(final_state=state)
    finally:
        recorder.seal(final_state=state)
        telemetry.shutdown()
