"""What judges and graders are given: the target's policy, the question's metadata in judge
templates, the system prompt the agent actually received, and the code hash of a `@grader`."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import yaml

from tests import openai_server as loopback
from tests.openai_server import reply, score
from tests.runs_support import write_project
from tracegrade import OpenAICompatibleProvider, grader, load_config, regrade_run, start_run
from tracegrade.cli import main
from tracegrade.graders import GraderServices
from tracegrade.graders.judges import GRADERS
from tracegrade.rundir.identity import grader_code_hash

openai_server = loopback.openai_server  # the fixture, by the name tests request

ROOT = Path(__file__).resolve().parent.parent
BY_ID = {cls.id: cls for cls in GRADERS}


def _answer_everything(body: dict) -> object:
    """Rubric questions answered A (the first option), judges 4."""
    prompt = "\n".join(str(m.get("content", "")) for m in body["messages"])
    qids = re.findall(r"^(Q\d+)\b", prompt, re.M)
    if "multiple-choice" in prompt and qids:
        return reply("\n".join(f"{q}: A" for q in dict.fromkeys(qids)))
    return score(4, "fine")


def test_the_targets_policy_reaches_the_rubric_judge(openai_server, tmp_path):
    for name in ("examples", "agents"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("runs"))
    source = (tmp_path / "examples" / "tracegrade.judges.yaml").read_text()
    config = tmp_path / "examples" / "judged.yaml"
    config.write_text(source.replace("http://127.0.0.1:8080/v1", openai_server.base_url))
    openai_server.responder = _answer_everything
    out = tmp_path / "run.json"

    main(["run", "--config", str(config), "--json", str(out), "--quiet"])

    rubric_prompts = [r.prompt for r in openai_server.requests if "multiple-choice" in r.prompt]
    assert rubric_prompts, "the rubric judge asked nothing"
    policy_line = "A refund over\n   $100 must never be issued by the agent"
    assert all("<policy>" in p and policy_line in p for p in rubric_prompts)
    report = json.loads(out.read_text())
    reasons = [g["reason"] for q in report["questions"] for g in q["graders"]]
    assert not any("missing evidence: policy" in r for r in reasons)


def test_metadata_placeholders_in_a_judge_template_are_substituted(openai_server):
    template = (
        "Dimension: %s\n%s\n%s\n%s\n"
        "Customer tier: {{ metadata.tier }}; region {{metadata.account.region}}; "
        "missing {{ metadata.nope }}; 100%% sure: {{ metadata.pct }}\n"
    )
    provider = OpenAICompatibleProvider(base_url=openai_server.base_url, model="m")
    services = GraderServices(
        judge_provider=provider, judge_settings={"templates": {"relevance_grader": template}}
    )
    judge = BY_ID["relevance_grader"](services=services)
    metadata = {"tier": "gold", "account": {"region": "eu"}, "pct": "50%s"}
    result = judge.grade("q?", "answer", {"metadata": metadata})
    assert not result.error, result.reason
    (request,) = openai_server.requests
    assert "Customer tier: gold; region eu; missing (not set); 100% sure: 50%s" in request.prompt
    assert "{{" not in request.prompt


def test_graders_get_the_system_prompt_the_agent_received(tmp_path, openai_server):
    judge = {
        "provider": "openai-compatible",
        "base_url": openai_server.base_url,
        "model": "m",
        "max_attempts": 1,
    }
    path = write_project(
        tmp_path,
        questions=["echo"],
        config={"judge": judge},
        target={"system_prompt": "target system prompt", "graders": ["relevance_grader"]},
    )
    outcome = start_run(load_config(path))
    (question,) = outcome.targets[0].questions
    assert question.error is None
    (request,) = openai_server.requests
    asked = request.prompt.split("<question>", 1)[1].split("</question>", 1)[0]
    # The agent got the target's system prompt in place of the stored one; so does the judge.
    assert "system: target system prompt" in asked
    assert "stored system prompt" not in asked


@grader(name="first_hashed")
def first_hashed(output):
    return output == "a"


@grader(name="second_hashed")
def second_hashed(output):
    return output == "b"


def test_each_grader_function_is_hashed_by_its_own_source():
    first, second = grader_code_hash(first_hashed()), grader_code_hash(second_hashed())
    assert first and second and first != second
    assert grader_code_hash(first_hashed) == first


def test_every_judge_block_key_is_documented():
    schema = json.loads((ROOT / "schema" / "config.schema.json").read_text())
    keys = set(schema["$defs"]["judge"]["properties"])
    assert "headers" in keys
    docs = (ROOT / "docs" / "judges.md").read_text()
    config_block = docs.split("```yaml", 1)[1].split("```", 1)[0]
    documented = set(yaml.safe_load(config_block)["judge"])
    assert keys - {"chat_model"} <= documented | {"templates"}


def test_a_failed_call_reaches_the_judge_as_failed_at_run_and_regrade(tmp_path, openai_server):
    judge = {
        "provider": "openai-compatible",
        "base_url": openai_server.base_url,
        "model": "m",
        "max_attempts": 1,
    }
    path = write_project(
        tmp_path,
        questions=["cancel"],
        config={"judge": judge},
        target={"graders": ["accuracy_grader"]},
    )
    config = load_config(path)
    outcome = start_run(config)
    (request,) = openai_server.requests
    line = next(x for x in request.prompt.splitlines() if x.startswith("- cancel "))
    assert line.endswith("-> error (ValueError): 'booking B100 not found'"), line
    # Re-graded from the trace file: the same block, so the cached answer serves it.
    regrade_run(config, outcome.run_dir)
    assert len(openai_server.requests) == 1
