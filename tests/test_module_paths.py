"""Every `tracegrade` module that a test, a benchmark, a script, an example or an agent imports
exists: when modules move between folders, an import of the old path fails here, not in the one
test or benchmark that happens to run it."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("tests", "bench", "scripts", "examples", "agents")


def imports() -> list[tuple[str, list[str], str]]:
    """(module, the names `from module import ...` takes, where) for every import of a
    `tracegrade` module in the folders above; a plain `import` takes no names."""
    found = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "fixtures" in path.parts or "build" in path.parts:
                continue
            try:
                tree = ast.parse(path.read_text(), filename=str(path))
            except (SyntaxError, UnicodeDecodeError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    where = f"{path.relative_to(ROOT)}:{node.lineno}"
                    found += [(a.name, [], where) for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    where = f"{path.relative_to(ROOT)}:{node.lineno}"
                    found.append((node.module, [a.name for a in node.names], where))
    return [f for f in found if f[0].split(".")[0] == "tracegrade"]


def imported_modules() -> list[tuple[str, str]]:
    return [(module, where) for module, _, where in imports()]


def exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def test_every_imported_tracegrade_module_exists():
    missing = [f"{where} imports {name}" for name, where in imported_modules() if not exists(name)]
    assert not missing, "\n".join(missing)


def provides(module: str, name: str) -> bool:
    """`from module import name` works: a submodule of that name, or a name the module has."""
    return exists(f"{module}.{name}") or hasattr(importlib.import_module(module), name)


def test_every_name_imported_from_a_tracegrade_package_exists():
    # `from tracegrade.traces import receiver` names a module too: after a move it is the
    # name, not the package, that is gone.
    missing = [
        f"{where} imports {name} from {module}"
        for module, names, where in imports()
        if exists(module)
        for name in names
        if name != "*" and not provides(module, name)
    ]
    assert not missing, "\n".join(missing)


def test_the_check_sees_a_missing_module():
    assert exists("tracegrade.records")
    assert not exists("tracegrade.execution.no_such_module")
    assert not exists("tracegrade.no_such_folder.runner")
    assert provides("tracegrade.traces", "archive")
    assert provides("tracegrade.records", "ToolRecord")
    assert not provides("tracegrade.traces", "no_such_module")
