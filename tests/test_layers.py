"""The floors of the design hold: a module imports only from its own room or from floors below
(docs/interfaces.md "Layout"). Checked on the source, so an upward import fails CI, not review."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# room -> floor; a module's room is the longest prefix listed here.
FLOORS: dict[str, int] = {
    "tracegrade.errors": 1,
    "tracegrade.records": 1,
    "tracegrade.canonical": 1,
    "tracegrade.graph_path": 1,
    "tracegrade.toolspec": 1,
    "tracegrade.redaction": 1,
    "tracegrade.otel": 1,
    "tracegrade.environment": 1,
    "tracegrade.lazy": 1,
    "tracegrade._version": 1,
    "tracegrade.usercode": 1,
    "tracegrade.cost": 1,
    "tracegrade.world": 1,
    "tracegrade.inputs": 2,
    "tracegrade.capture": 2,
    "tracegrade.judging": 2,
    "tracegrade.graders": 3,
    # the run, in rooms named for what they hold
    "tracegrade.verdicts": 4,
    "tracegrade.assertions": 4,
    "tracegrade.rundir": 5,
    "tracegrade.execution": 6,
    "tracegrade.comparison": 6,
    "tracegrade.curation": 6,
    "tracegrade.traces": 7,  # traces made outside tracegrade, graded into a run (over execution)
    "tracegrade.reports": 7,
    "tracegrade.app": 8,  # `tracegrade serve`'s web app, over reports, curation and the stores
    "tracegrade.ci": 8,  # CI providers: annotations, step summary, sticky comment, Code Quality
    "tracegrade.cli": 9,
    "tracegrade.api": 9,
    "tracegrade.pytest_plugin": 10,
    "tracegrade.__main__": 10,  # `python -m tracegrade`: the entry point above the CLI
}
SCHEMAS = "tracegrade.schemas"  # the JSON Schemas: package data, no code
FACADE = "tracegrade"  # the lazy facade names every floor; it imports nothing at import time


def room_of(module: str) -> str | None:
    matches = [r for r in FLOORS if module == r or module.startswith(r + ".")]
    return max(matches, key=len) if matches else None


def package_dirs() -> dict[str, Path]:
    """The folders the package's code comes from, as pyproject.toml maps them (`tracegrade` from
    harness/, `tracegrade.graders` from graders/); the schemas' folder holds data, no code."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"
    ]
    return {package: ROOT / folder for package, folder in mapping.items() if package != SCHEMAS}


def modules() -> list[tuple[str, Path]]:
    found = []
    dirs = package_dirs()
    for package, folder in dirs.items():
        for path in sorted(folder.rglob("*.py")):
            parts = (*package.split("."), *path.relative_to(folder).with_suffix("").parts)
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            # a module belongs to the longest mapped package holding it (graders/ is its own)
            if max((p for p in dirs if name == p or name.startswith(p + ".")), key=len) == package:
                found.append((name, path))
    return found


