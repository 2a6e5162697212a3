"""Counts of the core's record types, field-by-field copies and grader-spec declarations.

Prints three figures for the package sources (`harness/`, `graders/`), read from the code with
`ast` (nothing is imported):

- record types: classes that hold one question's result or one grader's verdict (by name);
- copy sites: a call that builds a record or verdict (or calls the pass rule) from another
  object field by field (four or more keyword arguments `name=x.name` or `name=x.other` read
  from one object `x`);
- spec declarations: a class body, a function signature or a dict literal that names three or
  more of a grader's counting fields (weight, must_pass, threshold, samples).

Run: `python bench/core_types.py` (from the repository root).
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC_FIELDS = {"weight", "must_pass", "threshold", "samples"}
QUESTION_TYPES = {"RunRecord", "QuestionResult", "QuestionAnswer"}
VERDICT_TYPES = {"GradeResult", "GraderVerdict"}


def sources() -> list[Path]:
    out = []
    for folder in ("harness", "graders"):
        out += sorted((ROOT / folder).rglob("*.py"))
    return out


JOINED = (
    QUESTION_TYPES | VERDICT_TYPES | {"GraderSummary", "Attachment", "passes", "pass_bar", "cls"}
)


def callee(call: ast.Call) -> str:
    func = call.func
    return (
        func.id
        if isinstance(func, ast.Name)
        else func.attr
        if isinstance(func, ast.Attribute)
        else ""
    )


def copy_site(call: ast.Call) -> bool:
    if callee(call) not in JOINED:
        return False
    readers: Counter[str] = Counter()
    for kw in call.keywords:
        value = kw.value
        while isinstance(value, ast.Call) and value.args:  # list(x.tags), dict(g.details)
            value = value.args[0]
        if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name):
            readers[value.value.id] += 1
    return bool(readers) and max(readers.values()) >= 4


def declares_spec(node: ast.AST) -> bool:
    names: set[str] = set()
    if isinstance(node, ast.ClassDef):
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                names.add(item.target.id)
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        args = node.args
        names = {a.arg for a in [*args.args, *args.kwonlyargs]}
    elif isinstance(node, ast.Dict):
        names = {
            k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
        }
    elif isinstance(node, ast.Tuple):
        names = {
            e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        }
    return len(names & SPEC_FIELDS) >= 3


def main() -> int:
    types: dict[str, list[str]] = {"question": [], "verdict": []}
    copies: list[str] = []
    specs: list[str] = []
    for path in sources():
        tree = ast.parse(path.read_text(), filename=str(path))
        rel = path.relative_to(ROOT)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                if node.name in QUESTION_TYPES:
                    types["question"].append(f"{node.name} ({rel})")
                if node.name in VERDICT_TYPES:
                    types["verdict"].append(f"{node.name} ({rel})")
            if isinstance(node, ast.Call) and copy_site(node):
                copies.append(f"{rel}:{node.lineno}")
            if declares_spec(node):
                specs.append(f"{rel}:{node.lineno}")
    print(f"question record types: {len(types['question'])}: {', '.join(types['question'])}")
    print(f"grader verdict types:  {len(types['verdict'])}: {', '.join(types['verdict'])}")
    print(f"field-by-field copy sites: {len(copies)}")
    for site in copies:
        print(f"  {site}")
    print(f"grader spec declarations: {len(specs)}")
    for site in specs:
        print(f"  {site}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
