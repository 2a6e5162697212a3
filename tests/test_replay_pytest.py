"""Cassettes in the pytest plugin: `--tracegrade-cassettes DIR --tracegrade-record-mode MODE`
record the reference agent's model calls once, then replay them under pytest-xdist with the
same verdict per question; in `none` a question without a cassette fails naming the miss."""

from __future__ import annotations

import pytest

from tests.test_pytest_plugin import outcomes, project, pytest_in  # noqa: F401

TARGET = ["--tracegrade-target", "support_desk_regressed"]


def test_plugin_records_once_then_replays_under_xdist_with_the_same_verdicts(project):  # noqa: F811
    pytest.importorskip("xdist")
    cassettes = project / "cassettes"
    args = ["--tracegrade", "examples/tracegrade.yaml", *TARGET]
    args += ["--tracegrade-cassettes", str(cassettes)]

    missing = pytest_in(project, *args, "--tracegrade-record-mode", "none")
    assert missing.returncode == 3, missing.stdout[-3000:]
    assert "replay miss" in missing.stdout and "no cassette" in missing.stdout
    assert not cassettes.exists()

    recorded = pytest_in(project, *args, "--tracegrade-record-mode", "once")
    assert recorded.returncode == 2, recorded.stdout[-3000:]  # the planted failures
    files = sorted(cassettes.rglob("*.jsonl"))
    assert len(files) == 9

    replayed = pytest_in(project, *args, "--tracegrade-record-mode", "none", "-n", "2")
    assert replayed.returncode == 2, replayed.stdout[-3000:]
    assert outcomes(replayed.stdout) == outcomes(recorded.stdout)
    assert "replay miss" not in replayed.stdout
    assert sorted(cassettes.rglob("*.jsonl")) == files
