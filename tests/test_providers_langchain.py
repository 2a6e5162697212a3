"""The LangChain adapter: knobs it can bind, pinning, logprobs from response_metadata,
retries on model failures, and loading a chat model named in config."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from tracegrade import ConfigError, JudgeRequest, LangChainProvider, ProviderError, build_provider
from tracegrade.graders import GraderServices
from tracegrade.graders.judges import RelevanceGrader

REQUEST = JudgeRequest(messages=({"role": "user", "content": "grade"},))
LOGPROBS = {
    "content": [
        {"token": "1", "logprob": -0.05, "top_logprobs": [{"token": "1", "logprob": -0.05}]}
    ]
}


class KnobbedModel(BaseChatModel):
    """A chat model with the knobs ChatOpenAI has; records what each call was given."""

    temperature: float = 0.7
    top_p: float = 0.9
    logprobs: bool | None = None
    model_name: str = "knobbed-1"
    answers: list[Any] = Field(default_factory=list)
    seen: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "knobbed"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.seen.append({"messages": messages, **kwargs})
        answer = self.answers.pop(0) if self.answers else '{"score": 3, "reason": "ok"}'
        if isinstance(answer, Exception):
            raise answer
        metadata = {"model_name": self.model_name}
        if kwargs.get("logprobs"):
            metadata["logprobs"] = LOGPROBS
        message = AIMessage(content=answer, response_metadata=metadata)
        return ChatResult(generations=[ChatGeneration(message=message)])


class BareModel(KnobbedModel.__base__):  # BaseChatModel with no sampling fields at all
    seen: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "bare"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.seen.append(kwargs)
        message = AIMessage(content='{"score": 2, "reason": "bare"}')
        return ChatResult(generations=[ChatGeneration(message=message)])


async def test_knobs_the_model_has_are_advertised_pinned_and_passed():
    model = KnobbedModel()
    provider = LangChainProvider(chat_model=model)
    assert provider.advertised_knobs == {"temperature", "top_p"}
    assert provider.pinned_knobs() == {"temperature": 0.0, "top_p": 1.0}
    reply = await provider.acomplete(REQUEST)
    assert reply.text == '{"score": 3, "reason": "ok"}'
    assert model.seen[-1]["temperature"] == 0.0 and model.seen[-1]["top_p"] == 1.0
    assert provider.identity()["kind"] == "langchain"
    assert provider.identity()["model"] == "knobbed-1"


async def test_a_model_without_knobs_is_pinned_with_nothing():
    model = BareModel()
    provider = LangChainProvider(chat_model=model)
    assert provider.advertised_knobs == frozenset() and provider.pinned_knobs() == {}
    await provider.acomplete(REQUEST)
    assert "temperature" not in model.seen[-1] and "top_p" not in model.seen[-1]


async def test_configured_knobs_narrow_what_is_pinned():
    model = KnobbedModel()
    provider = LangChainProvider(chat_model=model, knobs=["temperature", "seed"])
    assert provider.pinned_knobs() == {"temperature": 0.0}  # no seed field: never pinned
    await provider.acomplete(REQUEST)
    assert "top_p" not in model.seen[-1]


async def test_logprobs_come_from_response_metadata():
    provider = LangChainProvider(chat_model=KnobbedModel())
    reply = await provider.acomplete(
        JudgeRequest(messages=REQUEST.messages, logprobs=True, top_logprobs=1)
    )
    assert reply.logprobs is not None and reply.logprobs[0].token == "1"
    assert reply.logprobs[0].top == (("1", -0.05),)
    plain = await provider.acomplete(REQUEST)
    assert plain.logprobs is None


async def test_model_failures_are_retried_then_named():
    model = KnobbedModel(answers=[RuntimeError("overloaded"), '{"score": 5, "reason": "x"}'])
    provider = LangChainProvider(chat_model=model, backoff_base_s=0.01)
    assert (await provider.acomplete(REQUEST)).text.startswith('{"score": 5')
    failing = KnobbedModel(answers=[RuntimeError("down")] * 3)
    provider = LangChainProvider(chat_model=failing, max_attempts=3, backoff_base_s=0.01)
    with pytest.raises(ProviderError, match=r"langchain .* failed after 3 attempts.*down"):
        await provider.acomplete(REQUEST)


async def test_a_judge_over_a_langchain_model(tmp_path):
    module = tmp_path / "judge_model.py"
    module.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {str(__import__("pathlib").Path(__file__).parent.parent)!r})
            from tests.test_providers_langchain import KnobbedModel

            def build():
                return KnobbedModel(answers=['{{"score": 4, "reason": "via langchain"}}'])
            """
        )
    )
    provider = build_provider(
        {"provider": "langchain", "chat_model": "judge_model.py:build"}, base_dir=tmp_path
    )
    grader = RelevanceGrader(services=GraderServices(judge_provider=provider))
    result = await grader.agrade("q", "a", {})
    assert (result.score, result.reason) == (4.0, "via langchain")
    assert result.identity["model"] == "knobbed-1"


def test_bad_chat_model_specs_are_config_errors(tmp_path):
    for spec in ("no_colon", "json:dumps", "missing_module_xyz:thing", "nope.py:x"):
        with pytest.raises(ConfigError) as info:
            build_provider({"provider": "langchain", "chat_model": spec}, base_dir=tmp_path)
        assert info.value.key == "judge.chat_model"
    with pytest.raises(ConfigError):
        build_provider({"provider": "langchain"})


class StructuredModel(KnobbedModel):
    """A model class with its own `with_structured_output` (as ChatOpenAI has): the schema it
    was given and the temperature it ran at are recorded; `refuse` makes it raise."""

    refuse: bool = False
    schemas: list[Any] = Field(default_factory=list)

    def with_structured_output(self, schema, **kwargs):
        from langchain_core.runnables import RunnableLambda

        if self.refuse:
            raise NotImplementedError("no schema support in this model")
        self.schemas.append((schema, self.temperature))
        return RunnableLambda(lambda messages: {"score": 5, "reason": "structured"})


async def test_structured_output_goes_through_with_structured_output_and_falls_back():
    model = StructuredModel()
    grader = RelevanceGrader(
        services=GraderServices(judge_provider=LangChainProvider(chat_model=model))
    )
    result = await grader.agrade("q", "a", {})
    assert (result.score, result.identity["answer_format"]) == (5.0, "json_schema")
    ((schema, temperature),) = model.schemas
    assert schema["required"] == ["score", "reason"] and temperature == 0.0  # knobs pinned

    refusing = StructuredModel(refuse=True)
    grader = RelevanceGrader(
        services=GraderServices(judge_provider=LangChainProvider(chat_model=refusing))
    )
    result = await grader.agrade("q", "a", {})
    assert (result.score, result.identity["answer_format"]) == (3.0, "text")
    assert len(refusing.seen) == 1  # then asked once as text
