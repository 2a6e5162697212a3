"""Test import lines that reach into an internal module for a name the public API exports.

`from tracegrade.x.y import N` where `tracegrade.__all__` (or the public `tracegrade.graders`
package's, for a module under it) exports the same object `N`: the test should import it
from there. Prints each as `path:line: module.N -> public`, then the count; `--fix` rewrites
them. Exit 1 when any is found (without --fix)."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

PUBLIC = ("tracegrade.graders", "tracegrade")
"""The public packages, the nearest first."""


def _exports(package: str) -> dict[str, object]:
    module = importlib.import_module(package)
    return {name: getattr(module, name) for name in getattr(module, "__all__", ())}


def _public_home(module: str, name: str, exports: dict[str, dict[str, object]]) -> str | None:
    """The nearest public package (an ancestor of `module`, or the root) exporting `name` as
    the same object `module` has."""
    try:
        value = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None
    for package in PUBLIC:
        if package != "tracegrade" and not module.startswith(package + "."):
            continue
        if name in exports[package] and exports[package][name] is value:
            return package
    return None


def find(paths: list[Path]) -> list[tuple[Path, ast.ImportFrom, list[tuple[str, str]]]]:
    """Each `from tracegrade.<internal> import ...` line with the (name, public package) pairs
    it could import publicly."""
    exports = {p: _exports(p) for p in PUBLIC}
    found = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            if not node.module.startswith("tracegrade.") or node.module in PUBLIC:
                continue
            movable = [
                (alias.name, home)
                for alias in node.names
                if (home := _public_home(node.module, alias.name, exports)) is not None
            ]
            if movable:
                found.append((path, node, movable))
    return found


def rewrite(path: Path, found: list[tuple[ast.ImportFrom, list[tuple[str, str]]]]) -> None:
    """Each found line split: its public names imported from their public package, the rest
    left where they were (`ruff check --fix` merges the imports after)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for node, movable in sorted(found, key=lambda f: -f[0].lineno):
        indent = " " * node.col_offset
        moved = dict(movable)
        kept = [a for a in node.names if a.name not in moved]
        out = []
        if kept:
            names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in kept)
            out.append(f"{indent}from {node.module} import {names}\n")
        for home in sorted(set(moved.values())):
            names = ", ".join(
                a.name + (f" as {a.asname}" if a.asname else "")
                for a in node.names
                if moved.get(a.name) == home
            )
            out.append(f"{indent}from {home} import {names}\n")
        end = node.end_lineno or node.lineno
        lines[node.lineno - 1 : end] = out
    path.write_text("".join(lines), encoding="utf-8")


def main(argv: list[str]) -> int:
    fix = "--fix" in argv
    roots = [Path(a) for a in argv if not a.startswith("--")] or [Path("tests")]
    paths = sorted(p for r in roots for p in ([r] if r.is_file() else r.rglob("*.py")))
    found = find(paths)
    for path, node, movable in found:
        for name, home in movable:
            print(f"{path}:{node.lineno}: {node.module}.{name} -> {home}")
    print(f"{len(found)} import line(s), {sum(len(m) for _, _, m in found)} name(s)")
    if fix:
        for path in sorted({p for p, _, _ in found}):
            rewrite(path, [(n, m) for p, n, m in found if p == path])
    return 1 if found and not fix else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
