"""Validation is the run's pre-flight: whatever `run` rejects, `validate` rejects first, both
with file, line and key and a did-you-mean, and nothing is written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from tests.runs_support import QUESTIONS, write_project
from tracegrade import load_config
from tracegrade.cli import main
from tracegrade.execution.run.preflight import preflight
from tracegrade.inputs.config import load_object


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out + err


@pytest.fixture
def in_dir(tmp_path: Path):
    old = Path.cwd()
    os.chdir(tmp_path)
    yield tmp_path
    os.chdir(old)


def both(capsys, config: Path) -> tuple[tuple[int, str], tuple[int, str]]:
    """validate's and run's answers on the same config."""
    return cli(capsys, "validate", str(config)), cli(capsys, "run", "--config", str(config))


@pytest.mark.parametrize(
    "graders,line,pointer,message,hint",
    [
        (
            ["state_grade"],
            10,
            "/targets/t/graders/0",
            "unknown grader 'state_grade'",
            "'state_grader'",
        ),
        (
            [{"id": "tool_usage_grader", "must_pas": True}],
            11,
            "/targets/t/graders/0/must_pas",
            "grader 'tool_usage_grader' has no option 'must_pas'",
            "did you mean 'must_pass'?",
        ),
        (
            [{"id": "contains", "match_onn": ["expected", "keyword"]}],
            11,
            "/targets/t/graders/0/match_onn",
            "grader 'contains' has no option 'match_onn'",
            "did you mean 'match_on'?",
        ),
        (
            [{"id": "exact_mach"}],
            10,
            "/targets/t/graders/0/id",
            "unknown grader 'exact_mach'",
            "did you mean 'exact_match'?",
        ),
    ],
    ids=["unknown-id", "unknown-option", "code-grader-option", "unknown-id-in-mapping"],
)
def test_grader_typos_are_rejected_alike_by_validate_and_run(
    capsys, tmp_path: Path, graders, line, pointer, message, hint
) -> None:
    config = write_project(tmp_path, target={"graders": graders})
    (vcode, verr), (rcode, rerr) = both(capsys, config)
    where = f"{config}:{line}: at {pointer}: {message}"
    assert vcode == 4 and where in verr and hint in verr, verr
    assert rcode == 4 and where in rerr and hint in rerr, rerr
    assert not (tmp_path / "runs").exists()


def test_missing_factory_attribute_suggests_the_modules_callables(capsys, tmp_path: Path) -> None:
    config = write_project(tmp_path, target={"agent": "agent.py:build_graf"})
    (vcode, verr), (rcode, rerr) = both(capsys, config)
    for code, err in ((vcode, verr), (rcode, rerr)):
        assert code == 4
        assert f"{config}:5: at /targets/t/agent: 'agent.py' has no attribute 'build_graf'" in err
        assert "did you mean 'build_graph'?" in err


def test_factory_attribute_with_nothing_close_lists_the_callables(tmp_path: Path) -> None:
    write_project(tmp_path)
    from tracegrade import ConfigError

    with pytest.raises(ConfigError) as info:
        load_object("agent.py:zzz", base_dir=tmp_path)
    assert "build_graph" in (info.value.hint or "")


def test_dangling_rubric_ref_names_the_dataset_line(capsys, tmp_path: Path) -> None:
    (tmp_path / "rubrics").mkdir()
    row = {"id": "r1", "input": "weather in Rome?", "rubric_ref": "rubric/nope@1"}
    config = write_project(tmp_path, config={"rubrics": "rubrics"}, extra_questions=[row])
    dataset = tmp_path / "data" / "questions.yaml"
    line = next(
        n for n, text in enumerate(dataset.read_text().splitlines(), 1) if "rubric/nope@1" in text
    )
    (vcode, verr), (rcode, rerr) = both(capsys, config)
    for code, err in ((vcode, verr), (rcode, rerr)):
        assert code == 4
        assert f"{dataset}:{line}: question 'r1': at /questions/2/rubric_ref:" in err
        assert "no rubric 'nope'" in err
    assert not (tmp_path / "runs").exists()


def test_misspelt_expected_tool_is_rejected_with_did_you_mean(capsys, tmp_path: Path) -> None:
    row = {
        "id": "never",
        "input": "weather in Rome?",
        "expected_tools": [
            {"tool": "lokup", "should_run": False},
            {"tool": "helper:stal", "should_run": True, "after": "lookup"},
        ],
    }
    config = write_project(tmp_path, extra_questions=[row])
    code, err = cli(capsys, "validate", str(config))
    dataset = tmp_path / "data" / "questions.yaml"
    assert code == 4
    assert f"{dataset}:" in err
    assert (
        "question 'never': at /questions/2/expected_tools/0/tool: the target's graph has no tool "
        "'lokup' (did you mean 'lookup'?)"
    ) in err
    assert (
        "at /questions/2/expected_tools/1/tool: agent 'helper' has no tool 'stal' "
        "(did you mean 'helper:stall'?)"
    ) in err
    assert "expected_tools/1/after" not in err  # `lookup` is a tool of the graph
    # --no-build: the graph is not built, so this is not checked (and it says so)
    code, err = cli(capsys, "validate", "--no-build", str(config))
    assert code == 0, err
    assert "tool names not checked (--no-build)" in err


def test_the_graph_is_built_once_and_its_environment_closed(capsys, tmp_path: Path) -> None:
    config = write_project(
        tmp_path,
        questions=["paris", "rome"],
        target={"environment": "agent.py:make_environment"},
    )
    code, err = cli(capsys, "validate", str(config))
    assert code == 0, err
    built = load_object("agent.py:BUILT", base_dir=tmp_path)
    closed = load_object("agent.py:CLOSED", base_dir=tmp_path)
    assert len(built) == 1 and built[0] is not None
    assert closed == [id(built[0])]


def test_a_graph_that_cannot_be_built_points_at_no_build(capsys, tmp_path: Path) -> None:
    config = write_project(tmp_path, target={"agent": "agent.py:build_chat_model"})
    # a factory that returns no graph: nothing to check, and it says why
    code, err = cli(capsys, "validate", str(config))
    assert code == 0
    assert "tool names not checked" in err
    other = write_project(tmp_path / "other", target={"agent": "agent.py:broken"})
    agent = other.parent / "agent.py"
    agent.write_text(agent.read_text() + "\ndef broken():\n    raise OSError('needs a server')\n")
    config = other
    code, err = cli(capsys, "validate", str(config))
    assert code == 4
    assert "building the graph failed: OSError: needs a server" in err
    assert "--no-build" in err


def test_validate_without_arguments_checks_the_project(capsys, in_dir: Path) -> None:
    write_project(in_dir, target={"graders": ["state_grade"]})
    code, err = cli(capsys, "validate")
    assert code == 4
    assert "tracegrade.yaml:10: at /targets/t/graders/0: unknown grader 'state_grade'" in err
    write_project(in_dir)
    code, out = cli(capsys, "validate")
    assert code == 0, out
    assert "ok: tracegrade.yaml (config, with everything it references)" in out


def test_validate_without_arguments_and_no_config(capsys, in_dir: Path) -> None:
    code, err = cli(capsys, "validate")
    assert code == 4
    assert "tracegrade.yaml: config file not found" in err


def test_preflight_reports_dataset_problems_of_every_target(tmp_path: Path) -> None:
    config = write_project(tmp_path)
    (tmp_path / "data" / "questions.yaml").write_text(
        yaml.safe_dump({"questions": [dict(QUESTIONS["paris"], expected="sunny")]})
    )
    result = preflight(load_config(config), build=False)
    assert [p.pointer for p in result.problems] == ["/questions/0/expected"]
    assert result.problems[0].line == 2
