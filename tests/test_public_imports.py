"""Tests import the public API where one exists (issue 43): a name `tracegrade` (or
`tracegrade.graders`, for a module under it) exports is imported from there, never from the
internal module that defines it, so the tests exercise what users import."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location(
        "public_imports", ROOT / "scripts" / "public_imports.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_test_imports_a_public_name_from_an_internal_module():
    script = _script()
    found = script.find(sorted((ROOT / "tests").rglob("*.py")))
    lines = [
        f"{p.relative_to(ROOT)}:{n.lineno}: {n.module}.{name}" for p, n, m in found for name, _ in m
    ]
    assert not lines, "run: .venv/bin/python scripts/public_imports.py --fix tests\n" + "\n".join(
        lines
    )


def test_the_finder_sees_an_internal_import_and_moves_only_the_public_names(tmp_path):
    script = _script()
    path = tmp_path / "test_x.py"
    path.write_text(
        textwrap.dedent(
            """\
            from tracegrade.graders.base import Grader
            from tracegrade.rundir.store import ResultStore
            from tracegrade.verdicts.result import QuestionResult as QR


            def helper():
                from tracegrade.inputs.config import load_config, parse_gate
            """
        )
    )
    found = script.find([path])
    assert [(n.lineno, m) for _, n, m in found] == [
        (1, [("Grader", "tracegrade.graders")]),
        (3, [("QuestionResult", "tracegrade")]),
        (7, [("load_config", "tracegrade")]),
    ]
    assert script.main(["--fix", str(path)]) == 0
    assert path.read_text() == textwrap.dedent(
        """\
        from tracegrade.graders import Grader
        from tracegrade.rundir.store import ResultStore
        from tracegrade import QuestionResult as QR


        def helper():
            from tracegrade.inputs.config import parse_gate
            from tracegrade import load_config
        """
    )
