"""What a question run cost: token counts from reported usage, priced by a table, never free
when unknown or unpriced."""

from __future__ import annotations

import pytest

from tracegrade.cost.pricing import BUNDLED_VERSION, PriceTable, question_usage
from tracegrade.cost.usage import (
    UNPRICED,
    ModelCall,
    QuestionUsage,
    Tokens,
    format_cost,
    format_seconds,
    format_tokens,
    judge_meter,
    model_call,
    percentile,
    record_judge_call,
    run_totals,
)


def test_usage_metadata_and_openai_usage_read_alike():
    lc = model_call(
        "m",
        {"input_tokens": 100, "output_tokens": 20, "input_token_details": {"cache_read": 40}},
        0.5,
    )
    oa = model_call(
        "m",
        {
            "prompt_tokens": 100,
            "completion_tokens": 20,
            "prompt_tokens_details": {"cached_tokens": 40},
        },
        0.5,
    )
    assert lc == oa == ModelCall("m", 100, 20, 40, 0.5)


def test_a_call_without_usage_is_unknown_never_zero():
    tokens = Tokens()
    tokens.add([model_call("gpt-4o", None, 0.1), model_call("gpt-4o", {}, 0.1)])
    PriceTable.build().price(tokens)
    assert tokens.calls == 2 and tokens.unknown_calls == 2
    assert tokens.total_tokens is None
    assert tokens.cost is None
    assert format_cost(tokens) == "unknown"
    assert format_tokens(tokens) == "unknown"


def test_some_calls_without_usage_are_said_beside_the_figure():
    tokens = Tokens()
    tokens.add([ModelCall("gpt-4o", 1_000_000, 0), ModelCall("gpt-4o")])
    PriceTable.build().price(tokens)
    assert tokens.cost == pytest.approx(2.50)
    assert format_cost(tokens) == "$2.5000 +1 call(s) without usage"
    assert format_seconds(0.0004) == "400 µs" and format_seconds(0.0125) == "12.5 ms"
    assert format_seconds(1.25) == "1.25 s"


def test_cached_tokens_are_charged_at_the_cached_price():
    table = PriceTable.build({"m": {"input": 2.0, "output": 8.0, "cached": 0.5}})
    tokens = Tokens()
    tokens.add([ModelCall("m", 1_000_000, 500_000, 400_000)])
    table.price(tokens)
    # 600k fresh input at 2, 400k cached at 0.5, 500k output at 8
    assert tokens.cost == pytest.approx(1.2 + 0.2 + 4.0)


def test_an_unpriced_model_is_unpriced_not_free():
    tokens = Tokens()
    tokens.add([ModelCall("my-local-llama", 500, 50), ModelCall("gpt-4o", 500, 50)])
    PriceTable.build().price(tokens)
    assert tokens.cost is None
    assert tokens.unpriced == ["my-local-llama"]
    assert format_cost(tokens) == UNPRICED


def test_config_overrides_the_bundled_table_and_changes_its_version():
    bundled = PriceTable.build()
    own = PriceTable.build(
        {"gpt-4o": {"input": 1.0, "output": 1.0}, "scripted-*": {"input": 3, "output": 15}}
    )
    assert bundled.version == BUNDLED_VERSION
    assert own.version.startswith(BUNDLED_VERSION + "+config-")
    assert own.price_of("gpt-4o").input == 1.0
    assert own.price_of("scripted-support-good").output == 15
    assert own.price_of("gpt-4o-mini-2024-07-18").input == 0.15  # bundled pattern still there
    # exact name wins over a pattern listed earlier
    table = PriceTable.build(
        {"gpt-*": {"input": 9, "output": 9}, "gpt-4o": {"input": 1, "output": 1}}
    )
    assert table.price_of("gpt-4o").input == 1
    assert table.price_of("gpt-5").input == 9


def test_another_currency_drops_the_bundled_usd_table():
    table = PriceTable.build({"m": {"input": 1, "output": 1}}, currency="EUR")
    assert table.price_of("gpt-4o") is None
    tokens = Tokens()
    tokens.add([ModelCall("m", 1_000_000, 0)])
    table.price(tokens)
    assert format_cost(tokens) == "€1.0000"


def test_percentiles_are_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50
    assert percentile(values, 95) == 95
    assert percentile([3.0], 95) == 3.0
    assert percentile([], 50) is None


def test_run_totals_sum_questions_and_stay_unpriced_when_one_is():
    table = PriceTable.build({"a": {"input": 1, "output": 1}})
    q1 = question_usage(
        [ModelCall("a", 1_000_000, 0, latency_s=0.2)],
        wall_s=1,
        prices=table,
        tools={"lookup": [0.1, 0.3]},
    )
    q2 = question_usage(
        [ModelCall("a", 1_000_000, 0)], wall_s=2, prices=table, tools={"lookup": [0.2]}
    )
    totals = run_totals([q1, q2, None])
    assert totals.questions == 2 and totals.cost == pytest.approx(2.0)
    assert totals.tool_latency()["lookup"] == {"calls": 3, "p50": 0.2, "p95": 0.3, "max": 0.3}
    q3 = question_usage([ModelCall("b", 10, 10)], wall_s=1, prices=table)
    assert run_totals([q1, q3]).cost is None
    assert format_cost(run_totals([q1, q3]).agent) == UNPRICED


def test_the_stored_shape_reads_back():
    usage = question_usage([ModelCall("gpt-4o", 10, 5, latency_s=0.01)], wall_s=0.5)
    again = QuestionUsage.model_validate(usage.model_dump(mode="json"))
    assert again.cost == usage.cost and again.tokens == 15
    assert again.prices == BUNDLED_VERSION


async def test_the_judge_meter_collects_calls_of_its_question_only():
    record_judge_call(ModelCall("j", 1, 1))  # outside any meter: dropped, no error
    with judge_meter() as calls:
        record_judge_call(ModelCall("j", 1, 1))
    record_judge_call(ModelCall("j", 1, 1))
    assert len(calls) == 1


def test_a_fraction_of_a_cent_is_never_shown_as_zero():
    tokens = Tokens(cost=0.00004, currency="USD")
    assert format_cost(tokens) == "$0.000040"
    assert format_cost(Tokens(cost=0.0011436, currency="USD")) == "$0.0011"
    assert format_cost(Tokens(cost=0.0011, currency="USD")) == "$0.0011"
    assert format_cost(Tokens(cost=12.5, currency="USD")) == "$12.5000"
