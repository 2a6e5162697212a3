"""CI that speaks the provider's language: on GitHub the step summary, one annotation per failing
question at its dataset line and one sticky pull-request comment (created, then updated); on
GitLab a Code Quality report and a sticky merge-request note. An API that refuses or hangs
leaves the job's exit code the gate's, with one warning, within the bound. The token is never
printed or written."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import jsonschema
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.ci_api_server import ApiServer
from tests.runs_support import write_project
from tracegrade.ci.findings import Finding
from tracegrade.ci.github import escape_data, workflow_command
from tracegrade.cli import main
from tracegrade.reports.escaping import printable

TOKEN = "ghs_s3cretTOKENvalue0123456789"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def api():
    server = ApiServer().start()
    yield server
    server.stop()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """paris passes, rome fails tool_usage (the agent answers without looking anything up)."""
    config = write_project(tmp_path, questions=["paris", "rome"])
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith(("GITHUB_", "GITLAB_", "CI_"))]:
        monkeypatch.delenv(name)
    return config


def github_env(monkeypatch: pytest.MonkeyPatch, root: Path, api: ApiServer) -> Path:
    event = root / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7}}), encoding="utf-8")
    summary = root / "summary.md"
    for name, value in {
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(root),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": "acme/agent",
        "GITHUB_API_URL": api.url,
        "GITHUB_SERVER_URL": "https://github.example",
        "GITHUB_SHA": "abc123",
        "GITHUB_RUN_ID": "99",
        "GITHUB_TOKEN": TOKEN,
    }.items():
        monkeypatch.setenv(name, value)
    return summary


def question_line(dataset: Path, question_id: str) -> int:
    """The line a question's entry starts on, read with PyYAML's own marks."""
    node = yaml.compose(dataset.read_text(encoding="utf-8"))
    questions = next(v for k, v in node.value if k.value == "questions")
    for item in questions.value:
        if any(k.value == "id" and v.value == question_id for k, v in item.value):
            return item.start_mark.line + 1
    raise AssertionError(question_id)


def run(capsys: pytest.CaptureFixture[str], config: Path, *args: str) -> tuple[int, str, str]:
    code = main(["run", "--config", str(config), "--quiet", *args])
    out, err = capsys.readouterr()
    return code, out, err


def commands(out: str, kind: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(f"::{kind} ")]


def test_github_summary_annotations_and_one_sticky_comment(project, api, capsys, monkeypatch):
    root = project.parent
    summary = github_env(monkeypatch, root, api)
    line = question_line(root / "data" / "questions.yaml", "rome")

    code, out, err = run(capsys, project, "--pr-comment")

    assert code == 2
    errors = commands(out, "error")
    assert errors == [errors[0]] and len(errors) == 1, out  # rome alone; paris passed
    assert errors[0].startswith(f"::error file=data/questions.yaml,line={line},title=")
    assert "rome failed" in errors[0] and "tool_usage_grader" in errors[0]
    assert "## tracegrade run" in summary.read_text(encoding="utf-8")
    lines = out.splitlines()  # the console report folds into one group; annotations after it
    opened = [i for i, x in enumerate(lines) if x.startswith("::group::tracegrade ")]
    assert len(opened) == 1 and "exit 2" in lines[opened[0]]
    closed = lines.index("::endgroup::")
    assert opened[0] < lines.index("exit code 2") < closed < lines.index(errors[0])
    posts = [r for r in api.requests if r[0] == "POST"]
    assert [p[1] for p in posts] == ["/repos/acme/agent/issues/7/comments"]
    assert posts[0][2]["Authorization"] == f"Bearer {TOKEN}"
    body = posts[0][3]["body"]
    assert "<!-- tracegrade-comment:default -->" in body
    assert f"https://github.example/acme/agent/blob/abc123/data/questions.yaml#L{line}" in body
    assert "https://github.example/acme/agent/actions/runs/99" in body
    assert "pull-request comment created" in err

    code, out, err = run(capsys, project, "--pr-comment")  # the next push

    assert code == 2
    assert [r[0] for r in api.requests].count("PATCH") == 1
    assert [r[0] for r in api.requests].count("POST") == 1
    assert len(api.comments["/repos/acme/agent/issues/7/comments"]) == 1
    assert "pull-request comment updated" in err
    written = summary.read_text(encoding="utf-8") + json.dumps(api.comments)
    assert TOKEN not in out + err + written


def test_a_forbidden_api_is_one_warning_and_the_gate_s_exit_code(project, api, capsys, monkeypatch):
    github_env(monkeypatch, project.parent, api)
    api.status = 403

    code, out, err = run(capsys, project, "--pr-comment")

    assert code == 2
    warnings = [w for w in commands(out, "warning") if "comment was not posted" in w]
    assert len(warnings) == 1 and "HTTP 403" in warnings[0] and "fork" in warnings[0]
    assert TOKEN not in out + err


def test_a_hung_api_is_given_up_within_the_bound(project, api, capsys, monkeypatch):
    github_env(monkeypatch, project.parent, api)
    api.hang_s = 60

    started = time.monotonic()
    code, out, _ = run(capsys, project, "--pr-comment", "--comment-timeout", "1.5")
    took = time.monotonic() - started

    assert code == 2
    warnings = [w for w in commands(out, "warning") if "comment was not posted" in w]
    assert len(warnings) == 1 and "timed out" in warnings[0]
    assert took < 45  # the hang is 60 s; the run itself takes a few seconds even under load


def test_off_ci_nothing_provider_specific_is_printed(project, capsys):
    code, out, _ = run(capsys, project)

    assert code == 2
    assert not [line for line in out.splitlines() if line.startswith("::")]


# GitLab's documented Code Quality shape (docs: "Implement a custom tool", code quality report
# format): an array of issues, each with these fields, severity among five words.
CODE_QUALITY_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path", "lines"],
                "properties": {
                    "path": {"type": "string", "minLength": 1},
                    "lines": {
                        "type": "object",
                        "required": ["begin"],
                        "properties": {"begin": {"type": "integer", "minimum": 1}},
                    },
                },
            },
        },
    },
}


def test_gitlab_code_quality_and_one_sticky_note(project, api, capsys, monkeypatch):
    root = project.parent
    for name, value in {
        "GITLAB_CI": "true",
        "CI_PROJECT_DIR": str(root),
        "CI_API_V4_URL": api.url,
        "CI_PROJECT_ID": "42",
        "CI_MERGE_REQUEST_IID": "3",
        "GITLAB_TOKEN": TOKEN,
    }.items():
        monkeypatch.setenv(name, value)
    report = root / "gl-code-quality.json"

    code, out, err = run(capsys, project, "--codequality", str(report), "--pr-comment")
    code2, out2, err2 = run(capsys, project, "--codequality", str(report), "--pr-comment")

    assert (code, code2) == (2, 2)
    entries = json.loads(report.read_text(encoding="utf-8"))
    jsonschema.validate(entries, CODE_QUALITY_SCHEMA)
    line = question_line(root / "data" / "questions.yaml", "rome")
    failing = [e for e in entries if e["check_name"] == "tracegrade/error"]
    assert [(e["location"]["path"], e["location"]["lines"]["begin"]) for e in failing] == [
        ("data/questions.yaml", line)
    ]
    assert failing[0]["severity"] == "major" and "rome" in failing[0]["description"]
    # run-level warnings (advisories) stand at the dataset file, never at no path
    assert {e["location"]["path"] for e in entries} == {"data/questions.yaml"}
    notes = api.comments["/projects/42/merge_requests/3/notes"]
    assert len(notes) == 1 and [r[0] for r in api.requests].count("PUT") == 1
    assert all(
        {k.lower(): v for k, v in r[2].items()}["private-token"] == TOKEN for r in api.requests
    )
    assert not [line for line in out.splitlines() if line.startswith("::")]
    assert TOKEN not in out + err + out2 + err2 + report.read_text(encoding="utf-8")


def unescape(data: str) -> str:
    return data.replace("%0A", "\n").replace("%0D", "\r").replace("%25", "%")


@given(st.text(), st.text(), st.text())
def test_a_workflow_command_is_one_line_whatever_the_text(title, message, file):
    command = workflow_command(Finding("error", title, message, file=file or None, line=3))

    assert "\n" not in command and "\r" not in command
    props, sep, data = command.removeprefix("::error ").partition("::")
    assert sep and "title=" in props  # a title or path with '::' cannot end the properties
    shown = printable(message)  # control characters shown as escapes, never raw
    assert unescape(data) == (shown if len(shown) <= 4000 else shown[:4000] + " …")


@given(st.text())
def test_escaped_data_round_trips(text):
    escaped = escape_data(text)
    assert "\n" not in escaped and "\r" not in escaped
    assert unescape(escaped) == text


def test_the_action_declares_what_it_uses_and_the_docs_use_what_it_declares():
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    declared = set(action["inputs"])
    text = json.dumps(action["runs"])

    used = set(re.findall(r"inputs\.([a-z0-9-]+)", text))
    assert used == declared, (used - declared, declared - used)
    for name, spec in action["inputs"].items():
        assert spec.get("description"), name
    assert set(action["outputs"]) >= {"gate", "exit-code", "json", "junit", "markdown", "html"}
    docs = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", docs, re.S)
    workflows = [yaml.safe_load(b) for b in blocks]
    steps = [
        s
        for w in workflows
        if isinstance(w, dict) and "jobs" in w
        for job in w["jobs"].values()
        for s in job.get("steps", [])
        if isinstance(s, dict) and "tracegrade" in str(s.get("uses", ""))
    ]
    assert steps, "docs/ci.md has no workflow using the action"
    for step in steps:
        assert set(step.get("with") or {}) <= declared, step


def test_a_grader_not_applicable_to_traces_is_a_warning_on_github(tmp_path, capsys, monkeypatch):
    """grade-traces cannot give state_grader a live environment: the check plan says it is not
    applicable here, and on GitHub that is a ::warning, never an error and never silence."""
    from tests.test_grade_traces import _plain_app_with_openinference

    config = write_project(
        tmp_path,
        questions=["paris"],
        target={"graders": ["tool_usage_grader", "state_grader"]},
    )
    archive = tmp_path / "collector" / "traces.jsonl"
    archive.parent.mkdir()
    _plain_app_with_openinference(tmp_path, archive, ["weather in Paris?"])
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith(("GITHUB_", "GITLAB_", "CI_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")

    argv = ["grade-traces", str(archive), "--config", str(config), "--target", "t", "--quiet"]
    code = main(argv)
    out = capsys.readouterr().out

    assert code == 0
    assert not commands(out, "error")
    warnings = [w for w in commands(out, "warning") if "state_grader not applicable here" in w]
    assert len(warnings) == 1 and "file=data/questions.yaml" in warnings[0]
