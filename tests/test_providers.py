"""Judge providers through real HTTP against the loopback server: retries, Retry-After,
timeouts, malformed bodies, pinned knobs, structured output, logprobs, rate limiting."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests import openai_server as loopback
from tests.openai_server import (
    malformed_body,
    rate_limited,
    reply,
    score,
    server_error,
    slow,
)
from tracegrade import (
    ConfigError,
    JudgeRequest,
    OpenAICompatibleProvider,
    ProviderError,
    build_provider,
)
from tracegrade.judging import RateLimiter
from tracegrade.judging.retry import RetryPolicy, parse_retry_after

openai_server = loopback.openai_server  # the fixture, by the name tests request

REQUEST = JudgeRequest(messages=({"role": "user", "content": "grade this"},))


def provider(server, **kw) -> OpenAICompatibleProvider:
    kw.setdefault("backoff_base_s", 0.01)
    kw.setdefault("timeout_s", 5)
    return OpenAICompatibleProvider(base_url=server.base_url, model="judge-m", **kw)


async def test_a_plain_call_returns_the_answer_text(openai_server):
    openai_server.enqueue(reply("hello"))
    answer = await provider(openai_server).acomplete(REQUEST)
    assert answer.text == "hello"
    assert answer.model == "judge-m"
    assert answer.logprobs is None
    assert openai_server.requests[0].path == "/v1/chat/completions"
    assert openai_server.requests[0].body["messages"] == [{"role": "user", "content": "grade this"}]


async def test_429_with_retry_after_is_honoured_then_succeeds(openai_server):
    openai_server.enqueue(rate_limited(retry_after=0.4), score(4, "ok"))
    p = provider(openai_server)
    started = time.monotonic()
    answer = await p.acomplete(REQUEST)
    elapsed = time.monotonic() - started
    assert answer.text == '{"score": 4, "reason": "ok"}'
    assert len(openai_server.requests) == 2
    assert elapsed >= 0.4  # the backoff alone (base 0.01 s) would be far shorter


async def test_500_until_attempts_run_out_raises_provider_error_naming_the_outage(openai_server):
    openai_server.default = server_error(503)
    p = provider(openai_server, max_attempts=3)
    with pytest.raises(ProviderError) as info:
        await p.acomplete(REQUEST)
    assert len(openai_server.requests) == 3
    message = str(info.value)
    assert "openai-compatible" in message
    assert f"{openai_server.base_url}/chat/completions" in message
    assert "HTTP 503" in message and "after 3 attempts" in message
    assert info.value.context["status"] == 503
    assert info.value.exit_code == 3


async def _warm(p, server) -> None:
    """One answered call before a timed region: the HTTP client and its connection are built
    here, never inside the time a test measures (a loaded machine takes 100+ ms for that)."""
    server.enqueue(score(3))
    await p.acomplete(REQUEST)
    server.requests.clear()


async def test_a_slow_server_times_out_each_attempt(openai_server):
    p = provider(openai_server, timeout_s=1.0, max_attempts=2)
    await _warm(p, openai_server)
    openai_server.default = slow(20.0)
    started = time.monotonic()
    with pytest.raises(ProviderError, match="timed out"):
        await p.acomplete(REQUEST)
    # two 1 s attempts; the bound is generous for a loaded machine and still far below one
    # server delay (20 s), so only the per-attempt timeout can explain it
    assert time.monotonic() - started < 10.0
    assert len(openai_server.requests) == 2


async def test_malformed_body_is_a_provider_error_without_retrying(openai_server):
    openai_server.enqueue(malformed_body())
    with pytest.raises(ProviderError, match="not JSON"):
        await provider(openai_server).acomplete(REQUEST)
    assert len(openai_server.requests) == 1


async def test_a_client_error_is_not_retried(openai_server):
    openai_server.enqueue(server_error(401))
    with pytest.raises(ProviderError, match="HTTP 401"):
        await provider(openai_server).acomplete(REQUEST)
    assert len(openai_server.requests) == 1


async def test_knobs_are_pinned_only_where_advertised(openai_server):
    both = provider(openai_server)
    await both.acomplete(REQUEST)
    assert both.pinned_knobs() == {"temperature": 0.0, "top_p": 1.0}
    body = openai_server.requests[-1].body
    assert body["temperature"] == 0.0 and body["top_p"] == 1.0

    only_temp = provider(openai_server, knobs=["temperature"])
    await only_temp.acomplete(REQUEST)
    assert only_temp.pinned_knobs() == {"temperature": 0.0}
    body = openai_server.requests[-1].body
    assert body["temperature"] == 0.0 and "top_p" not in body

    none = provider(openai_server, knobs=[])
    await none.acomplete(REQUEST)
    assert none.pinned_knobs() == {}
    body = openai_server.requests[-1].body
    assert "temperature" not in body and "top_p" not in body
    assert none.identity()["pinned_knobs"] == {}


async def test_structured_output_is_sent_only_when_advertised(openai_server):
    schema = {"type": "object", "properties": {"score": {"type": "number"}}}
    request = JudgeRequest(messages=REQUEST.messages, response_schema=schema)
    await provider(openai_server).acomplete(request)
    fmt = openai_server.requests[-1].body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == schema
    await provider(openai_server, structured_output=False).acomplete(request)
    assert "response_format" not in openai_server.requests[-1].body


async def test_logprobs_and_top_logprobs_round_trip(openai_server):
    openai_server.enqueue(
        reply("4", logprobs=[("4", -0.1, [("4", -0.1), ("5", -2.5), ("3", -3.0)])])
    )
    request = JudgeRequest(messages=REQUEST.messages, logprobs=True, top_logprobs=2)
    answer = await provider(openai_server).acomplete(request)
    body = openai_server.requests[-1].body
    assert body["logprobs"] is True and body["top_logprobs"] == 2
    assert len(answer.logprobs) == 1
    token = answer.logprobs[0]
    assert (token.token, token.logprob) == ("4", -0.1)
    assert token.top == (("4", -0.1), ("5", -2.5))


async def test_api_key_comes_from_the_named_environment_variable(openai_server, monkeypatch):
    monkeypatch.setenv("TG_TEST_JUDGE_KEY", "k-123")
    p = build_provider(
        {"base_url": openai_server.base_url, "model": "m", "api_key_env": "TG_TEST_JUDGE_KEY"}
    )
    await p.acomplete(REQUEST)
    assert openai_server.requests[-1].headers["Authorization"] == "Bearer k-123"
    assert "k-123" not in repr(p.identity())


def test_missing_key_variable_and_bad_config_are_config_errors(monkeypatch):
    monkeypatch.delenv("TG_NOPE", raising=False)
    with pytest.raises(ConfigError) as info:
        build_provider({"base_url": "http://x/v1", "model": "m", "api_key_env": "TG_NOPE"})
    assert info.value.key == "judge.api_key_env" and info.value.exit_code == 4
    with pytest.raises(ConfigError) as info:
        build_provider({"provider": "psychic", "model": "m"})
    assert info.value.key == "judge.provider"
    with pytest.raises(ConfigError) as info:
        build_provider({"base_url": "http://x/v1"})
    assert info.value.key == "judge.model"
    with pytest.raises(ConfigError) as info:
        build_provider({"base_url": "http://x/v1", "model": "m", "temprature": 0})
    assert info.value.key == "judge.temprature"
    with pytest.raises(ConfigError) as info:
        build_provider({"base_url": "http://x/v1", "model": "m", "knobs": ["warmth"]})
    assert info.value.key == "judge.knobs"


def test_the_config_block_shape_builds_a_provider():
    p = build_provider(
        {
            "provider": "openai-compatible",
            "base_url": "http://127.0.0.1:8080/v1/",
            "model": "gpt-4o-mini",
            "timeout_s": 30,
            "max_attempts": 4,
            "requests_per_minute": 600,
            "max_concurrency": 4,
            "cache": True,
            "judge_response_char_limit": 4000,
            "templates": {},
        }
    )
    assert p.identity() == {
        "kind": "openai-compatible",
        "base_url": "http://127.0.0.1:8080/v1",
        "model": "gpt-4o-mini",
        "pinned_knobs": {"temperature": 0.0, "top_p": 1.0},
        "structured_output": True,
    }
    assert p.limiter.requests_per_minute == 600 and p.limiter.max_concurrency == 4
    assert p.policy.max_attempts == 4


async def test_the_rate_limiter_bounds_concurrent_requests(openai_server):
    openai_server.default = slow(0.15, then=score(3))
    p = provider(openai_server, max_concurrency=2)
    await asyncio.gather(*(p.acomplete(REQUEST) for _ in range(6)))
    assert len(openai_server.requests) == 6
    assert p.limiter.peak_in_flight == 2


async def test_waiting_for_a_slot_does_not_count_against_the_timeout(openai_server):
    p = provider(openai_server, max_concurrency=1, timeout_s=1.0, max_attempts=1)
    await _warm(p, openai_server)
    openai_server.default = slow(0.3, then=score(3))
    # Six calls queue behind one slot: the last waits ~1.5 s, beyond the 1 s timeout, while
    # each attempt alone takes 0.3 s (0.7 s of slack for a loaded machine).
    answers = await asyncio.gather(*(p.acomplete(REQUEST) for _ in range(6)))
    assert len(answers) == 6


async def test_requests_per_window_are_bounded():
    limiter = RateLimiter(requests_per_minute=3, window_s=0.3)
    starts: list[float] = []

    async def one() -> None:
        async with limiter.slot():
            starts.append(time.monotonic())

    began = time.monotonic()
    await asyncio.gather(*(one() for _ in range(7)))
    offsets = sorted(s - began for s in starts)
    assert offsets[2] < 0.25  # the first three go at once
    assert offsets[3] >= 0.29  # the fourth waits for the window
    assert offsets[6] >= 0.59  # the seventh for the third window
    for i in range(len(offsets) - 3):  # never more than three inside any window
        assert offsets[i + 3] - offsets[i] >= 0.29


def test_retry_after_parses_seconds_and_http_dates():
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after("0.5") == 0.5
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0


def test_backoff_grows_and_never_goes_below_retry_after():
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=8.0)
    for attempt, low, high in [(1, 0.5, 1.0), (2, 1.0, 2.0), (3, 2.0, 4.0), (6, 4.0, 8.0)]:
        delays = [policy.backoff(attempt, None) for _ in range(50)]
        assert all(low <= d <= high for d in delays)
        assert len(set(delays)) > 1  # jittered
    assert policy.backoff(1, 5.0) == 5.0
    assert policy.backoff(1, 10_000.0) == policy.max_retry_after_s
