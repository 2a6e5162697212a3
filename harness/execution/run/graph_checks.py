"""The pre-flight's checks against an agent's built graph: the tool and agent names a dataset's
`expected_tools` and trajectories use, and their arguments, against the tools the graph
binds (`tracegrade validate` builds each graph once; `start_run` checks the graph it built)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import TracegradeError, suggest
from ...inputs.blocks.trajectory import MATCHER_KEYWORDS, is_matcher, keyword_suggestion, tool_names
from ...inputs.config import TargetConfig
from ...inputs.sourcefile import Document, Problem, load_document, pointer_of
from ..question.agent import InputSchema

if TYPE_CHECKING:
    from ...capture.toolcatalog import ToolCatalog
    from ...environment import Environment
    from ...inputs.dataset import Question
    from ..question.agent import Agent

__all__ = [
    "built_graph",
    "check_built_graph",
    "check_expected_tools",
    "check_graph",
    "check_run_graph",
    "close_quietly",
    "target_catalog",
]


class _DatasetLines:
    """Lines of questions in a dataset file, parsed only when a problem needs one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._doc: Document | None = None
        self._index: dict[str, int] = {}

    def problem(
        self, question_id: str, parts: Sequence[str | int], message: str, hint: str | None
    ) -> Problem:
        if self._doc is None:
            doc = load_document(self.path)
            if doc.format == "jsonl":
                doc = doc.wrapped("questions")
            rows = doc.data.get("questions") if isinstance(doc.data, dict) else None
            for i, row in enumerate(rows or []):
                if isinstance(row, dict) and str(row.get("id")) not in self._index:
                    self._index[str(row.get("id"))] = i
            self._doc = doc
        index = self._index.get(question_id)
        pointer = pointer_of(["questions", index, *parts]) if index is not None else ""
        return Problem(
            str(self.path), self._doc.line_of(pointer), pointer, message, question_id, hint
        )


def check_expected_tools(
    dataset_path: Path, questions: Iterable[Question], catalog: ToolCatalog
) -> list[Problem]:
    """A problem for every `expected_tools` `tool` or `after`, and every tool a `trajectory`
    names (its calls, `forbid`, `only`, `count`), naming nothing the graph can call
    (`catalog`: a `ToolCatalog`); for every argument an expectation names that its tool does
    not take (`args: {quantity: 2}` for a tool taking `qty`); and for a trajectory argument
    written as a mapping of unknown matcher keywords (`{regexp: ...}`) where the tool takes no
    object. Each at its line in the dataset, with a did-you-mean."""
    lines = _DatasetLines(dataset_path)
    problems = []
    for question in questions:
        row = question.row() if hasattr(question, "row") else dict(question)
        qid = str(row.get("id"))
        for j, expectation in enumerate(row.get("expected_tools") or []):
            if not isinstance(expectation, dict):
                continue
            for key in ("tool", "after"):
                name = expectation.get(key)
                found = catalog.problem(name) if isinstance(name, str) else None
                if found is not None:
                    message, hint = found
                    problems.append(lines.problem(qid, ["expected_tools", j, key], message, hint))
            problems += _argument_problems(
                catalog, expectation, ["expected_tools", j], lines, qid, matchers=False
            )
        for name in row.get("tools") or {}:  # the world's overrides, by tool name
            found = catalog.problem(name)
            if found is not None:
                problems.append(lines.problem(qid, ["tools", name], *found))
        # the same check for every tool a `trajectory` names: calls, forbid, only, count
        trajectory = row.get("trajectory")
        for path, name in tool_names(trajectory):
            found = catalog.problem(name)
            if found is not None:
                message, hint = found
                parts = ["trajectory", *path]
                problems.append(lines.problem(qid, parts, message, hint))
        if isinstance(trajectory, dict) and trajectory.get("args") != "ignore":
            for i, call in enumerate(trajectory.get("calls") or []):
                if isinstance(call, dict):
                    at: list[str | int] = ["trajectory", "calls", i]
                    problems += _argument_problems(catalog, call, at, lines, qid, matchers=True)
    return problems


