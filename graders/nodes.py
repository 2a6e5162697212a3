"""`nodes_grader`: the path through the graph against a question's `nodes`.

```yaml
nodes:
  match: superset          # strict | unordered | subset | superset (default)
  path: [router, refund_agent]      # or steps: [[...], [...]], one list per invocation
  subgraphs: true          # also the nodes inside subgraphs (`refund_agent:tools`)
```

The record's node runs come from LangGraph's callback metadata (`tracegrade.graph_path`). A
subgraph's node is named `<subgraph node>:<node>` as agentevals names it; an invocation that
ended paused on an interrupt gets a `__interrupt__` step at its end; `__start__` is ignored on
both sides (LangGraph starts every graph there, and runs it without a callback).

- strict: the same nodes in the same order (per invocation with `steps`); the nodes of one
  superstep ran as parallel branches and match in any order among themselves;
- unordered: the same nodes, as many times each, in any order;
- subset: every node that ran is expected (as many times); superset: every expected node ran.

Binary: 1 or 0; a failure shows the path the run took.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..graph_path import NodeRun
from ..inputs.blocks.checks import nodes_problems
from ..records import GradeResult, ToolRecord
from .base import Grader
from .trajectory.grader import record_in

__all__ = ["GRADERS", "NodesGrader", "match_nodes", "node_of", "node_steps", "shown_path"]

INTERRUPT = "__interrupt__"
START = "__start__"


def node_steps(record: ToolRecord, *, subgraphs: bool = True) -> list[list[list[str]]]:
    """The path as invocations, each a list of groups (parallel nodes), each a list of paths."""
    out: dict[int, list[tuple[Any, list[str]]]] = {}
    for node in sorted(record.nodes, key=lambda n: (n.invocation, n.start_ns, n.seq)):
        if node.name == START or (node.namespace and not subgraphs):
            continue
        groups = out.setdefault(node.invocation, [])
        if groups and groups[-1][0] == node.group:
            groups[-1][1].append(node.path)
        else:
            groups.append((node.group, [node.path]))
    for invocation, groups in out.items():
        if _paused(record.nodes, invocation):
            groups.append((None, [INTERRUPT]))
    return [[names for _, names in out[i]] for i in sorted(out)]


def node_of(call: Any, nodes: Sequence[NodeRun]) -> str | None:
    """The path of the innermost node of the call's agent that was running when the call
    started (`refund_agent:tools`); None when no node run holds it."""
    best = None
    for node in nodes:
        if node.agent != call.agent or node.start_ns > call.start_ns:
            continue
        if node.end_ns and node.end_ns < call.start_ns:
            continue
        if best is None or node.start_ns >= best.start_ns:
            best = node
    return best.path if best is not None else None


def _paused(nodes: Sequence[NodeRun], invocation: int) -> bool:
    return any(n.invocation == invocation and n.outcome == "interrupted" for n in nodes)


def shown_path(steps: list[list[list[str]]]) -> str:
    """`router -> refund_agent -> {a | b}`; invocations separated by ` || `."""
    if not steps:
        return "(no node ran)"
    return " || ".join(
        " -> ".join(g[0] if len(g) == 1 else "{" + " | ".join(g) + "}" for g in invocation)
        for invocation in steps
    )


def _strict(actual: list[list[str]], expected: list[str]) -> bool:
    at = 0
    for group in actual:
        chunk = expected[at : at + len(group)]
        if Counter(chunk) != Counter(group):
            return False
        at += len(group)
    return at == len(expected)


def match_nodes(steps: list[list[list[str]]], spec: Mapping[str, Any]) -> tuple[bool, str]:
    """(passed, why it failed) for the path `steps` against a `nodes` block."""
    mode = spec.get("match", "superset")
    if "steps" in spec:
        expected_steps = [[n for n in s if not _start(n)] for s in spec["steps"]]
    else:
        expected_steps = [[n for n in spec["path"] if not _start(n)]]
    flat_expected = [n for s in expected_steps for n in s]
    flat_actual = [n for inv in steps for g in inv for n in g]
    if mode == "strict":
        if "steps" in spec:
            if len(steps) != len(expected_steps):
                return False, (
                    f"expected {len(expected_steps)} invocation(s), the run had {len(steps)}"
                )
            ok = all(_strict(a, e) for a, e in zip(steps, expected_steps, strict=True))
        else:
            ok = _strict([g for inv in steps for g in inv], flat_expected)
        return ok, "" if ok else "not the same nodes in the same order"
    have, want = Counter(flat_actual), Counter(flat_expected)
    missing = want - have
    extra = have - want
    parts = []
    if mode in ("unordered", "superset") and missing:
        parts.append("expected but did not run: " + ", ".join(_times(missing)))
    if mode in ("unordered", "subset") and extra:
        parts.append("ran but not expected: " + ", ".join(_times(extra)))
    return not parts, "; ".join(parts)


def _start(name: str) -> bool:
    """`__start__` or a subgraph's `inner:__start__`: ignored (no callback ever shows it)."""
    return name.rsplit(":", 1)[-1] == START


def _times(counts: Counter) -> list[str]:
    return [n if k == 1 else f"{n} (x{k})" for n, k in counts.items()]


class NodesGrader(Grader):
    """Checks which graph nodes ran against the question's `nodes`."""

    id = "nodes_grader"
    label = "Graph nodes"
    description = (
        "Deterministic: the path through the graph (LangGraph nodes, subgraph nodes, parallel "
        "branches, interrupts) against `nodes` (strict, unordered, subset, superset)."
    )
    needs = "`nodes` (required, else skips)"
    owns = ("nodes",)
    evidence = ("tool_calls",)
    min_score = 0.0
    max_score = 1.0
    observes_actions = True
    binary = True

    def grade(self, input: str, response: str, context: Mapping[str, Any]) -> GradeResult:
        spec = context.get("nodes")
        if spec is None:
            return self.result(None, "no `nodes` for this question")
        problems = nodes_problems(spec)
        if problems:
            pointer, message = problems[0]
            return self.result(0.0, f"setup failure: nodes{pointer}: {message}")
        record = record_in(self, context, "a graph path is never read from the response text")
        if isinstance(record, GradeResult):
            return record
        if not record.nodes:
            return self.result(
                0.0,
                "the record holds no graph path (not a LangGraph graph, or its trace carried "
                "no node metadata)",
            )
        steps = node_steps(record, subgraphs=spec.get("subgraphs", True))
        ok, why = match_nodes(steps, spec)
        mode = spec.get("match", "superset")
        path = shown_path(steps)
        details = {"source": "record", "match": mode, "path": steps}
        if ok:
            return self.result(1.0, f"nodes match ({mode}); path: {path}", details=details)
        return self.result(0.0, f"nodes ({mode}): {why}; path: {path}", details=details)


GRADERS: list[type[Grader]] = [NodesGrader]
