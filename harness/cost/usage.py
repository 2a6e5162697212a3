"""What a question run cost and how long it took: the tokens its model calls used (from the
usage the chat models report), what they cost (priced by a table), and how long the question,
each model call and each tool call took.

A model call that reported no usage is counted as unknown, never as zero tokens: a figure
built on unknown calls says so ("+2 calls without usage"), and a model the price table does
not know is "unpriced", never free. The agent's calls and the judges' calls are accounted
apart: budgets hold the agent (what a team ships); the judges' cost is reported beside it.

Plain data (floor 1): the recorder fills `ModelCall`s, the runner folds them into a
`QuestionUsage`, the store keeps it as JSON, and every report, `compare` and the gate read it
back through `QuestionUsage.model_validate`.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "UNPRICED",
    "Latency",
    "ModelCall",
    "ModelTokens",
    "QuestionUsage",
    "RunTotals",
    "Tokens",
    "TokensSum",
    "TotalsFold",
    "format_cost",
    "format_over",
    "format_seconds",
    "format_tokens",
    "judge_meter",
    "model_call",
    "percentile",
    "record_judge_call",
    "replayed_note",
    "run_totals",
    "stored_usage",
    "token_count",
]

UNPRICED = "unpriced"
"""How every report shows the cost of a model the price table does not know."""


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One chat model call as the recorder saw it. Token counts are None when the model
    reported no usage (unknown, not zero)."""

    model: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    """Input tokens served from the provider's prompt cache (a part of `input_tokens`)."""
    latency_s: float = 0.0
    replayed: bool = False
    """Answered from a cassette: its tokens and cost were recorded once, not spent now."""

    @property
    def reported(self) -> bool:
        return self.input_tokens is not None or self.output_tokens is not None


def token_count(value: Any) -> int | None:
    """A token count a model reported, or None (unknown) for anything that is not a finite
    count: missing, negative, NaN, infinite, a string."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return int(value) if value >= 0 else None


def model_call(
    model: str, usage: Mapping[str, Any] | None, latency_s: float, *, replayed: bool = False
) -> ModelCall:
    """A `ModelCall` from LangChain's `usage_metadata` (`input_tokens`, `output_tokens`,
    `input_token_details.cache_read`) or an OpenAI-style `usage` (`prompt_tokens`,
    `completion_tokens`, `prompt_tokens_details.cached_tokens`); None or {}: unknown."""
    if not usage:
        return ModelCall(model=model, latency_s=latency_s, replayed=replayed)
    inp = token_count(usage.get("input_tokens", usage.get("prompt_tokens")))
    out = token_count(usage.get("output_tokens", usage.get("completion_tokens")))
    details = usage.get("input_token_details") or usage.get("prompt_tokens_details") or {}
    cached = None
    if isinstance(details, Mapping):
        cached = token_count(details.get("cache_read", details.get("cached_tokens")))
    return ModelCall(model, inp, out, cached, latency_s, replayed)


_JUDGE_CALLS: ContextVar[list[ModelCall] | None] = ContextVar(
    "tracegrade_judge_calls", default=None
)


@contextmanager
def judge_meter() -> Iterator[list[ModelCall]]:
    """The judge calls made while grading one question (in this task and the tasks and
    threads it starts) are appended to the list it yields."""
    calls: list[ModelCall] = []
    token = _JUDGE_CALLS.set(calls)
    try:
        yield calls
    finally:
        _JUDGE_CALLS.reset(token)


def record_judge_call(call: ModelCall) -> None:
    """A judge call, metered for the question being graded (none: not metered)."""
    calls = _JUDGE_CALLS.get()
    if calls is not None:
        calls.append(call)


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)


class ModelTokens(_Model):
    """One model's calls within a question (or a run)."""

    calls: int = 0
    """Model calls made."""
    unknown_calls: int = 0
    """Calls that reported no usage: their tokens are unknown, not zero."""
    input_tokens: int = 0
    """Input tokens over the calls that reported usage (cached ones included)."""
    output_tokens: int = 0
    """Output tokens over the calls that reported usage."""
    cached_tokens: int = 0
    """Input tokens served from the provider's cache."""
    replayed_calls: int = 0
    """Calls answered from a cassette: counted as recorded, not spent by this run."""

    def add(self, other: ModelTokens) -> None:
        self.calls += other.calls
        self.replayed_calls += other.replayed_calls
        self.unknown_calls += other.unknown_calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cached_tokens += other.cached_tokens


