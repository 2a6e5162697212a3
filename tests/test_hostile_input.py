"""Hostile source files stay bounded: alias bombs, recursive aliases, deep nesting and bytes
that are not UTF-8 are invalid input (exit 4, with a location), found in bounded time and
memory, before anything runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.runs_support import write_project
from tracegrade import ConfigError, DatasetError, load_dataset
from tracegrade.inputs.sourcefile import load_document
from tracegrade.inputs.sourceparse import ALIAS_EXPANSION_MIN, MAX_DEPTH

LAUGHS = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
    for prev, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)
BOMB = LAUGHS + "questions: *i\n"


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_alias_bomb_is_rejected_naming_the_alias_use(tmp_path: Path) -> None:
    path = write(tmp_path / "bomb.yaml", BOMB)
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    # refused at the alias that crosses the bound, as the file is read: `f`'s row of aliases
    assert info.value.line == 6
    assert info.value.key == "/f/0"
    assert "alias" in info.value.message
    assert "exit_code" and int(info.value.exit_code) == 4


def test_merge_key_bomb_is_rejected(tmp_path: Path) -> None:
    lines = ["a0: &a0 {k0: 1, k1: 2, k2: 3, k3: 4}"]
    for i in range(1, 30):
        lines.append(f"a{i}: &a{i} {{<<: [*a{i - 1}, *a{i - 1}], own{i}: 1}}")
    path = write(tmp_path / "merge.yaml", "\n".join(lines) + "\nquestions: []\n")
    with pytest.raises(DatasetError, match="alias"):
        load_document(path)


def test_modest_alias_use_is_fine(tmp_path: Path) -> None:
    # a shared block reused by every question: aliases are a feature, within the bound
    rows = "".join(f"  - {{id: q{i}, input: hi, expected_tools: *tools}}\n" for i in range(500))
    text = "common: &tools [{tool: lookup, should_run: true, args: {city: Paris}}]\nquestions:\n"
    path = write(tmp_path / "shared.yaml", text + rows)
    doc = load_document(path)
    assert doc.data["questions"][499]["expected_tools"][0]["tool"] == "lookup"
    assert doc.line_of("/questions/499/expected_tools/0/tool") == 502  # the alias use


def test_expansion_bound_grows_with_the_document() -> None:
    # the bound is documented in terms of these constants; keep the docs honest
    docs = Path(__file__).resolve().parents[1] / "docs" / "datasets.md"
    text = docs.read_text(encoding="utf-8")
    assert f"{ALIAS_EXPANSION_MIN:,}" in text
    assert f"{MAX_DEPTH} levels" in text


@pytest.mark.parametrize(
    "text",
    [
        "questions:\n  - &m {id: q1, input: hi, metadata: {self: *m}}\n",
        "a: &m\n  b: *m\nquestions: []\n",
        "a: &m {<<: *m}\nquestions: []\n",
    ],
    ids=["inside-question", "mapping", "merge"],
)
def test_recursive_alias_is_invalid_input(tmp_path: Path, text: str) -> None:
    path = write(tmp_path / "rec.yaml", text)
    with pytest.raises(DatasetError) as info:
        load_document(path)
    assert info.value.line is not None
    assert "recursive" in info.value.message or "alias" in info.value.message


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5_000, 100_000])
@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".yaml"])
def test_deep_nesting_is_invalid_input_with_its_line(
    tmp_path: Path, depth: int, suffix: str
) -> None:
    nested = "[" * depth + "]" * depth
    if suffix == ".jsonl":
        text = '{"id": "a", "input": "x"}\n' + '{"id": "b", "input": ' + nested + "}\n"
        line = 2
    else:
        text = '{"questions":\n ' + nested + "}\n"
        line = 2
    path = write(tmp_path / f"deep{suffix}", text)
    with pytest.raises(DatasetError) as info:
        load_document(path)
    assert "nested deeper than" in info.value.message or "nesting depth" in info.value.message
    assert info.value.line == line


def test_nesting_at_the_limit_is_accepted(tmp_path: Path) -> None:
    # MAX_DEPTH levels in all, the document's own mapping included
    inner = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    path = write(tmp_path / "ok.json", '{"questions": ' + inner + "}")
    assert load_document(path).data["questions"] == json.loads(inner)


def test_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path / "latin1.yaml", b"questions:\n  - id: q1\n    input: caf\xe9\n")
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert info.value.line == 3
    assert "not UTF-8" in info.value.message


def test_config_alias_bomb_is_a_config_error(tmp_path: Path) -> None:
    from tracegrade import load_config

    path = write(tmp_path / "tracegrade.yaml", LAUGHS + "targets: *i\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.line == 6


def _cli(*args: str, cwd: Path, timeout: float = 120) -> tuple[int, str, int]:
    """The real CLI in a child; returns exit code, stderr and the child's peak RSS in MB."""
    code = (
        "import sys\n"
        "from tracegrade.cli import main\n"
        "try:\n    rc = main(sys.argv[1:])\nexcept SystemExit as e:\n    rc = e.code\n"
        # VmHWM is this process image's own peak: ru_maxrss keeps the high-water mark of the
        # pytest process it was forked from across exec, so late in a long suite a small
        # child read as big as pytest.
        "hwm = [x for x in open('/proc/self/status') if x.startswith('VmHWM:')][0]\n"
        "mb = int(hwm.split()[1]) // 1024\n"
        "print(f'PEAK_MB={mb}', file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    peak = int(proc.stderr.rsplit("PEAK_MB=", 1)[1].split()[0])
    return proc.returncode, proc.stderr, peak


@pytest.mark.parametrize("command", ["validate", "run"])
def test_cli_rejects_a_bomb_quickly_in_bounded_memory(tmp_path: Path, command: str) -> None:
    config = write_project(tmp_path)
    write(tmp_path / "data" / "questions.yaml", BOMB)
    args = ["validate", "data/questions.yaml"] if command == "validate" else ["run"]
    code, err, peak_mb = _cli(*args, cwd=tmp_path)
    assert code == 4, err
    assert "questions.yaml:6:" in err
    assert peak_mb < 200, peak_mb  # unbounded, this grows past 2 GB
    assert not (tmp_path / "runs").exists()  # nothing written
    assert config.is_file()


def test_run_rejects_a_recursive_alias_and_writes_nothing(tmp_path: Path) -> None:
    write_project(tmp_path)
    rows = yaml.safe_load((tmp_path / "data" / "questions.yaml").read_text())["questions"]
    text = yaml.safe_dump({"questions": rows}) + "- &m {id: q9, input: hi, metadata: {x: *m}}\n"
    write(tmp_path / "data" / "questions.yaml", text)
    code, err, _ = _cli("run", cwd=tmp_path)
    assert code == 4, err
    assert "recursive YAML alias" in err
    assert not (tmp_path / "runs").exists()
