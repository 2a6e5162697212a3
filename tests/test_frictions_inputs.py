"""Frictions a first-time user met with their inputs (issue 45, items 21 and 24): a `resume`
`when:` matcher with an unknown keyword fails validate naming the entry and the key with a
did-you-mean, `x-` extension keys (YAML anchors) are accepted, typos of paths, `--config`
and `--tag` get a did-you-mean, and a key is never suggested a different block."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tracegrade.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _dataset(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "questions.yaml"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("matcher", "key", "suggestion"),
    [
        ("{action: {equals: grant_access}}", "equals", "eq"),
        ("{action: {regexp: '^grant'}}", "regexp", "regex"),
        ("{amount: {maximum: 100}}", "maximum", "max"),
        ("{action: {contain: grant}}", "contain", "contains"),
    ],
)
def test_a_resume_when_matcher_with_an_unknown_keyword_fails_validate_naming_entry_and_key(
    tmp_path, capsys, matcher, key, suggestion
):
    path = _dataset(
        tmp_path,
        f"""\
        questions:
          - id: grant
            input: "Grant Ana access."
            resume:
              - "yes"
              - when: {matcher}
                value: {{approve: true}}
        """,
    )
    assert main(["validate", str(path)]) == 4
    err = capsys.readouterr().err
    assert f"{path}:6:" in err  # the entry's line
    assert "question 'grant'" in err
    assert "/questions/0/resume/1/when/" in err and f"/{key}" in err
    assert f"unknown matcher keyword {key!r}" in err
    assert f"did you mean {suggestion!r}?" in err


def test_a_literal_nested_payload_in_when_is_still_a_literal(tmp_path, capsys):
    path = _dataset(
        tmp_path,
        """\
        questions:
          - id: nested
            input: "Refund it."
            resume:
              - when: {order: {id: A-17, items: 2}}
                value: {approve: true}
        """,
    )
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err


def test_a_key_that_names_something_else_gets_no_suggestion_of_a_different_block(tmp_path, capsys):
    path = _dataset(
        tmp_path,
        """\
        questions:
          - {id: one, input: "hi", user_name: bob, expected_tool: []}
        """,
    )
    assert main(["validate", str(path)]) == 4
    lines = capsys.readouterr().err.splitlines()
    user_name = next(line for line in lines if "'user_name'" in line)
    assert "did you mean" not in user_name  # `user` is the simulated-user block
    typo = next(line for line in lines if "'expected_tool'" in line)
    assert "did you mean 'expected_tools'?" in typo  # a typo still gets one


def test_pricing_errors_show_the_expected_shape(tmp_path, capsys):
    config = tmp_path / "tracegrade.yaml"
    config.write_text(
        textwrap.dedent(
            """\
            version: 1
            pricing:
              models:
                gpt-4o: 2.5
                gpt-4o-mini: {in: 0.15, out: 0.6}
            targets:
              t: {chat_model: m.py:build, dataset: q.yaml}
            """
        )
    )
    assert main(["validate", str(config)]) == 4
    lines = [line for line in capsys.readouterr().err.splitlines() if "/pricing/" in line]
    assert len(lines) >= 3
    for line in lines:
        assert "{input: 2.5, output: 10.0" in line or "did you mean 'output'?" in line, line


def test_x_extension_keys_and_yaml_anchors_are_accepted_in_config_and_dataset(tmp_path, capsys):
    from tests.runs_support import write_project

    config = write_project(tmp_path, questions=["paris"])
    text = config.read_text()
    config.write_text("x-notes: {owner: desk team}\n" + text)
    data = tmp_path / "data" / "questions.yaml"
    data.write_text(
        textwrap.dedent(
            """\
            x-common: &common
              tags: [weather]
              expected: {keyword: sunny}
            questions:
              - id: paris
                input: "weather in Paris?"
                <<: *common
            """
        )
    )
    assert main(["validate", str(config), str(data)]) == 0, capsys.readouterr().err
    assert main(["run", "--config", str(config), "--tag", "weather"]) == 0
    # an x- key is no loophole for a typo of a real key elsewhere
    data.write_text(data.read_text().replace("input:", "inptu:"))
    assert main(["validate", str(data)]) == 4


def test_a_misspelt_file_gets_a_did_you_mean(tmp_path, capsys):
    from tests.runs_support import write_project

    config = write_project(tmp_path, questions=["paris"])
    assert main(["validate", str(tmp_path / "data" / "question.yaml")]) == 4
    wanted = str(tmp_path / "data" / "questions.yaml")
    assert f"did you mean {wanted!r}?" in capsys.readouterr().err
    assert main(["run", "--config", str(tmp_path / "tracegrade.yml")]) == 4
    assert f"did you mean {str(config)!r}?" in capsys.readouterr().err
    # a dataset path misspelt in the config: validate names the key and the likely file
    config.write_text(config.read_text().replace("data/questions.yaml", "data/question.yaml"))
    assert main(["validate", str(config)]) == 4
    err = capsys.readouterr().err
    assert "/targets/t/dataset" in err and "questions.yaml'?" in err


def test_a_misspelt_flag_gets_a_did_you_mean(tmp_path, capsys):
    from tests.runs_support import write_project

    config = write_project(tmp_path, questions=["paris"])
    with pytest.raises(SystemExit) as exited:
        main(["run", "--confg", str(config)])
    assert exited.value.code == 4
    assert "did you mean --config for --confg?" in capsys.readouterr().err


def test_a_tag_typo_gets_a_did_you_mean(tmp_path, capsys):
    from tests.runs_support import QUESTIONS, write_project

    rows = [{**QUESTIONS["paris"], "id": "tagged", "tags": ["refunds"]}]
    config = write_project(tmp_path, questions=["paris"], extra_questions=rows)
    assert main(["run", "--config", str(config), "--tag", "refnds"]) == 5
    assert "no question has tag 'refnds' (did you mean --tag refunds?)" in (capsys.readouterr().err)
    # one tag right, one misspelt: the run goes on and says so
    assert main(["run", "--config", str(config), "--tag", "refunds", "--tag", "refnd"]) == 0
    assert "no question has tag 'refnd' (did you mean --tag refunds?)" in (capsys.readouterr().out)