class Tokens(_Model):
    """The calls of one side (the agent's, or the judges'), per model, priced."""

    models: dict[str, ModelTokens] = Field(default_factory=dict)
    """Per model name."""
    cost: float | None = None
    """What the calls that reported usage cost, in `currency`; None when a model is unpriced
    or no call reported usage."""
    currency: str | None = None
    """The price table's currency."""
    unpriced: list[str] = Field(default_factory=list)
    """Models the price table has no price for (their cost is unknown, never zero)."""

    @property
    def calls(self) -> int:
        return sum(m.calls for m in self.models.values())

    @property
    def unknown_calls(self) -> int:
        return sum(m.unknown_calls for m in self.models.values())

    @property
    def replayed_calls(self) -> int:
        return sum(m.replayed_calls for m in self.models.values())

    @property
    def input_tokens(self) -> int:
        return sum(m.input_tokens for m in self.models.values())

    @property
    def output_tokens(self) -> int:
        return sum(m.output_tokens for m in self.models.values())

    @property
    def cached_tokens(self) -> int:
        return sum(m.cached_tokens for m in self.models.values())

    @property
    def total_tokens(self) -> int | None:
        """Input plus output tokens; None when no call reported usage."""
        if self.calls and self.unknown_calls == self.calls:
            return None
        return self.input_tokens + self.output_tokens

    def add(self, calls: Iterable[ModelCall]) -> None:
        for c in calls:
            m = self.models.setdefault(c.model, ModelTokens())
            m.calls += 1
            m.replayed_calls += c.replayed
            if not c.reported:
                m.unknown_calls += 1
                continue
            m.input_tokens += c.input_tokens or 0
            m.output_tokens += c.output_tokens or 0
            m.cached_tokens += c.cached_tokens or 0

    def merged(self, others: Iterable[Tokens]) -> Tokens:
        """This side plus `others` (a run's total), priced as their parts were."""
        total = TokensSum(self.currency)
        for part in (self, *others):
            total.add(part)
        return total.result()


class TokensSum:
    """`Tokens.merged` one part at a time: what it keeps is the sums (and each part's cost,
    summed exactly at the end), never the parts."""

    def __init__(self, currency: str | None = None) -> None:
        self.out = Tokens(currency=currency)
        self.unpriced: set[str] = set()
        self.costs = array("d")
        self.unknown_cost = False

    def add(self, part: Tokens) -> None:
        for name, m in part.models.items():
            self.out.models.setdefault(name, ModelTokens()).add(m)
        self.unpriced |= set(part.unpriced)
        self.out.currency = self.out.currency or part.currency
        if part.calls:
            if part.cost is None:
                self.unknown_cost = True
            else:
                self.costs.append(part.cost)

    def result(self) -> Tokens:
        out = self.out.model_copy(deep=True)
        out.unpriced = sorted(self.unpriced)
        unknown = out.unpriced or self.unknown_cost
        out.cost = None if unknown else math.fsum(self.costs)
        return out


class Latency(_Model):
    """How long a question took: its wall time, each model call and each tool call."""

    wall_s: float = 0.0
    """The question run's wall time (agent run, not grading)."""
    model_calls: list[float] = Field(default_factory=list)
    """Each model call's seconds, in order."""
    tools: dict[str, list[float]] = Field(default_factory=dict)
    """Each tool call's seconds, by tool name."""


