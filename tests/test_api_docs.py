"""docs/api.md's examples run as written: every ```python block, in order, in one namespace,
from the root of a copy of the checkout's examples and reference agents (so the runs it makes
land in the copy). The blocks carry their own assertions; a block that raises fails here."""

from __future__ import annotations

import re
from pathlib import Path

from tests.runs_support import copy_examples

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "api.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_api_page_has_examples_of_every_function():
    text = "\n".join(python_blocks())
    for name in ("run(", "arun(", "evaluate(", "capture(", "assert_tool_calls(", "Selection("):
        assert name in text, f"docs/api.md has no example calling {name}"


def test_the_api_examples_run_as_written(tmp_path, monkeypatch):
    copy_examples(tmp_path)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "api_docs"}
    for number, block in enumerate(python_blocks(), 1):
        code = compile(block, f"docs/api.md block {number}", "exec")
        exec(code, namespace)
    runs = [p for p in (tmp_path / "runs").iterdir() if (p / "identity.json").is_file()]
    assert len(runs) >= 6  # run x3, arun, evaluate x3: each its own run directory


def reference_names() -> list[str]:
    """Every name in the first column of docs/api.md's reference table."""
    text = DOC.read_text()
    section = text.split("## Reference: every public name", 1)[1].split("\n## ", 1)[0]
    names = []
    for line in section.splitlines():
        if line.startswith("| `"):
            names += re.findall(r"`([^`]+)`", line.split("|")[1])
    return names


def test_every_public_name_is_documented_and_every_documented_name_is_public():
    import tracegrade

    documented = reference_names()
    assert len(documented) == len(set(documented)), "a name is listed twice"
    assert sorted(documented) == sorted(tracegrade.__all__), (
        f"undocumented: {sorted(set(tracegrade.__all__) - set(documented))}; "
        f"documented but not in __all__: {sorted(set(documented) - set(tracegrade.__all__))}"
    )


def test_the_examples_import_only_public_names():
    import tracegrade

    imported = set()
    for block in python_blocks():
        for names in re.findall(r"^from tracegrade import \(?([^)\n]+)", block, re.M):
            imported |= {n.strip() for n in names.split(",") if n.strip()}
    assert imported and imported <= set(tracegrade.__all__), imported - set(tracegrade.__all__)