def _argument_problems(
    catalog: ToolCatalog,
    expectation: Mapping[str, object],
    at: list[str | int],
    lines: _DatasetLines,
    qid: str,
    *,
    matchers: bool,
) -> list[Problem]:
    """The arguments an expectation names that its tool does not take; with `matchers`, an
    argument written as a mapping that is no matcher (unknown keywords) where the tool's schema
    says the argument is not an object."""
    tool, args = expectation.get("tool"), expectation.get("args")
    if not isinstance(tool, str) or not isinstance(args, dict) or catalog.problem(tool):
        return []
    out = []
    for argument, value in args.items():
        found = catalog.argument_problem(tool, argument)
        if found is not None:
            out.append(lines.problem(qid, [*at, "args", argument], *found))
            continue
        kind = catalog.argument_type(tool, argument)
        if matchers and isinstance(value, dict) and value and not is_matcher(value):
            if kind in (None, "object"):
                continue  # a literal mapping may be what the argument holds
            unknown = [k for k in value if k not in MATCHER_KEYWORDS]
            close = keyword_suggestion(unknown[0])
            hint = f"did you mean {close!r}? " if close else ""
            out.append(
                lines.problem(
                    qid,
                    [*at, "args", argument, unknown[0]],
                    f"unknown matcher keyword {unknown[0]!r}: argument {argument!r} of "
                    f"{tool!r} is a {kind}, so this mapping can never match it",
                    f"{hint}(matchers: {', '.join(MATCHER_KEYWORDS)})",
                )
            )
    return out


def check_built_graph(target: TargetConfig, graph: object) -> list[Problem]:
    """The agent factory returned what a run can invoke: a compiled graph. An uncompiled
    `StateGraph` (every question would fail with "no attribute 'ainvoke'") or any object
    without `ainvoke`/`invoke` is invalid input at the `agent:` reference."""
    from langgraph.graph import StateGraph

    if isinstance(graph, StateGraph):
        return [
            target.problem(
                ("agent",),
                f"agent factory {target.factory!r} returned an uncompiled StateGraph",
                'return the compiled graph: `return builder.compile(name="my_agent")`',
            )
        ]
    if not (hasattr(graph, "ainvoke") or hasattr(graph, "invoke")):
        return [
            target.problem(
                ("agent",),
                f"agent factory {target.factory!r} returned {type(graph).__name__}, which "
                "cannot be invoked",
                "return a compiled LangGraph graph (`builder.compile(name=...)`)",
            )
        ]
    return []


def built_graph(target: TargetConfig) -> tuple[object, Environment | None]:
    """Build the target's graph once, as a run builds it (with a fresh environment from its
    factory): (graph, environment or None); the caller closes the environment (`close_quietly`).
    Errors are `ConfigError`s located at the factory reference."""
    from ...errors import ConfigError

    factory = target.load_factory()
    make_environment = target.load_environment_factory()
    environment = None
    try:
        if make_environment is not None:
            environment = make_environment()
            return factory(environment=environment), environment
        return factory(), None
    except TracegradeError:
        close_quietly(environment)
        raise
    except Exception as exc:
        close_quietly(environment)
        raise ConfigError(
            f"building the graph failed: {type(exc).__name__}: {exc}",
            hint="pass --no-build to skip the tool-name check for this graph",
            **target.where("agent"),
        ) from exc


def close_quietly(environment: object) -> None:
    close = getattr(environment, "close", None)
    if callable(close):
        close()


def target_catalog(target: TargetConfig) -> ToolCatalog:
    """The `ToolCatalog` of the target's graph, built once as a run builds it."""
    from ...capture.toolcatalog import tool_catalog

    graph, environment = built_graph(target)
    try:
        return tool_catalog(graph)
    finally:
        close_quietly(environment)


