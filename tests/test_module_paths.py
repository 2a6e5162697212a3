"""Every `tracegrade` module that a test, a benchmark, a script, an example or an agent imports
exists: when modules move between folders, an import of the old path fails here, not in the one
test or benchmark that happens to run it."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("tests", "bench", "scripts", "examples", "agents")


def imported_modules() -> list[tuple[str, str]]:
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
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                found += [(n, where) for n in names if n.split(".")[0] == "tracegrade"]
    return found


def exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def test_every_imported_tracegrade_module_exists():
    missing = [f"{where} imports {name}" for name, where in imported_modules() if not exists(name)]
    assert not missing, "\n".join(missing)


def test_the_check_sees_a_missing_module():
    assert exists("tracegrade.records")
    assert not exists("tracegrade.execution.no_such_module")
    assert not exists("tracegrade.no_such_folder.runner")
