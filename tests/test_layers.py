"""The floors of the design hold: a module imports only from its own room or from floors below
(docs/interfaces.md "Layout"). Checked on the source, so an upward import fails CI, not review."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# room -> floor; a module's room is the longest prefix listed here.
FLOORS: dict[str, int] = {
    "harness.errors": 1,
    "harness.records": 1,
    "harness.redaction": 1,
    "harness.semconv": 1,
    "harness.environment": 1,
    "harness.lazy": 1,
    "harness.otlp": 1,
    "harness.inputs": 2,
    "harness.capture": 2,
    "harness.judging": 2,
    "graders": 3,
    "harness.runs": 4,
    "harness.assertions": 4,
    "harness.reports": 5,
    "harness.cli": 6,
    "harness.api": 6,
    "harness.pytest_plugin": 7,
    "harness.__main__": 7,  # `python -m harness`: the entry point above the CLI
}
FACADE = "harness"  # the lazy facade names every floor; it imports nothing at import time


def room_of(module: str) -> str | None:
    matches = [r for r in FLOORS if module == r or module.startswith(r + ".")]
    return max(matches, key=len) if matches else None


def modules() -> list[tuple[str, Path]]:
    found = []
    for package in ("harness", "graders"):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found.append((name, path))
    return found


def imports_of(path: Path, module: str) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.module, node.lineno))
            # `from harness import semconv` imports the submodule harness.semconv
            out += [(f"{node.module}.{a.name}", node.lineno) for a in node.names]
    return out


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
    bad.write_text("from harness.runs.runner import arun_target\n")
    targets = [t for t, _ in imports_of(bad, "harness.inputs.bad")]
    assert any(FLOORS[room_of(t)] > FLOORS["harness.inputs"] for t in targets if room_of(t))