def check_graph(
    target: TargetConfig, dataset_path: Path, questions: Sequence[Question], graph: object
) -> tuple[list[Problem], list[str]]:
    """What only the built graph can tell, for `validate` and `run` alike: the factory returned
    a compiled graph, and every tool, `after` and argument name the questions' expectations use
    is one the graph has. (problems, notes on what could not be checked)."""
    from ...capture.toolcatalog import tool_catalog

    problems = check_built_graph(target, graph)
    if problems:
        return problems, []
    problems = check_world(target, dataset_path, questions, graph)
    if not (target.tools or any(_expects_tools(q) for q in questions)):
        return problems, []
    catalog = tool_catalog(graph)
    if not catalog.complete:
        if target.tools or any(getattr(q, "tools", None) for q in questions):
            # an override that cannot reach the tools would test nothing: never silently
            problems.append(
                target.problem(
                    ("agent",),
                    "tools: overrides need the graph's tools in a ToolNode: "
                    + "; ".join(catalog.notes),
                    "run the tools through langgraph.prebuilt.ToolNode",
                )
            )
        notes = [f"{target.name}: tool names not checked: {n}" for n in catalog.notes]
        return problems, notes
    for name in target.tools:
        found = catalog.problem(name)
        if found is not None:
            problems.append(target.problem(("tools", name), *found))
    return problems + check_expected_tools(dataset_path, questions, catalog), []


def check_run_graph(
    target: TargetConfig, questions: Sequence[Question], shared: Agent | None
) -> list[Problem]:
    """`check_graph` as `run` calls it (CI recipes call only `run`): on the graph every question
    shares, or on one built for the check when each question builds its own. A factory that
    raises here is left to the run, where it errors each question it is built for."""
    graph: object
    environment: Environment | None
    if shared is not None:
        graph, environment = shared, None
    else:
        try:
            graph, environment = built_graph(target)
        except TracegradeError:
            return []
    try:
        return check_graph(target, target.dataset, questions, graph)[0]
    finally:
        close_quietly(environment)


def _expects_tools(question: Question) -> bool:
    row = question.row() if hasattr(question, "row") else dict(question)
    return bool(row.get("expected_tools") or row.get("trajectory") or row.get("tools"))


def check_world(
    target: TargetConfig, dataset_path: Path, questions: Sequence[Question], graph: object
) -> list[Problem]:
    """Every `state:` key a question seeds is a key of the graph's state, and every
    `start_at:` names one of its nodes; each at its line, with a did-you-mean."""
    seeded = [q for q in questions if getattr(q, "state", None) or getattr(q, "start_at", None)]
    if not seeded:
        return []
    lines = _DatasetLines(dataset_path)
    keys = _state_keys(graph)
    nodes = sorted(n for n in getattr(graph, "nodes", {}) if not n.startswith("__"))
    problems = []
    for question in seeded:
        qid = str(question.id)
        for key in question.state or {}:
            if key == "messages":
                problems.append(
                    lines.problem(qid, ["state", key], "state: messages are the input", None)
                )
            elif keys is not None and key not in keys:
                close = suggest(key, keys)
                hint = f"did you mean {close!r}? " if close else ""
                problems.append(
                    lines.problem(
                        qid,
                        ["state", key],
                        f"the graph's state has no key {key!r}",
                        f"{hint}(its keys: {', '.join(sorted(keys))})",
                    )
                )
        start = question.start_at
        if start is not None and start not in nodes:
            close = suggest(start, nodes)
            hint = f"did you mean {close!r}? " if close else ""
            problems.append(
                lines.problem(
                    qid,
                    ["start_at"],
                    f"the graph has no node {start!r}",
                    f"{hint}(its nodes: {', '.join(nodes)})",
                )
            )
    return problems


def _state_keys(graph: object) -> set[str] | None:
    """The keys of a graph's input state, or None when it cannot be read."""
    if not isinstance(graph, InputSchema):
        return None
    try:
        properties = graph.get_input_jsonschema().get("properties")
    except Exception:  # a schema LangGraph cannot render: check nothing
        return None
    return set(properties) - {"messages"} if isinstance(properties, dict) else None
