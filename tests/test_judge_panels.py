"""Judge panels (several judge models score independently; disagreement goes to Review), and
the judge paths honouring the run's own redaction policy."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import yaml

from tests import openai_server as loopback
from tracegrade.cli import main
from tracegrade.graders.base import GraderServices
from tracegrade.judging import build_provider
from tracegrade.judging.provider import JudgeRequest
from tracegrade.redaction import RedactionPolicy

openai_server = loopback.openai_server  # the fixture, by the name tests request
ROOT = Path(__file__).resolve().parent.parent

# A value of the shape the default policy redacts (an OpenAI-style key).
ALLOWED = "sk-test-0123456789abcdefghijklmnop"
SECRET = "sk-live-ZYXWVUTSRQPONMLKJIHGFEDCBA987"


def test_the_judge_client_redacts_with_the_runs_policy_not_the_default(openai_server):
    # A key the config's redaction.allow lists reaches the judge as written; a secret it does
    # not list is still redacted. One policy, the run's, at every exit.
    policy = RedactionPolicy.from_config({"allow": [ALLOWED]})
    assert policy.text(ALLOWED) == ALLOWED and policy.text(SECRET) != SECRET
    provider = build_provider({"base_url": openai_server.base_url, "model": "m"})
    services = GraderServices(judge_provider=provider, redaction=policy)
    request = JudgeRequest(messages=({"role": "user", "content": f"{ALLOWED} and {SECRET}"},))
    asyncio.run(services.client().acomplete(request))
    prompt = openai_server.requests[-1].prompt
    assert ALLOWED in prompt
    assert SECRET not in prompt


def _project(tmp_path: Path, graders: list, judge: dict | None = None, **extra) -> Path:
    for name in ("examples", "agents"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("runs"))
    config: dict = {
        "version": 1,
        "runs_dir": "runs",
        "rubrics": "rubrics/",
        "targets": {
            "desk": {
                "agent": "../agents/support_desk.py:build_graph",
                "environment": "../agents/support_desk.py:make_environment",
                "dataset": "datasets/support_desk.yaml",
                "graders": graders,
            }
        },
        **extra,
    }
    if judge is not None:
        config["judge"] = judge
    path = tmp_path / "examples" / "judged.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def test_a_judge_grader_without_a_judge_block_is_refused_before_any_agent_runs(tmp_path, capsys):
    config = _project(tmp_path, ["tool_usage_grader", "relevance_grader"])
    assert main(["run", "--config", str(config), "--quiet"]) == 4
    err = capsys.readouterr().err
    assert "desk" in err and "relevance_grader" in err and "judge:" in err
    assert not (tmp_path / "examples" / "runs").exists()  # no agent ran, no run directory
    assert main(["validate", str(config)]) == 4
