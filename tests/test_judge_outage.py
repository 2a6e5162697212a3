"""Failing fast when the judge is down: the circuit breaker, the per-question grading deadline
and a timeout that bounds a whole attempt, against real loopback servers (one that answers
badly, one that accepts and never answers)."""

from __future__ import annotations

import json
import time

import pytest

from tests import openai_server as loopback
from tests.openai_server import rate_limited, score, server_error, slow
from tests.runs_support import write_project
from tracegrade import JudgeRequest, OpenAICompatibleProvider, ProviderError
from tracegrade.cli import main
from tracegrade.graders.judges import GRADERS
from tracegrade.judging import CircuitBreaker

openai_server = loopback.openai_server  # the fixtures, by the names tests request
hanging_server = loopback.hanging_server

BY_ID = {cls.id: cls for cls in GRADERS}
REQUEST = JudgeRequest(messages=({"role": "user", "content": "score this"},))


def provider_for(server, **config):
    return OpenAICompatibleProvider(
        base_url=server.base_url,
        model="m",
        backoff_base_s=0.01,
        **{"max_attempts": 1, "timeout_s": 2, **config},
    )


async def test_five_consecutive_failures_open_the_breaker_and_later_calls_send_nothing(
    openai_server,
):
    openai_server.default = server_error(503)
    provider = provider_for(openai_server)
    for _ in range(5):
        with pytest.raises(ProviderError):
            await provider.acomplete(REQUEST)
    assert len(openai_server.requests) == 5 and provider.breaker.is_open
    openai_server.default = score(4)
    with pytest.raises(ProviderError) as raised:
        await provider.acomplete(REQUEST)
    message = str(raised.value)
    assert "5 consecutive failures opened the circuit breaker" in message
    assert "HTTP 503" in message and openai_server.base_url in message
    assert len(openai_server.requests) == 5  # not attempted


async def test_a_success_resets_the_count_and_rate_limits_count_only_in_a_row(openai_server):
    provider = provider_for(openai_server, circuit_breaker_failures=3, max_attempts=3)
    openai_server.enqueue(server_error(), server_error(), score(4))  # two failures, then fine
    assert (await provider.acomplete(REQUEST)).text
    openai_server.enqueue(server_error(), server_error(), score(4))
    assert (await provider.acomplete(REQUEST)).text
    assert not provider.breaker.is_open
    # A 429 now and then between answers never opens it; a server that answers every request
    # with 429 is down like one that never answers.
    provider = provider_for(openai_server, circuit_breaker_failures=3, max_attempts=7)
    openai_server.enqueue(rate_limited(0.01), rate_limited(0.01), score(4))
    assert (await provider.acomplete(REQUEST)).text
    assert not provider.breaker.is_open
    openai_server.enqueue(*(rate_limited(0.01) for _ in range(6)), score(4))
    with pytest.raises(ProviderError, match="HTTP 429"):
        await provider.acomplete(REQUEST)
    assert provider.breaker.is_open


def test_the_breaker_threshold_is_validated():
    with pytest.raises(ValueError):
        CircuitBreaker(0)


async def test_timeout_s_bounds_the_whole_attempt(openai_server):
    openai_server.enqueue(score(4), slow(10))
    provider = provider_for(openai_server, timeout_s=0.5)
    await provider.acomplete(REQUEST)  # warm-up: the client is built before the timed region
    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"timed out after 0\.5s"):
        await provider.acomplete(REQUEST)
    assert time.monotonic() - started < 8  # generous on a loaded machine; the server waits 10 s


def test_graders_past_the_question_deadline_error_naming_it(tmp_path, openai_server):
    openai_server.default = slow(3)
    judge = {
        "provider": "openai-compatible",
        "base_url": openai_server.base_url,
        "model": "m",
        "max_attempts": 1,
        "timeout_s": 30,
        "grading_deadline_s": 0.5,
    }
    path = write_project(
        tmp_path,
        questions=["rome"],
        config={"judge": judge},
        target={"graders": ["tool_usage_grader", "relevance_grader"]},
    )
    out = tmp_path / "run.json"
    code = main(["run", "--config", str(path), "--json", str(out), "--quiet"])
    assert code == 3
    (question,) = json.loads(out.read_text())["questions"]
    verdicts = {g["id"]: g for g in question["graders"]}
    assert verdicts["relevance_grader"]["error"]
    assert "grading deadline of 0.5s" in verdicts["relevance_grader"]["reason"]
    assert not verdicts["tool_usage_grader"]["error"]  # the deterministic grader still counts


def test_a_hanging_judge_server_ends_a_300_grading_run_fast_with_every_cause(
    tmp_path, hanging_server
):
    judges = ["relevance_grader", "completeness_grader", "actionability_grader"]
    questions = [{"id": f"q{i:03d}", "input": "weather in Rome?"} for i in range(100)]
    judge = {
        "provider": "openai-compatible",
        "base_url": hanging_server.base_url,
        "model": "m",
        "timeout_s": 1,
        "max_attempts": 2,
    }
    path = write_project(
        tmp_path,
        questions=[],
        extra_questions=questions,
        config={"judge": judge},
        # The scripted agent's own timeout generous: at load 16 on 2 cores a 2 s one ended a
        # few questions before grading (297 of 300 gradings); this test is about the judge.
        target={"graders": judges, "concurrency": 8, "timeout_s": 300},
    )
    out = tmp_path / "run.json"
    started = time.monotonic()
    code = main(["run", "--config", str(path), "--json", str(out), "--quiet"])
    wall = time.monotonic() - started
    assert code == 3
    report = json.loads(out.read_text())
    gradings = [g for q in report["questions"] for g in q["graders"]]
    assert len(gradings) == 300
    assert all(g["error"] and g["score"] is None for g in gradings)
    assert all(hanging_server.base_url.removesuffix("/v1") in g["reason"] for g in gradings)
    opened = [g for g in gradings if "opened the circuit breaker" in g["reason"]]
    assert len(opened) >= 250 and all("timed out after 1s" in g["reason"] for g in opened)
    # The breaker, not 300 x 2 timeouts, decides the time: fewer than 40 requests were ever
    # waited on (a 1 s timeout each, 8 at a time), where 600 would take 75 s or more. The wall
    # bound only says it ends: generous, as a loaded machine stretches everything else.
    assert hanging_server.accepted < 40
    assert wall < 240, wall
