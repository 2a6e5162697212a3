"""The content-addressed judge cache: a re-grade makes no calls, samples stay independent,
unusable answers are asked for again, the key covers everything that decides an answer."""

from __future__ import annotations

import sqlite3
import threading

from tests import openai_server as loopback
from tests.openai_server import (
    non_numeric_score,
    score,
)
from tracegrade import JudgeCache, JudgeReply, JudgeRequest, OpenAICompatibleProvider
from tracegrade.graders import GraderServices
from tracegrade.graders.judges import CompletenessGrader, RelevanceGrader
from tracegrade.judging import TokenLogprob, cache_key

openai_server = loopback.openai_server  # the fixture, by the name tests request


def services(server, cache, **settings) -> GraderServices:
    provider = OpenAICompatibleProvider(base_url=server.base_url, model="m", backoff_base_s=0.01)
    return GraderServices(judge_provider=provider, judge_cache=cache, judge_settings=settings)


async def test_regrading_makes_zero_requests_even_from_a_reopened_cache(openai_server, tmp_path):
    path = tmp_path / "runs" / "judge-cache.sqlite3"
    openai_server.enqueue(score(4, "first"))
    with JudgeCache(path) as cache:
        first = await RelevanceGrader(services=services(openai_server, cache)).agrade("q", "a", {})
    assert first.score == 4.0 and first.details["cached"] == [False]
    assert len(openai_server.requests) == 1

    openai_server.default = score(1, "a different answer")
    with JudgeCache(path) as cache:  # a later process re-grading the stored run
        again = await RelevanceGrader(services=services(openai_server, cache)).agrade("q", "a", {})
        assert cache.hits == 1
    assert (again.score, again.reason) == (4.0, "first")
    assert again.details["cached"] == [True]
    assert len(openai_server.requests) == 1


async def test_a_different_prompt_is_a_miss(openai_server, tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite3")
    grader = RelevanceGrader(services=services(openai_server, cache))
    await grader.agrade("q", "a", {})
    await grader.agrade("q", "a different response", {})
    await grader.agrade("another question", "a", {})
    assert len(openai_server.requests) == 3


async def test_no_cache_bypasses_it(openai_server, tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite3")
    grader = RelevanceGrader(services=services(openai_server, cache, use_cache=False))
    await grader.agrade("q", "a", {})
    await grader.agrade("q", "a", {})
    assert len(openai_server.requests) == 2
    assert len(cache) == 0


async def test_samples_are_never_served_one_entry(openai_server, tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite3")
    one = CompletenessGrader(services=services(openai_server, cache))
    openai_server.enqueue(score(2))
    await one.agrade("q", "a", {})  # caches sample 0 only
    three = CompletenessGrader(services=services(openai_server, cache), samples=3)
    openai_server.enqueue(score(4), score(5))
    result = await three.agrade("q", "a", {})
    assert len(openai_server.requests) == 3  # samples 1 and 2 were asked for
    assert sorted(result.details["samples"]) == [2.0, 4.0, 5.0]
    assert result.details["cached"].count(True) == 1
    assert len(cache) == 3
    # Re-grading the sampled judge is free and keeps each sample's own answer.
    again = await three.agrade("q", "a", {})
    assert len(openai_server.requests) == 3
    assert sorted(again.details["samples"]) == [2.0, 4.0, 5.0]


async def test_unusable_answers_are_not_cached(openai_server, tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite3")
    grader = RelevanceGrader(services=services(openai_server, cache))
    openai_server.enqueue(non_numeric_score(), score(3))
    assert (await grader.agrade("q", "a", {})).error
    assert (await grader.agrade("q", "a", {})).score == 3.0
    assert len(openai_server.requests) == 2


def test_the_key_covers_provider_model_knobs_prompt_schema_logprobs_and_sample():
    identity = {"kind": "openai-compatible", "base_url": "u", "model": "m", "pinned_knobs": {}}
    request = JudgeRequest(messages=({"role": "user", "content": "p"},))
    base = cache_key(identity, request)
    assert base == cache_key(dict(identity), JudgeRequest(messages=request.messages))
    variants = [
        cache_key({**identity, "kind": "langchain"}, request),
        cache_key({**identity, "base_url": "v"}, request),
        cache_key({**identity, "model": "n"}, request),
        cache_key({**identity, "pinned_knobs": {"temperature": 0.0}}, request),
        cache_key(identity, JudgeRequest(messages=({"role": "user", "content": "p2"},))),
        cache_key(identity, JudgeRequest(messages=({"role": "system", "content": "p"},))),
        cache_key(identity, JudgeRequest(messages=request.messages, response_schema={})),
        cache_key(identity, JudgeRequest(messages=request.messages, logprobs=True)),
        cache_key(identity, JudgeRequest(messages=request.messages, logprobs=True, top_logprobs=5)),
        cache_key(identity, JudgeRequest(messages=request.messages, sample_index=1)),
    ]
    assert len({base, *variants}) == len(variants) + 1


def test_replies_round_trip_with_logprobs_and_the_file_is_wal(tmp_path):
    path = tmp_path / "c.sqlite3"
    cache = JudgeCache(path)
    reply = JudgeReply(
        text='{"score": 1}',
        logprobs=(TokenLogprob("1", -0.2, (("1", -0.2), ("0", -1.7))),),
        model="m",
        raw={"id": "x"},
    )
    cache.put("k", reply)
    back = cache.get("k")
    assert back == JudgeReply(reply.text, reply.logprobs, "m", {"id": "x"}, cached=True)
    assert cache.get("missing") is None and cache.misses == 1
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_concurrent_threads_share_one_cache(tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite3")
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(50):
                cache.put(f"{n}-{i}", JudgeReply(text=str(i)))
                assert cache.get(f"{n}-{i}").text == str(i)
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(cache) == 400


def test_default_path_sits_beside_the_runs(tmp_path):
    assert JudgeCache.default_path(tmp_path / "runs") == tmp_path / "runs" / "judge-cache.sqlite3"


async def test_each_trial_is_judged_afresh_and_its_own_rerun_is_a_hit(openai_server, tmp_path):
    from tracegrade import RunRecord

    def trial(t: int) -> dict:
        return {"run_record": RunRecord(question_id="q", response="same answer", trial=t)}

    openai_server.enqueue(score(4), score(2))
    cache = JudgeCache(tmp_path / "c.sqlite3")
    grader = RelevanceGrader(services=services(openai_server, cache))
    first = await grader.agrade("q", "same answer", trial(0))
    second = await grader.agrade("q", "same answer", trial(1))
    # The same response in two trials: two judge calls, two verdicts (a repeat measures the
    # judge's spread too, not the first trial's cached answer).
    assert (first.score, second.score) == (4.0, 2.0)
    assert len(openai_server.requests) == 2
    # Re-grading trial 1 hits its own entry; a run without repeats keeps trial 0's keys.
    again = await grader.agrade("q", "same answer", trial(1))
    plain = await grader.agrade("q", "same answer", {})
    assert (again.score, plain.score) == (2.0, 4.0)
    assert len(openai_server.requests) == 2