class QuestionUsage(_Model):
    """A question run's accounting: the agent's calls, the judges' calls, latencies."""

    agent: Tokens = Field(default_factory=Tokens)
    """The agent's model calls."""
    judges: Tokens = Field(default_factory=Tokens)
    """The judges' model calls while grading it (cached answers cost nothing and are not
    calls)."""
    latency: Latency = Field(default_factory=Latency)
    """Wall, model-call and tool-call latencies."""
    prices: str | None = None
    """Version of the price table it was priced with."""
    unavailable: str | None = None
    """Why nothing is known of what the agent used (a trace whose spans carry no token
    counts): its budgets are not applicable, with this reason."""

    @property
    def cost(self) -> float | None:
        """The agent's cost (what budgets hold); None when unpriced or unknown."""
        return self.agent.cost

    @property
    def tokens(self) -> int | None:
        """The agent's input plus output tokens; None when no call reported usage."""
        return self.agent.total_tokens


def stored_usage(agent: Mapping[str, Any], judges: Mapping[str, Any]) -> QuestionUsage | None:
    """A question's accounting from the store: its run row's `usage` (the agent's side) and
    its grading's `judge_usage`; None when the run recorded none (an older release)."""
    if not agent:
        return None
    usage = QuestionUsage.model_validate(agent)
    if judges:
        usage.judges = Tokens.model_validate(judges)
    return usage


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank `q` percentile (0–100) of `values`; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass(frozen=True, slots=True)
class RunTotals:
    """A run's (or a target's) accounting over its questions."""

    agent: Tokens
    judges: Tokens
    questions: int
    """Question runs with an accounting (older runs have none)."""
    wall: Sequence[float]
    model_calls: Sequence[float]
    tools: Mapping[str, Sequence[float]]

    @property
    def cost(self) -> float | None:
        return self.agent.cost

    def wall_percentile(self, q: float) -> float | None:
        """The `q` percentile of the questions' wall times: what the console prints, the
        JSON report writes and `max_p95_latency_s` holds."""
        return percentile(self.wall, q)

    def as_dict(self) -> dict[str, Any]:
        """The totals as the JSON report writes them (`summary.<target>.totals`, `totals`):
        the agent's tokens and cost (None: unpriced or unknown, never 0), the judges' apart,
        question latency p50/p95/max, model-call p50/p95 and each tool's latency."""

        def side(t: Tokens) -> dict[str, Any]:
            return {
                "cost": t.cost,
                "currency": t.currency,
                "unpriced": list(t.unpriced),
                "model_calls": t.calls,
                "unknown_calls": t.unknown_calls,
                "input_tokens": t.input_tokens,
                "output_tokens": t.output_tokens,
                "cached_tokens": t.cached_tokens,
                "total_tokens": t.total_tokens,
            }

        return {
            "questions": self.questions,
            "agent": side(self.agent),
            "judges": side(self.judges),
            "latency_s": {
                "p50": self.wall_percentile(50),
                "p95": self.wall_percentile(95),
                "max": max(self.wall) if self.wall else None,
            },
            "model_call_latency_s": {
                "p50": percentile(self.model_calls, 50),
                "p95": percentile(self.model_calls, 95),
            },
            "tools": self.tool_latency(),
        }

    def tool_latency(self) -> dict[str, dict[str, float | int | None]]:
        """p50, p95 and max seconds per tool, with its call count."""
        return {
            name: {
                "calls": len(vs),
                "p50": percentile(vs, 50),
                "p95": percentile(vs, 95),
                "max": max(vs) if vs else None,
            }
            for name, vs in sorted(self.tools.items())
        }


def run_totals(usages: Iterable[QuestionUsage | None]) -> RunTotals:
    """Sum question accountings (None: a question without one, e.g. a run from an older
    release)."""
    fold = TotalsFold()
    for usage in usages:
        fold.add(usage)
    return fold.totals()


class TotalsFold:
    """`run_totals` one question at a time (a streamed run's totals): it keeps the sums and
    the latencies the percentiles need, never the accountings."""

    def __init__(self) -> None:
        self.agent = TokensSum()
        self.judges = TokensSum()
        self.questions = 0
        # the percentiles need every figure: kept as doubles (8 bytes), never as float objects
        self.wall = array("d")
        self.model_calls = array("d")
        self.tools: dict[str, array[float]] = {}
        self.missing = 0
        """Questions without an accounting."""

    def add(self, usage: QuestionUsage | None) -> None:
        if usage is None:
            self.missing += 1
            return
        self.questions += 1
        self.agent.add(usage.agent)
        self.judges.add(usage.judges)
        self.wall.append(usage.latency.wall_s)
        self.model_calls.extend(usage.latency.model_calls)
        for name, vs in usage.latency.tools.items():
            self.tools.setdefault(name, array("d")).extend(vs)

    def totals(self) -> RunTotals:
        got = bool(self.questions)
        return RunTotals(
            agent=self.agent.result() if got else Tokens(),
            judges=self.judges.result() if got else Tokens(),
            questions=self.questions,
            wall=self.wall,
            model_calls=self.model_calls,
            tools=dict(self.tools),
        )


