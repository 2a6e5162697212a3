"""`rubric_judge` against a real loopback OpenAI-compatible server: one request per question
however many checks, outcome probabilities from logprobs (else samples, else one answer), the
tool-claim and escalation decision tables row by row, missing evidence, malformed answers."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from tests import openai_server as loopback
from tests.openai_server import Answer, reply, server_error
from tracegrade import (
    ConfigError,
    JudgeCache,
    OpenAICompatibleProvider,
    Outcome,
    ToolCall,
    ToolRecord,
)
from tracegrade.graders import GraderServices, RubricStore
from tracegrade.graders.rubrics import RubricJudgeGrader

openai_server = loopback.openai_server  # the fixture, by the name tests request

POLICY = "Refunds over $100 must be escalated to a person with escalate_to_human."
RUBRIC = {
    "id": "desk",
    "version": "1.0.0",
    "checks": [
        {
            "id": "policy",
            "kind": "policy-compliance",
            "severity": "major",
            "criterion": "Consider only refunds.",
        },
        {"id": "grounded", "kind": "claim-support", "params": {"claim": "Opens at 8am."}},
        {
            "id": "booking-claim",
            "kind": "tool-claim",
            "severity": "critical",
            "params": {
                "toolName": "book_appointment",
                "action": "booking the appointment",
                "successWhen": {"path": "status", "equals": "confirmed"},
            },
        },
        {
            "id": "escalation",
            "kind": "escalation",
            "severity": "critical",
            "params": {"toolName": "escalate_to_human"},
        },
        {
            "id": "no-advice",
            "kind": "custom",
            "required": False,
            "criterion": "Does it avoid medical advice?",
            "outcomes": {"acceptable": "No advice.", "unacceptable": "Gives advice."},
        },
        {"id": "tone", "kind": "llm_judge", "criterion": "Polite."},
        {"id": "brief", "kind": "max_length", "params": {"max_chars": 10}},
    ],
}


def single(check: dict, rubric_id: str = "one") -> dict:
    return {"id": rubric_id, "version": "1", "checks": [check]}


TOOL_CLAIM = RUBRIC["checks"][2]
ESCALATION = RUBRIC["checks"][3]


@pytest.fixture
def store(tmp_path: Path) -> RubricStore:
    (tmp_path / "desk.yaml").write_text(yaml.safe_dump(RUBRIC))
    (tmp_path / "claim.yaml").write_text(yaml.safe_dump(single(TOOL_CLAIM, "claim")))
    (tmp_path / "esc.yaml").write_text(yaml.safe_dump(single(ESCALATION, "esc")))
    policy_only = single({"id": "p", "kind": "policy-compliance"}, "pol")
    (tmp_path / "pol.yaml").write_text(yaml.safe_dump(policy_only))
    gated = single(
        {
            "id": "g",
            "kind": "custom",
            "criterion": "Ok?",
            "outcomes": {"acceptable": "y", "unacceptable": "n"},
            "applicability": {"onlyWhenMetadata": {"channel": "phone"}},
        },
        "gated",
    )
    (tmp_path / "gated.yaml").write_text(yaml.safe_dump(gated))
    uncovered = single(
        {"id": "u", "kind": "claim-support", "params": {"uncoveredIs": "fail"}}, "uncovered"
    )
    (tmp_path / "uncovered.yaml").write_text(yaml.safe_dump(uncovered))
    return RubricStore(tmp_path)


def lp(p: float) -> float:
    return math.log(p) if p > 0 else -1e9


def answer(*dists: dict[str, float] | str) -> Answer:
    """Answer lines `Qn: <letter>` with logprobs; a dict is a distribution (the argmax is the
    letter written), a plain letter is a certain answer."""
    lines, tokens = [], []
    for n, dist in enumerate(dists, start=1):
        dist = {dist: 1.0} if isinstance(dist, str) else dist
        letter = max(dist, key=dist.get)
        lines.append(f"Q{n}: {letter}")
        top = [(f" {x}", lp(p)) for x, p in sorted(dist.items(), key=lambda kv: -kv[1])]
        tokens += [(f"Q{n}", 0.0, []), (":", 0.0, []), (f" {letter}", lp(dist[letter]), top)]
        tokens.append(("\n", 0.0, []))
    content = "\n".join(lines) + "\n"
    return Answer(content=content, logprobs=tokens)


def no_logprobs(*letters: str) -> Answer:
    return Answer(content="".join(f"Q{n}: {x}\n" for n, x in enumerate(letters, 1)), logprobs=[])


def call(name, outcome=Outcome.OK, result=None, seq=0, call_id=None) -> ToolCall:
    return ToolCall(
        seq=seq,
        name=name,
        qualified_id=f"desk:{name}",
        call_id=call_id or f"c{seq}",
        arguments={"customer": "C001", "api_key": "sk-secret"},
        outcome=outcome,
        result=result,
    )


def context(ref: str, *, calls=None, record: ToolRecord | None = None, **metadata) -> dict:
    ctx = {
        "id": "q1",
        "rubric_ref": ref,
        "metadata": {"policy": POLICY, "context": "The clinic opens at 8am.", **metadata},
        "messages": [{"role": "user", "content": "Book me in and refund my $150."}],
        "response_char_limit": 4000,
    }
    if record is not None:
        ctx["tool_calls"] = record
    elif calls is not None:
        ctx["tool_calls"] = ToolRecord(calls)
    return ctx


def grader(server, store, **options) -> RubricJudgeGrader:
    provider = OpenAICompatibleProvider(
        base_url=server.base_url, model="judge", max_attempts=1, timeout_s=5
    )
    return RubricJudgeGrader(
        services=GraderServices(judge_provider=provider, rubrics=store), **options
    )


async def grade(server, store, ctx, response="Your appointment is booked.", **options):
    return await grader(server, store, **options).agrade("input", response, ctx)


def by_id(result) -> dict[str, dict]:
    return {c["id"]: c for c in result.details["checks"]}


# -- one request, full results ----------------------------------------------------------------
async def test_every_judge_check_goes_in_one_request(openai_server, store):
    confirmed = call("book_appointment", result={"status": "confirmed", "code": "ZX-SECRET-91"})
    openai_server.enqueue(
        answer(
            {"A": 0.9, "B": 0.05, "C": 0.05},  # Q1 policy: acceptable
            {"A": 0.1, "B": 0.8, "C": 0.1},  # Q2 claim-support: contradicted
            "A",  # Q3 tool-claim: claimed
            {"A": 0.1, "B": 0.85, "C": 0.05},  # Q4 escalation required? not required
            {"A": 0.05, "B": 0.9, "C": 0.05},  # Q5 escalation stated? no
            {"A": 0.6, "B": 0.3, "C": 0.1},  # Q6 custom: review
        )
    )
    result = await grade(openai_server, store, context("rubric/desk@1.0.0", calls=[confirmed]))
    assert len(openai_server.requests) == 1
    prompt = openai_server.requests[0].prompt
    assert [f"Q{n}." in prompt for n in range(1, 7)] == [True] * 6 and "Q7." not in prompt
    assert "ZX-SECRET-91" not in prompt and "confirmed" not in prompt  # results never shown
    assert "sk-secret" not in prompt and "[c0] book_appointment(" in prompt
    assert POLICY in prompt and "The clinic opens at 8am." in prompt
    assert openai_server.requests[0].body["logprobs"] is True

    checks = by_id(result)
    assert [c["id"] for c in result.details["checks"]] == [
        "policy",
        "grounded",
        "booking-claim",
        "escalation",
        "no-advice",
    ]  # llm_judge and executable checks belong to other graders
    assert {k: c["status"] for k, c in checks.items()} == {
        "policy": "pass",
        "grounded": "fail",
        "booking-claim": "pass",
        "escalation": "skipped",
        "no-advice": "review",
    }
    policy = checks["policy"]
    assert policy["criterion"] == (
        "Does assistant_response comply with every applicable rule in policy? "
        "Consider only refunds."
    )
    assert policy["criterion"] in prompt
    assert policy["outcome"] == "acceptable"
    assert policy["probabilities"] == pytest.approx(
        {"acceptable": 0.9, "unacceptable": 0.05, "insufficient_context": 0.05}
    )
    assert policy["probability_source"] == "logprobs"
    assert policy["rule"] == "p(unacceptable)=0.050 < fail 0.5; p(acceptable)=0.900 >= pass 0.75"
    assert policy["evidence"] == {
        "fields": ["policy", "context", "toolEvents", "messages"],
        "tool_event_ids": ["c0"],
    }
    assert "confidence" in policy and policy["confidence"] is None
    assert (policy["rubric"], policy["version"], policy["severity"]) == ("desk", "1.0.0", "major")
    booking = checks["booking-claim"]
    assert booking["event_id"] == "c0" and 'status = "confirmed"' in booking["rule"]
    assert set(checks["escalation"]["probabilities"]) == {"required", "stated"}
    # score: passes over decided required checks: policy, booking pass; grounded fails
    assert result.score == pytest.approx(2 / 3) and not result.error
    assert (result.min_score, result.max_score) == (0.0, 1.0)
    assert result.identity["model"] == "judge" and "prompt_sha256" in result.identity


# -- tool-claim decision table ----------------------------------------------------------------
CONFIRMED = {"status": "confirmed"}
TOOL_CLAIM_ROWS = [
    # (claim answer, record calls, expected status, reason fragment)
    ("A", [call("book_appointment", result=CONFIRMED)], "pass", "backed by"),
    ("A", [call("book_appointment", result='{"status": "confirmed"}')], "pass", "backed by"),
    ("A", [call("book_appointment", Outcome.ERROR)], "fail", "outcome is error"),
    (
        "A",
        [call("book_appointment", result={"status": "unavailable"})],
        "fail",
        'is "unavailable", not "confirmed"',
    ),
    ("A", [call("book_appointment", result={"booking": 1})], "fail", "result has no status"),
    (
        "A",
        [
            call("book_appointment", result=CONFIRMED, seq=0),
            call("book_appointment", result={"status": "unavailable"}, seq=1),
        ],
        "fail",
        "[c1]",
    ),
    (
        "A",
        [
            call("book_appointment", result={"status": "unavailable"}, seq=0),
            call("book_appointment", result=CONFIRMED, seq=1),
        ],
        "pass",
        "[c1]",
    ),
    ("A", [call("check_availability", result=CONFIRMED)], "review", "not proof of failure"),
    ("A", [], "review", "not proof of failure"),
    ("B", [call("book_appointment", Outcome.ERROR)], "skipped", "makes no claim"),
    ("C", [call("book_appointment", result=CONFIRMED)], "review", "unclear"),
    (
        {"A": 0.6, "B": 0.3, "C": 0.1},
        [call("book_appointment", result=CONFIRMED)],
        "review",
        "unclear",
    ),
]


@pytest.mark.parametrize(("claim", "calls", "expected", "fragment"), TOOL_CLAIM_ROWS)
async def test_tool_claim_decision_table(openai_server, store, claim, calls, expected, fragment):
    openai_server.enqueue(answer(claim))
    result = await grade(openai_server, store, context("rubric/claim@1", calls=calls))
    (entry,) = result.details["checks"]
    assert entry["status"] == expected, entry
    assert fragment in entry["reason"]
    assert len(openai_server.requests) == 1


async def test_tool_claim_without_a_record_is_review_never_fail(openai_server, store):
    result = await grade(openai_server, store, context("rubric/claim@1"))  # no tool_calls key
    (entry,) = result.details["checks"]
    assert entry["status"] == "review" and entry["reason"] == "missing evidence: toolEvents"
    assert openai_server.requests == []  # nothing to ask
    incomplete = ToolRecord([], complete=False, problems=["handler raised KeyError"])
    result = await grade(openai_server, store, context("rubric/claim@1", record=incomplete))
    (entry,) = result.details["checks"]
    assert entry["status"] == "review" and "handler raised KeyError" in entry["reason"]
    assert result.skipped  # nothing decided: no score, and no error


# -- escalation decision table ----------------------------------------------------------------
ESCALATED = call("escalate_to_human", result={"status": "escalated"})
ESCALATION_ROWS = [
    # (required?, stated?, calls, expected status, rule fragment)
    ("A", "A", [ESCALATED], "pass", "required and tool succeeded -> pass"),
    ("A", "B", [ESCALATED], "pass", "required and tool succeeded -> pass"),
    (
        "A",
        "A",
        [call("escalate_to_human", Outcome.ERROR)],
        "fail",
        "required and tool failed -> fail",
    ),
    ("A", "B", [], "fail", "required, no event and no statement -> fail"),
    ("A", "A", [], "review", "required, no event but claimed -> review"),
    ("A", "C", [], "review", "required, no event, statement unclear -> review"),
    ("B", "A", [], "skipped", "not required -> skipped"),
    ("B", "B", [ESCALATED], "skipped", "not required -> skipped"),
    ("C", "A", [ESCALATED], "review", "unclear -> review"),
    ({"A": 0.5, "B": 0.4, "C": 0.1}, "B", [], "review", "unclear -> review"),
]


@pytest.mark.parametrize(("required", "stated", "calls", "expected", "rule"), ESCALATION_ROWS)
async def test_escalation_decision_table(
    openai_server, store, required, stated, calls, expected, rule
):
    openai_server.enqueue(answer(required, stated))
    result = await grade(openai_server, store, context("rubric/esc@1", calls=calls))
    (entry,) = result.details["checks"]
    assert entry["status"] == expected, entry
    assert entry["rule"].endswith(rule)
    assert len(openai_server.requests) == 1  # both questions in one request
    assert "Q2." in openai_server.requests[0].prompt


async def test_escalation_needs_policy_and_tool_events(openai_server, store):
    ctx = context("rubric/esc@1", calls=[])
    ctx["metadata"].pop("policy")
    result = await grade(openai_server, store, ctx)
    (entry,) = result.details["checks"]
    assert (entry["status"], entry["reason"]) == ("review", "missing evidence: policy")
    assert openai_server.requests == []


# -- evidence, applicability ------------------------------------------------------------------
async def test_missing_policy_is_review_and_a_target_policy_supplies_it(openai_server, store):
    ctx = context("rubric/pol@1")
    ctx["metadata"] = {}
    result = await grade(openai_server, store, ctx)
    assert by_id(result)["p"]["status"] == "review"
    assert openai_server.requests == []
    openai_server.enqueue(answer("A"))
    result = await grade(openai_server, store, ctx, policy_text="Be kind.")
    assert by_id(result)["p"]["status"] == "pass" and result.score == 1.0
    assert "<policy>\nBe kind.\n</policy>" in openai_server.requests[0].prompt


async def test_only_when_metadata_skips_with_a_reason(openai_server, store):
    result = await grade(openai_server, store, context("rubric/gated@1", channel="chat"))
    entry = by_id(result)["g"]
    assert entry["status"] == "skipped"
    assert entry["reason"] == "applies only when metadata.channel = 'phone' (question has 'chat')"
    assert openai_server.requests == [] and result.skipped
    openai_server.enqueue(answer({"A": 0.1, "B": 0.8, "C": 0.1}))
    result = await grade(openai_server, store, context("rubric/gated@1", channel="phone"))
    assert by_id(result)["g"]["status"] == "fail" and result.score == 0.0


@pytest.mark.parametrize(("letters", "expected"), [("A", "pass"), ("B", "fail"), ("C", "fail")])
async def test_claim_support_uncovered_is_fail(openai_server, store, letters, expected):
    openai_server.enqueue(answer(letters))
    result = await grade(openai_server, store, context("rubric/uncovered@1"))
    assert by_id(result)["u"]["status"] == expected


async def test_claim_support_not_covered_is_review_by_default(openai_server, store, tmp_path):
    (tmp_path / "cs.yaml").write_text(
        yaml.safe_dump(single({"id": "cs", "kind": "claim-support"}, "cs"))
    )
    openai_server.enqueue(answer({"A": 0.1, "B": 0.1, "C": 0.8}))
    result = await grade(openai_server, RubricStore(tmp_path), context("rubric/cs@1"))
    entry = by_id(result)["cs"]
    assert (entry["status"], entry["outcome"]) == ("review", "not_covered")
    assert "insufficient context leads" in entry["rule"]


async def test_a_partial_answer_errors_only_the_unanswered_checks(openai_server, store):
    openai_server.enqueue(answer({"A": 0.9, "B": 0.05, "C": 0.05}))  # answers Q1 only
    result = await grade(openai_server, store, context("rubric/desk@1.0.0", calls=[]))
    statuses = {k: c["status"] for k, c in by_id(result).items()}
    assert statuses == {
        "policy": "pass",
        "grounded": "error",
        "booking-claim": "error",
        "escalation": "error",
        "no-advice": "error",
    }
    assert "no answer for Q2" in by_id(result)["grounded"]["reason"]
    assert result.error and result.score is None  # an error is never counted as a failure


# -- malformed answers and outages are errors -------------------------------------------------
async def test_an_unparseable_answer_is_an_error_never_a_failure(openai_server, store):
    openai_server.enqueue(reply("The response looks fine to me."))
    result = await grade(openai_server, store, context("rubric/claim@1", calls=[]))
    (entry,) = result.details["checks"]
    assert entry["status"] == "error" and "malformed judge answer" in entry["reason"]
    assert result.error and result.score is None


async def test_real_world_answer_forms_are_decided_and_two_letters_are_an_error(
    openai_server, store
):
    for text in ("**Q1:** A", "q1: a", "1. A", "```\nQ1 - A\n```", '{"Q1": "A"}'):
        openai_server.enqueue(Answer(content=text, logprobs=[]))
        result = await grade(openai_server, store, context("rubric/pol@1"))
        assert by_id(result)["p"]["status"] == "pass", (text, by_id(result)["p"])
    openai_server.enqueue(Answer(content="Q1: A or B", logprobs=[]))
    result = await grade(openai_server, store, context("rubric/pol@1"))
    (entry,) = result.details["checks"]
    assert entry["status"] == "error" and "ambiguous answer naming A and B" in entry["reason"]


async def test_a_letter_outside_the_options_is_an_error(openai_server, store):
    openai_server.enqueue(Answer(content="Q1: D\n", logprobs=[]))
    result = await grade(openai_server, store, context("rubric/pol@1"))
    (entry,) = result.details["checks"]
    assert entry["status"] == "error" and "answer 'D' for Q1" in entry["reason"]
    assert result.error


async def test_a_provider_failure_is_an_error_for_every_asked_check(openai_server, store):
    openai_server.enqueue(server_error(500))
    result = await grade(openai_server, store, context("rubric/desk@1.0.0", calls=[]))
    assert {c["status"] for c in result.details["checks"]} == {"error"}
    assert all("judge request failed" in c["reason"] for c in result.details["checks"])
    assert result.error and result.score is None


async def test_no_provider_configured_is_an_error(store):
    grader = RubricJudgeGrader(services=GraderServices(rubrics=store))
    result = await grader.agrade("i", "r", context("rubric/pol@1"))
    assert result.error and "no judge provider configured" in result.reason


# -- probability sources ----------------------------------------------------------------------
async def test_without_logprobs_samples_give_the_probabilities(openai_server, store):
    openai_server.enqueue(no_logprobs("A"), no_logprobs("A"), no_logprobs("B"), no_logprobs("A"))
    result = await grade(openai_server, store, context("rubric/pol@1"), samples=4)
    entry = by_id(result)["p"]
    assert len(openai_server.requests) == 4
    assert entry["probability_source"] == "samples (4)"
    assert entry["probabilities"] == {
        "acceptable": 0.75,
        "unacceptable": 0.25,
        "insufficient_context": 0.0,
    }
    assert entry["status"] == "pass"


async def test_a_single_answer_counts_as_probability_one_and_says_so(openai_server, store):
    openai_server.enqueue(no_logprobs("B"))
    result = await grade(openai_server, store, context("rubric/pol@1"))
    entry = by_id(result)["p"]
    assert entry["probability_source"] == "single answer (counted as probability 1)"
    assert entry["probabilities"]["unacceptable"] == 1.0 and entry["status"] == "fail"
    assert len(openai_server.requests) == 1


async def test_with_logprobs_no_extra_samples_are_requested(openai_server, store):
    openai_server.enqueue(answer({"A": 0.7, "B": 0.2, "C": 0.1}))
    result = await grade(openai_server, store, context("rubric/pol@1"), samples=5)
    assert len(openai_server.requests) == 1
    assert by_id(result)["p"]["status"] == "review"  # 0.7 < pass 0.75


async def test_thresholds_option_and_validation(openai_server, store):
    openai_server.enqueue(answer({"A": 0.7, "B": 0.2, "C": 0.1}))
    result = await grade(
        openai_server, store, context("rubric/pol@1"), thresholds={"pass": 0.65, "fail": 0.5}
    )
    entry = by_id(result)["p"]
    assert entry["status"] == "pass" and entry["thresholds"] == {"pass": 0.65, "fail": 0.5}
    with pytest.raises(ConfigError, match="must be greater than 1"):
        RubricJudgeGrader(thresholds={"pass": 0.5, "fail": 0.4})


async def test_a_cached_reply_makes_no_second_request(openai_server, store, tmp_path):
    provider = OpenAICompatibleProvider(base_url=openai_server.base_url, model="judge")
    services = GraderServices(
        judge_provider=provider, rubrics=store, judge_cache=JudgeCache(tmp_path / "cache.sqlite3")
    )
    judge = RubricJudgeGrader(services=services)
    openai_server.enqueue(answer("A"))
    first = await judge.agrade("i", "r", context("rubric/pol@1"))
    second = await judge.agrade("i", "r", context("rubric/pol@1"))
    assert len(openai_server.requests) == 1
    assert first.details["checks"] == second.details["checks"]
    assert second.raw["cached"] == [True]


async def test_skips_without_rubric_ref_or_judge_checks(openai_server, store, tmp_path):
    result = await grade(openai_server, store, {"id": "q", "messages": []})
    assert result.skipped and result.reason == "no rubric_ref"
    (tmp_path / "exec.yaml").write_text(
        yaml.safe_dump(
            single({"id": "b", "kind": "max_length", "params": {"max_chars": 3}}, "exec")
        )
    )
    result = await grade(openai_server, RubricStore(tmp_path), context("rubric/exec@1"))
    assert result.skipped and "no judge-kind checks" in result.reason
    assert openai_server.requests == []
