"""`tracegrade validate`: exit 0 for valid files, 4 naming every problem otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_schema_corpus import INVALID, VALID, rule_of
from tracegrade.cli import main
from tracegrade.cli.inputs import validate as validate_cmd


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["validate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_valid_corpus_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *map(str, VALID))
    assert code == 0, err
    assert err == ""
    for path in VALID:
        assert f"ok: {path} (" in out
    assert "ok: " + str(VALID[0].parent / "dataset-minimal.yaml") + " (1 question)" in out
    # disabled rows are not counted
    assert "dataset-with-files.yaml (1 question)" in out


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_each_invalid_file_exits_4_naming_its_rule(
    capsys: pytest.CaptureFixture[str], path: Path
) -> None:
    code, out, err = run(capsys, str(path))
    assert code == 4
    assert rule_of(path) in err
    assert f"{path}:" in err  # file and line
    assert "ok:" not in out


def test_typo_hint(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "typo.yaml"
    path.write_text("questions:\n  - id: q1\n    input: x\n    expecteed_facts: {a: b}\n")
    code, _, err = run(capsys, str(path))
    assert code == 4
    assert (
        f"{path}:4: question 'q1': at /questions/0/expecteed_facts: unknown key "
        "'expecteed_facts' (did you mean 'expected_facts'?)"
    ) in err


def test_every_problem_of_every_file_is_printed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "input": ""}\n{"id": "b", "input": "x", "split": "dev"}\n')
    good = tmp_path / "good.json"
    good.write_text('{"questions": [{"id": "a", "input": "x"}, {"id": "b", "input": "y"}]}')
    code, out, err = run(capsys, str(bad), str(good))
    assert code == 4
    assert f"{bad}:1: question 'a': at /questions/0/input: input must not be blank" in err
    assert f"{bad}:2: question 'b': at /questions/1/split: split must be one of" in err
    assert f"ok: {good} (2 questions)" in out
    assert "1 of 2 files invalid" in err


def test_missing_file_exits_4(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, str(tmp_path / "absent.yaml"))
    assert code == 4
    assert "file not found" in err


def test_kind_detection() -> None:
    assert validate_cmd.detect_kind({"targets": {}}) == "config"
    assert validate_cmd.detect_kind({"checks": []}) == "rubric"
    assert validate_cmd.detect_kind({"id": "c", "kind": "custom", "criterion": "x"}) == "rubric"
    # a single-check tool-claim file has no criterion
    assert (
        validate_cmd.detect_kind({"id": "c", "version": "1.0.0", "kind": "tool-claim"}) == "rubric"
    )
    assert validate_cmd.detect_kind({"questions": []}) == "dataset"
    assert validate_cmd.detect_kind([{"id": "a"}]) == "dataset"


def test_kind_without_a_validator_is_a_clear_exit_4(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(validate_cmd.VALIDATORS, "config", "tracegrade.no_such_module:validate")
    path = tmp_path / "tracegrade.yaml"
    path.write_text("targets: {}\n")
    code, _, err = run(capsys, str(path))
    assert code == 4
    assert "cannot validate a config file" in err and "not available" in err


def test_kinds_dispatch_to_their_validator(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Path] = []

    def fake(path: Path) -> list:
        seen.append(path)
        return []

    monkeypatch.setattr(validate_cmd, "_validator", lambda kind: fake if kind != "dataset" else 0)
    from tests.runs_support import write_project

    config = write_project(tmp_path / "project")  # a config also gets the run's pre-flight
    rubric = tmp_path / "r.yaml"
    rubric.write_text("checks: []\n")
    code, out, _ = run(capsys, str(config), str(rubric))
    assert code == 0
    assert seen == [config, rubric]
    assert f"ok: {config} (config, with everything it references)" in out
    assert f"ok: {rubric} (rubric)" in out


def test_help_explains_what_and_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["validate", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for fragment in (
        "dataset, config and rubric",
        "Draft 2020-12",
        "0  every file is valid",
        "4  at least one file is invalid",
        "did you mean",
    ):
        assert fragment in out


RUBRIC_CORPUS = Path(__file__).resolve().parents[1] / "schema" / "examples" / "rubrics"


@pytest.mark.parametrize("path", sorted((RUBRIC_CORPUS / "valid").iterdir()), ids=lambda p: p.name)
def test_cli_detects_and_accepts_every_valid_rubric(path, capsys):
    # Single-check Jeval files (tool-claim, escalation) carry no criterion: still rubrics.
    assert main(["validate", str(path)]) == 0
    assert "ok:" in capsys.readouterr().out


@pytest.mark.parametrize(
    "path", sorted((RUBRIC_CORPUS / "invalid").iterdir()), ids=lambda p: p.name
)
def test_cli_rejects_every_invalid_rubric(path):
    assert main(["validate", str(path)]) == 4