_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£"}


def format_cost(tokens: Tokens | None, *, digits: int | None = None) -> str:
    """A cost as every report shows it: `$0.0123`, `unpriced`, `unknown` (no call reported
    usage), a `+N calls without usage` suffix when some did not, `-` with no accounting.
    `digits`: the decimals to show (default: four, or two significant digits below a cent)."""
    if tokens is None:
        return "-"
    if tokens.unpriced:
        return UNPRICED + replayed_note(tokens)
    if tokens.cost is None:
        return "unknown" + replayed_note(tokens) if tokens.calls else "-"
    symbol = _SYMBOLS.get(tokens.currency or "USD")
    number = _amount(tokens.cost) if digits is None else f"{tokens.cost:.{digits}f}"
    amount = f"{symbol}{number}" if symbol else f"{number} {tokens.currency}"
    unknown = tokens.unknown_calls
    text = f"{amount} +{unknown} call(s) without usage" if unknown else amount
    return f"{text}{replayed_note(tokens)}"


def replayed_note(tokens: Tokens | None) -> str:
    """` (recorded: N of M calls replayed, not spent)` when calls came from a cassette."""
    if tokens is None or not tokens.replayed_calls:
        return ""
    return f" (recorded: {tokens.replayed_calls} of {tokens.calls} calls replayed, not spent)"


def _amount(value: float) -> str:
    """Four decimals; a fraction of a cent to two significant digits (`0.0011`, `0.000040`),
    never `0.0000`."""
    if 0 < abs(value) < 0.01:
        return f"{value:.{1 - math.floor(math.log10(abs(value)))}f}"
    return f"{value:.4f}"


def format_over(actual: Tokens, limit: float) -> tuple[str, str]:
    """`actual`'s cost and a `limit` it exceeds, as a reason compares them: with as many
    decimals as tell the two apart (`$0.00151 > $0.00150`, never `$0.0015 > $0.0015`)."""
    bound = Tokens(cost=limit, currency=actual.currency)
    shown, limit_text = format_cost(actual), format_cost(bound)
    cost = actual.cost
    if cost is None or cost == limit or _amount(cost) != _amount(limit):
        return shown, limit_text
    digits = len(_amount(limit).partition(".")[2])
    most = 17 - math.floor(math.log10(limit)) if limit > 0 else 17  # a float's precision
    while digits < most and f"{cost:.{digits}f}" == f"{limit:.{digits}f}":
        digits += 1
    return format_cost(actual, digits=digits), format_cost(bound, digits=digits)


def format_tokens(tokens: Tokens | None) -> str:
    """Input/output tokens as reports show them (`1,234 in / 56 out`), `unknown` when no call
    reported usage."""
    if tokens is None or not tokens.calls:
        return "-"
    total = tokens.total_tokens
    if total is None:
        return "unknown"
    text = f"{tokens.input_tokens:,} in / {tokens.output_tokens:,} out"
    if tokens.cached_tokens:
        text += f" ({tokens.cached_tokens:,} cached)"
    if tokens.unknown_calls:
        text += f" +{tokens.unknown_calls} unknown"
    return text


def format_seconds(value: float | None) -> str:
    """`850 µs`, `12.5 ms`, `1.25 s`, `42.0 s`."""
    if value is None:
        return "-"
    if value < 0.001:
        return f"{value * 1e6:.0f} µs"
    if value < 1:
        return f"{value * 1e3:.1f} ms"
    return f"{value:.2f} s" if value < 10 else f"{value:.1f} s"
