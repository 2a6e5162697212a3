"""A corpus of hostile inputs, each through the CLI: malformed YAML, wrong types, typos,
duplicates, bombs, deep nesting, non-UTF-8, corrupt stores, missing files and bad flags. Every
case gives its documented exit code and names a location (file and line, or the key or flag).
A representative subset also runs as the real command in a child process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.runs_support import write_project
from tracegrade.cli import main

REPO = Path(__file__).resolve().parents[1]
LAUGHS = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
    for prev, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)
Q = "questions:\n  - id: q1\n    input: hi\n"


@dataclass
class Case:
    name: str
    files: dict[str, str | bytes]
    argv: list[str]
    code: int
    where: str
    """A location the error must name: `{root}` is the project directory."""
    setup: Callable[[Path], None] | None = None
    project: dict = field(default_factory=dict)
    """write_project() options, or {} for no project."""
    real: bool = False
    """Also run as the real command in a child process."""


def _corrupt(name: str) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        assert main(["run", "--config", str(root / "tracegrade.yaml"), "--quiet"]) in (0, 2)
        run_dir = next(p for p in (root / "runs").iterdir() if (p / "identity.json").is_file())
        (run_dir / name).write_text("{not what it should be", encoding="utf-8")
        (root / "RUN").write_text(run_dir.name, encoding="utf-8")

    return setup


P = {"questions": ["paris", "rome"]}
CASES = [
    # malformed YAML / JSON
    Case(
        "yaml-syntax",
        {"d.yaml": Q + "    tags: [unclosed\n"},
        ["validate", "d.yaml"],
        4,
        "(line 4)",
        real=True,
    ),
    Case("yaml-two-documents", {"d.yaml": Q + "---\n" + Q}, ["validate", "d.yaml"], 4, "d.yaml:4"),
    Case("yaml-complex-key", {"d.yaml": "? [a]\n: 1\n"}, ["validate", "d.yaml"], 4, "d.yaml:1"),
    Case(
        "yaml-unknown-tag",
        {"d.yaml": Q + "    criteria: !!python/name:os.system x\n"},
        ["validate", "d.yaml"],
        4,
        "d.yaml:4",
    ),
    Case(
        "json-syntax",
        {"d.json": '{"questions": [{"id": "q1",,}]}'},
        ["validate", "d.json"],
        4,
        "d.json:1",
    ),
    Case(
        "jsonl-bad-line",
        {"d.jsonl": '{"id": "a", "input": "x"}\n{"id": "b", \n'},
        ["validate", "d.jsonl"],
        4,
        "d.jsonl:2",
    ),
    Case("empty-file", {"d.yaml": ""}, ["validate", "d.yaml"], 4, "d.yaml"),
    # wrong types
    Case(
        "input-number",
        {"d.yaml": "questions:\n  - id: q1\n    input: 5\n"},
        ["validate", "d.yaml"],
        4,
        "d.yaml:3",
    ),
    Case(
        "questions-mapping",
        {"d.yaml": "questions: {id: q1}\n"},
        ["validate", "d.yaml"],
        4,
        "d.yaml:1",
    ),
    Case(
        "expected-string",
        {"d.yaml": Q + "    expected: '1879'\n"},
        ["validate", "d.yaml"],
        4,
        "d.yaml:4",
    ),
    Case(
        "config-timeout-string",
        {},
        ["validate", "tracegrade.yaml"],
        4,
        "tracegrade.yaml:",
        project={"target": {"timeout_s": "soon"}},
    ),
    # typos
    Case(
        "question-key-typo",
        {"d.yaml": Q + "    expecteed_facts: {a: b}\n"},
        ["validate", "d.yaml"],
        4,
        "did you mean 'expected_facts'",
        real=True,
    ),
    Case(
        "state-kind-typo",
        {"d.yaml": Q + "    metadata: {state: [{kind: sqll, query: 'SELECT 1', equals: 1}]}\n"},
        ["validate", "d.yaml"],
        4,
        "d.yaml:4",
    ),
    Case(
        "config-key-typo",
        {},
        ["validate"],
        4,
        "tracegrade.yaml:",
        project={"config": {"runs_dirr": "runs"}},
        real=True,
    ),
    Case(
        "grader-id-typo",
        {},
        ["run"],
        4,
        "tracegrade.yaml:10: at /targets/t/graders/0",
        project={**P, "target": {"graders": ["state_grade"]}},
    ),
    Case(
        "grader-option-typo",
        {},
        ["validate"],
        4,
        "did you mean 'must_pass'",
        project={**P, "target": {"graders": [{"id": "tool_usage_grader", "must_pas": True}]}},
    ),
    Case(
        "factory-typo",
        {},
        ["run"],
        4,
        "did you mean 'build_graph'",
        project={**P, "target": {"agent": "agent.py:build_graf"}},
    ),
    Case(
        "expected-tool-typo",
        {},
        ["validate"],
        4,
        "did you mean 'lookup'",
        project={
            **P,
            "extra_questions": [
                {
                    "id": "x",
                    "input": "hi",
                    "expected_tools": [{"tool": "lokup", "should_run": False}],
                }
            ],
        },
    ),
    Case(
        "dangling-rubric-ref",
        {"rubrics/.keep": ""},
        ["run"],
        4,
        "questions.yaml:",
        project={
            **P,
            "config": {"rubrics": "rubrics"},
            "extra_questions": [{"id": "x", "input": "hi", "rubric_ref": "rubric/nope@1"}],
        },
    ),
    # duplicates
    Case(
        "duplicate-key", {"d.yaml": Q + "    input: again\n"}, ["validate", "d.yaml"], 4, "d.yaml:4"
    ),
    Case(
        "duplicate-id",
        {"d.yaml": Q + "  - id: q1\n    input: again\n"},
        ["validate", "d.yaml"],
        4,
        "d.yaml:4",
    ),
    Case(
        "grader-attached-twice",
        {},
        ["validate"],
        4,
        "tracegrade.yaml:",
        project={**P, "target": {"graders": ["tool_usage_grader", "tool_usage_grader"]}},
    ),
    # bombs and deep nesting
    Case(
        "alias-bomb",
        {"d.yaml": LAUGHS + "questions: *i\n"},
        ["validate", "d.yaml"],
        4,
        "d.yaml:6",
        real=True,
    ),
    Case(
        "alias-bomb-run",
        {},
        ["run"],
        4,
        "questions.yaml:6",
        setup=lambda r: (r / "data" / "questions.yaml").write_text(LAUGHS + "questions: *i\n"),
        project=P,
    ),
    Case(
        "recursive-alias",
        {"d.yaml": "questions:\n  - &m {id: q1, input: hi, metadata: {x: *m}}\n"},
        ["validate", "d.yaml"],
        4,
        "d.yaml:2",
        real=True,
    ),
    Case(
        "deep-json",
        {"d.json": '{"questions": ' + "[" * 100_000 + "]" * 100_000 + "}"},
        ["validate", "d.json"],
        4,
        "d.json:1",
        real=True,
    ),
    Case(
        "deep-yaml",
        {"d.yaml": "questions: " + "[" * 150 + "]" * 150 + "\n"},
        ["validate", "d.yaml"],
        4,
        "d.yaml:1",
    ),
    # encoding
    Case(
        "not-utf8",
        {"d.yaml": b"questions:\n  - id: q1\n    input: caf\xe9\n"},
        ["validate", "d.yaml"],
        4,
        "d.yaml:3",
        real=True,
    ),
    # corrupt stores
    Case(
        "corrupt-results",
        {},
        ["grade", "@RUN"],
        4,
        "results.sqlite",
        setup=_corrupt("results.sqlite"),
        project=P,
    ),
    Case(
        "corrupt-identity",
        {},
        ["grade", "@RUN"],
        4,
        "identity.json",
        setup=_corrupt("identity.json"),
        project=P,
    ),
    # missing files
    Case("missing-dataset-arg", {}, ["validate", "nope.yaml"], 4, "nope.yaml"),
    Case("missing-config", {}, ["run"], 4, "tracegrade.yaml", real=True),
    Case(
        "config-dataset-missing",
        {},
        ["validate"],
        4,
        "tracegrade.yaml:",
        project={"target": {"dataset": "data/nope.yaml"}},
    ),
    Case("unknown-run", {}, ["grade", "no-such-run"], 4, "RUN", project=P),
    # bad flags
    Case("unknown-flag", {}, ["validate", "--bogus"], 4, "--bogus", real=True),
    Case("limit-zero", {}, ["run", "--limit", "0"], 4, "--limit", project=P),
    Case("unknown-split", {}, ["run", "--split", "dev"], 4, "--split", project=P),
    Case("unknown-id", {}, ["run", "--id", "pariss"], 4, "did you mean 'paris'", project=P),
    Case("unknown-target", {}, ["run", "--target", "nope"], 4, "/targets", project=P),
]


def prepare(case: Case, root: Path) -> list[str]:
    if case.project:
        options = dict(case.project)
        if "questions" in options:
            options["questions"] = list(options["questions"])
        write_project(root, **options)
    for name, content in case.files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    if case.setup is not None:
        case.setup(root)
    run_id = (root / "RUN").read_text() if (root / "RUN").is_file() else ""
    return [run_id if a == "@RUN" else a for a in case.argv]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_hostile_input(case: Case, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    argv = prepare(case, tmp_path)
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    out, err = capsys.readouterr()
    assert code == case.code, out + err
    assert case.where in out + err, out + err
    assert "Traceback" not in err
    runs = tmp_path / "runs"
    if case.code == 4 and case.argv[0] == "run":  # nothing written by a refused run
        assert not runs.exists() or not any(p.name != "cache" for p in runs.iterdir())


@pytest.mark.parametrize("case", [c for c in CASES if c.real], ids=lambda c: c.name)
def test_hostile_input_real_command(case: Case, tmp_path: Path) -> None:
    argv = prepare(case, tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "tracegrade", *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == case.code, proc.stderr
    assert case.where in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


def test_corpus_covers_every_kind() -> None:
    assert len(CASES) >= 36
    assert len({c.name for c in CASES}) == len(CASES)