def imports_of(path: Path, module: str) -> list[tuple[str, int]]:
    """Every module `path` imports, relative imports resolved against `module`."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            out.append((source, node.lineno))
            # `from . import semconv` imports the submodule tracegrade.otel.semconv
            out += [(f"{source}.{a.name}", node.lineno) for a in node.names]
    return out


@pytest.mark.parametrize("module,path", modules(), ids=lambda v: str(v))
def test_the_package_imports_itself_relatively(module, path):
    # One package, `tracegrade`: its modules never import the source folders' names (`harness`,
    # `graders`), which are not installed, nor themselves by absolute name (httpx's style, and
    # what keeps a user's own `graders.py` from shadowing anything).
    tree = ast.parse(path.read_text(), filename=str(path))
    absolute = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        absolute += [
            f"{path.relative_to(ROOT)}:{node.lineno} {n}"
            for n in names
            if n.split(".")[0] in ("harness", "graders", "tracegrade")
        ]
    assert not absolute, "\n".join(absolute)


@pytest.mark.parametrize("module,path", modules(), ids=lambda v: str(v))
def test_no_module_imports_from_a_higher_floor(module, path):
    if module == FACADE:
        return
    own = room_of(module)
    assert own is not None, f"{module} is in no room: add it to FLOORS and docs/interfaces.md"
    upward = []
    for target, line in imports_of(path, module):
        room = room_of(target)
        if room is None or room == own or target == FACADE:
            continue
        same_floor = FLOORS[room] == FLOORS[own] and FLOORS[own] > 1  # floor 1: one room of files
        if (FLOORS[room] > FLOORS[own] or same_floor) and not room.startswith(own + "."):
            upward.append(
                f"{path.relative_to(ROOT)}:{line} imports {target} (floor {FLOORS[room]})"
            )
    assert not upward, f"{module} is on floor {FLOORS[own]}:\n" + "\n".join(upward)


def test_the_layer_check_sees_an_upward_import(tmp_path):
    # The check itself can fail: a floor-2 module importing the runner is caught.
    bad = tmp_path / "bad.py"
    bad.write_text("from ..execution.question.runner import arun_target\n")
    targets = [t for t, _ in imports_of(bad, "tracegrade.inputs.bad")]
    assert any(FLOORS[room_of(t)] > FLOORS["tracegrade.inputs"] for t in targets if room_of(t))


def import_graph() -> dict[str, set[str]]:
    """module -> the package's modules it imports (relative imports resolved; imports inside
    functions count: a circle through a lazy import is still a circle)."""
    known = {name for name, _ in modules()}
    graph: dict[str, set[str]] = {}
    for name, path in modules():
        graph[name] = {t for t, _ in imports_of(path, name) if t in known and t != name}
        graph[name].discard(FACADE)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of `graph`: its strongly connected components of more than one
    module (Tarjan's algorithm, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_two_modules_import_each_other():
    # A circle (lifecycle -> workers -> lifecycle) makes import order matter and hides which
    # module owns what; the pieces both sides need move down instead.
    assert circles(import_graph()) == []


def test_the_circle_check_sees_a_planted_circle():
    graph = import_graph()
    graph["tracegrade.execution.run.services"].add("tracegrade.execution.run.lifecycle")
    assert any(
        {"tracegrade.execution.run.lifecycle", "tracegrade.execution.run.services"} <= set(c)
        for c in circles(graph)
    )
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert circles({"a": {"b"}, "b": {"a"}, "c": {"c"}}) == [["a", "b"]]


MAX_MODULES_PER_FOLDER = 15


def crowded_folders(roots: list[Path], limit: int = MAX_MODULES_PER_FOLDER) -> list[str]:
    """The folders under `roots` holding more than `limit` modules (`__init__.py` counts)."""
    folders = {p.parent for root in roots for p in root.rglob("*.py")}
    counts = {f: len(list(f.glob("*.py"))) for f in folders if "__pycache__" not in f.parts}
    return [f"{f}: {n} modules" for f, n in sorted(counts.items()) if n > limit]


def test_every_folder_holds_fifteen_modules_or_fewer():
    # A folder of more than 15 modules stops saying what it does (execution/ at 26, traces/ at
    # 20): split it by what its modules do, in subpackages named for that.
    assert crowded_folders(list(package_dirs().values())) == []


def test_the_folder_check_counts_modules(tmp_path):
    folder = tmp_path / "pkg"
    (folder / "sub").mkdir(parents=True)
    for i in range(15):
        (folder / f"m{i}.py").write_text("")
    (folder / "sub" / "__init__.py").write_text("")
    (folder / "notes.md").write_text("")  # not a module
    assert crowded_folders([folder]) == []
    (folder / "__init__.py").write_text("")  # the 16th
    assert crowded_folders([folder]) == [f"{folder}: 16 modules"]
