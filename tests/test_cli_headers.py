"""Headers given as repeatable `K=V` flags (`export --header`, `receive --annotate-header`,
`grade-traces --header`): a malformed one is invalid input naming its flag (exit 4), before
anything is sent, received or graded."""

from __future__ import annotations

import pytest

from tests.runs_support import write_project
from tracegrade.cli import main


def _argv(kind: str, config: str, header: str) -> tuple[list[str], str, str]:
    if kind == "receive":
        argv = ["receive", "--config", config, "--target", "t", "--port", "0"]
        argv += ["--annotate", "phoenix", "--annotate-endpoint", "http://127.0.0.1:9"]
        return [*argv, "--annotate-header", header], "--annotate-header", "K=V"
    if kind == "export":
        argv = ["export", "no-such-run", "--endpoint", "http://127.0.0.1:9/v1/traces"]
        return [*argv, "--header", header], "--header", "K=V"
    argv = ["grade-traces", "--config", config, "--target", "t", "--from", "phoenix"]
    argv += ["--endpoint", "http://127.0.0.1:9", "--project", "p"]
    return [*argv, "--header", header], "--header", "KEY=VALUE"


@pytest.mark.parametrize("kind", ["receive", "export", "grade-traces"])
@pytest.mark.parametrize("header", ["api_key", "=secret", " =secret"])
def test_a_header_that_is_not_k_eq_v_is_exit_4_naming_the_flag(tmp_path, capsys, kind, header):
    config = write_project(tmp_path, questions=["paris"])
    argv, flag, form = _argv(kind, str(config), header)
    assert main(argv) == 4
    assert f"{flag} {header!r} is not {form}" in capsys.readouterr().err
