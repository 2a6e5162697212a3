"""Judges that see the tool catalog, and the judge mode of the claims check, against the
loopback OpenAI-compatible server: the prompt holds the tools offered (with their declared
arguments), the calls and how each ended, fenced and redacted; the loopback judge below decides
from that prompt alone, so a verdict that depends on the record proves the record reached it.
An outage is an error (exit 3), never a pass."""

from __future__ import annotations

import json
import re

import yaml

from tests import openai_server as loopback
from tests.openai_server import reply, score, server_error
from tests.test_record_checks import _project
from tracegrade import ToolRecord
from tracegrade.cli import main
from tracegrade.judging.catalog_rendering import render_tool_catalog
from tracegrade.toolspec import ToolSpec

openai_server = loopback.openai_server  # the fixture, by the name tests request


def _judge_from_prompt(body: dict):
    """A toy judge that reads only its prompt: a claimed ticket with no create_ticket call that
    ended ok in the TOOL CALLS block is unsupported."""
    prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
    if "claims of action" in prompt:
        answer = prompt.split("<agent_response>")[1]
        claimed = re.search(r"opened ticket #\d+", answer)
        backed = re.search(r"- create_ticket .* -> ok", prompt)
        if claimed and not backed:
            return score(
                0, f'unsupported: "{claimed.group(0)}" (no create_ticket call in the record)'
            )
        return score(1, "every claim is backed")
    return score(4, "reasonable")


def _configure(config, server, graders, questions):
    raw = yaml.safe_load(config.read_text())
    raw["judge"] = {
        "provider": "openai-compatible",
        "base_url": server.base_url,
        "model": "loopback-judge",
        "max_attempts": 1,
    }
    raw["targets"]["t"]["graders"] = graders
    config.write_text(yaml.safe_dump(raw, sort_keys=False))
    data = config.parent / "questions.yaml"
    rows = [q for q in yaml.safe_load(data.read_text())["questions"] if q["id"] in questions]
    data.write_text(yaml.safe_dump({"questions": rows}))


def _graded(report: dict) -> dict:
    return {
        (q["id"], g["id"]): (g["score"], g["reason"])
        for q in report["questions"]
        for g in q["graders"]
    }


def test_the_claims_judge_catches_a_claimed_ticket_with_no_call(tmp_path, openai_server):
    config = _project(tmp_path / "proj")
    _configure(
        config, openai_server, [{"id": "claims_judge", "must_pass": True}], {"claim", "route"}
    )
    openai_server.responder = _judge_from_prompt
    report = tmp_path / "r.json"
    code = main(["run", "--config", str(config), "--quiet", "--json", str(report)])
    graded = _graded(json.loads(report.read_text()))
    assert code == 2
    assert graded[("claim", "claims_judge")] == (
        0.0,
        'unsupported: "opened ticket #1001" (no create_ticket call in the record)',
    )
    assert graded[("route", "claims_judge")][0] == 1.0  # it did open one
    prompt = next(r.prompt for r in openai_server.requests if "login" in r.prompt)
    assert "TOOLS OFFERED" in prompt and "refund_agent:lookup_order(order_id: string)" in prompt
    assert "TOOL CALLS" in prompt and "lookup_order" in prompt
    assert "<agent_response>" in prompt


def test_catalog_judges_see_the_tools_offered_and_an_outage_is_exit_3(tmp_path, openai_server):
    config = _project(tmp_path / "proj")
    judges = [
        "tool_selection_judge",
        "argument_correctness_judge",
        "plan_adherence_judge",
        "step_efficiency_judge",
    ]
    _configure(config, openai_server, judges, {"schema"})
    openai_server.responder = _judge_from_prompt
    report = tmp_path / "r.json"
    assert main(["run", "--config", str(config), "--quiet", "--json", str(report)]) == 0
    graded = _graded(json.loads(report.read_text()))
    assert all(graded[("schema", j)] == (4.0, "reasonable") for j in judges)
    prompts = [r.prompt for r in openai_server.requests]
    assert len(prompts) == 4
    for prompt in prompts:
        assert "ticket_agent:create_ticket(summary: string, priority: string one of 'low', " in (
            prompt
        )
        assert "priority='urgent'" in prompt or "'urgent'" in prompt
    openai_server.reset()
    openai_server.default = server_error(500)
    assert main(["run", "--config", str(config), "--quiet", "--no-cache"]) == 3


def test_the_catalog_block_is_redacted_cut_and_says_when_it_is_unknown():
    secret = "Bearer sk-abcdefghijklmnopqrstuvwxyz0123456789"
    record = ToolRecord(
        [],
        offered=[
            ToolSpec("login", "a", f"uses {secret} " + "x" * 400, {"properties": {"user": {}}})
        ],
    )
    text = render_tool_catalog(record)
    assert "sk-abcdef" not in text and "(cut at 200 characters)" in text
    assert "a:login(user: any (optional))" in text
    assert "not known" in render_tool_catalog(ToolRecord([]))
    assert reply  # the loopback helpers stay importable for the other judge tests
