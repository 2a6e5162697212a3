"""One judge client, one provider layer: every judge path goes through the run's judge client
(cache and redaction included, so the `@grader` judge closure re-grades for free), provider
backends only send and classify while one wrapper retries, and backends register through the
`tracegrade.providers` entry points, a broken one named in the error."""

from __future__ import annotations

import sys
import textwrap

import pytest

from tests import openai_server as loopback
from tests.openai_server import score
from tests.runs_support import write_project
from tracegrade import (
    JudgeRequest,
    PluginError,
    ProviderError,
    build_provider,
    load_config,
    regrade_run,
    start_run,
)
from tracegrade.judging import ManagedProvider, provider_backends

openai_server = loopback.openai_server  # the fixture, by the name tests request

GOAL_MODULE = """
from tracegrade.graders.code import grader


@grader(name="goal_met")
async def goal_met(output, judge):
    return await judge(goal="says the weather")
"""


def _judge_block(server) -> dict:
    return {
        "provider": "openai-compatible",
        "base_url": server.base_url,
        "model": "m",
        "max_attempts": 1,
    }


def test_the_grader_judge_closure_goes_through_the_cache(tmp_path, openai_server):
    openai_server.default = score(0.8, "mostly")
    path = write_project(
        tmp_path,
        questions=["paris"],
        config={"judge": _judge_block(openai_server)},
        target={"graders": ["relevance_grader"]},
        grading_module=True,
    )
    (tmp_path / "data" / "graders.py").write_text(textwrap.dedent(GOAL_MODULE))
    config = load_config(path)
    outcome = start_run(config)
    (question,) = outcome.targets[0].questions
    verdicts = {g.grader_id: g for g in question.graders}
    assert verdicts["goal_met"].score == 0.8, verdicts["goal_met"].reason
    calls = len(openai_server.requests)
    assert calls == 2  # the relevance judge and the goal judge
    regrade_run(config, outcome.run_dir)
    assert len(openai_server.requests) == calls  # both answered from the cache


async def test_every_prompt_part_is_redacted_before_it_leaves(tmp_path, openai_server):
    from tracegrade.graders import GraderServices
    from tracegrade.graders.judges import GRADERS

    relevance = {cls.id: cls for cls in GRADERS}["relevance_grader"]
    provider = build_provider(_judge_block(openai_server))
    judge = relevance(services=GraderServices(judge_provider=provider))
    secret = "sk-" + "Zq9" * 10
    await judge.agrade(f"my key is {secret}", f"use {secret} to log in", {"criteria": secret})
    (request,) = openai_server.requests
    assert secret not in request.prompt and "(redacted)" in request.prompt


# -- the provider layer -------------------------------------------------------------------------
BACKEND = """
from tracegrade.judging import Failure, JudgeReply


class FlakyError(Exception):
    pass


class FlakyBackend:
    name = "flaky"
    model = "flaky-1"
    advertised_knobs = frozenset({"temperature"})
    supports_structured_output = False
    config_keys = frozenset({"fail_first"})
    sent = []

    def __init__(self, fail_first):
        self.fail_first = fail_first

    @classmethod
    def from_config(cls, config, *, base_dir=None):
        return cls(int(config.get("fail_first", 0)))

    def location(self):
        return "flaky://local"

    def describe(self):
        return {"base_url": "flaky://local"}

    async def open(self):
        pass

    async def send(self, request, *, knobs, structured):
        FlakyBackend.sent.append(dict(knobs))
        if len(FlakyBackend.sent) <= self.fail_first:
            raise FlakyError("overloaded")
        return JudgeReply(text='{"score": 4, "reason": "ok"}', model=self.model)

    def classify(self, error):
        if isinstance(error, FlakyError):
            return Failure(str(error), retryable=True, status=503)
        return None

    async def aclose(self):
        pass
"""


def _install(tmp_path, monkeypatch, name: str, entry_points: str, module: str | None = None):
    """A real distribution on sys.path: dist-info with entry points, and its module."""
    root = tmp_path / "site"
    info = root / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)
    if module is not None:
        (root / f"{name}.py").write_text(textwrap.dedent(module))
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delitem(sys.modules, name, raising=False)


async def test_a_provider_plugin_only_sends_and_classifies_the_wrapper_retries(
    tmp_path, monkeypatch
):
    _install(
        tmp_path,
        monkeypatch,
        "flaky_provider",
        "[tracegrade.providers]\nflaky = flaky_provider:FlakyBackend\n",
        BACKEND,
    )
    assert "flaky" in provider_backends()
    provider = build_provider({"provider": "flaky", "fail_first": 2, "max_attempts": 3})
    provider.policy = provider.policy.__class__(max_attempts=3, base_delay_s=0.01)
    assert isinstance(provider, ManagedProvider)
    reply = await provider.acomplete(JudgeRequest(messages=({"role": "user", "content": "x"},)))
    assert reply.text.startswith('{"score": 4')
    assert provider.calls == 3  # two retryable failures, then the answer
    assert provider.identity() == {
        "kind": "flaky",
        "base_url": "flaky://local",
        "model": "flaky-1",
        "pinned_knobs": {"temperature": 0.0},
    }
    module = sys.modules["flaky_provider"]
    assert module.FlakyBackend.sent == [{"temperature": 0.0}] * 3  # the wrapper pins knobs
    with pytest.raises(ProviderError, match="failed after 1 attempts"):
        module.FlakyBackend.sent.clear()
        one = build_provider({"provider": "flaky", "fail_first": 5, "max_attempts": 1})
        await one.acomplete(JudgeRequest(messages=({"role": "user", "content": "x"},)))


def test_a_broken_provider_plugin_is_named_in_the_error(tmp_path, monkeypatch):
    _install(
        tmp_path,
        monkeypatch,
        "broken_provider",
        "[tracegrade.providers]\nbroken = broken_provider:Backend\n",
        "raise ImportError('needs a library that is not installed')\n",
    )
    with pytest.raises(PluginError) as raised:
        build_provider({"provider": "broken"})
    message = str(raised.value)
    assert "'broken_provider'" in message and "broken = broken_provider:Backend" in message
    assert "needs a library that is not installed" in message
    assert raised.value.exit_code == 4


def test_an_unknown_provider_kind_lists_the_installed_ones():
    with pytest.raises(Exception, match=r"expected one of .*langchain.*openai-compatible"):
        build_provider({"provider": "nope"})
