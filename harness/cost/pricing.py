"""What model calls cost: a price table (model name or glob pattern -> price per million input,
output and cached input tokens, in one currency), a small bundled table of common hosted models,
and a config's `pricing:` over it.

A model no entry covers has no price: the calls of it are "unpriced", never free
(`tracegrade.cost.usage.Tokens.unpriced`). The table a run priced with is recorded in its identity
(`describe()`: its version, `+config-<hash>` when a config changed it, and its entries).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .usage import Latency, ModelCall, QuestionUsage, Tokens

__all__ = ["BUNDLED_PRICES", "BUNDLED_VERSION", "Price", "PriceTable", "priced", "question_usage"]

BUNDLED_VERSION = "bundled-2026-11"
"""Version of the bundled table (prices as published in November 2026; a config's `pricing:`
overrides any of them, and the table a run used is recorded in its identity)."""

BUNDLED_PRICES: dict[str, tuple[float, float, float | None]] = {
    # pattern: (input, output, cached input) in USD per million tokens
    "gpt-4o": (2.50, 10.00, 1.25),
    "gpt-4o-2024-*": (2.50, 10.00, 1.25),
    "gpt-4o-mini*": (0.15, 0.60, 0.075),
    "gpt-4.1": (2.00, 8.00, 0.50),
    "gpt-4.1-mini*": (0.40, 1.60, 0.10),
    "gpt-4.1-nano*": (0.10, 0.40, 0.025),
    "o3": (2.00, 8.00, 0.50),
    "o4-mini*": (1.10, 4.40, 0.275),
    "claude-3-5-haiku*": (0.80, 4.00, 0.08),
    "claude-3-7-sonnet*": (3.00, 15.00, 0.30),
    "claude-sonnet-4*": (3.00, 15.00, 0.30),
    "claude-opus-4*": (15.00, 75.00, 1.50),
    "gemini-2.0-flash*": (0.10, 0.40, 0.025),
    "gemini-2.5-flash*": (0.30, 2.50, 0.075),
    "gemini-2.5-pro*": (1.25, 10.00, 0.31),
}


@dataclass(frozen=True, slots=True)
class Price:
    """Per million tokens."""

    input: float
    output: float
    cached: float | None = None
    """Cached input tokens; None: charged as input."""


@dataclass(frozen=True, slots=True)
class PriceTable:
    """Model name or glob pattern -> `Price`, in one currency. An exact name wins over a
    pattern; patterns are tried in order (the config's before the bundled ones)."""

    entries: tuple[tuple[str, Price], ...] = ()
    currency: str = "USD"
    version: str = ""
    _found: dict[str, Price | None] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )
    """Model name -> its price, as `price_of` found it (the table never changes): an unpriced
    model was every pattern's glob match on every question."""

    @classmethod
    def build(
        cls, config: Mapping[str, Mapping[str, Any]] | None = None, *, currency: str = "USD"
    ) -> PriceTable:
        """The bundled table (USD) overridden by a config's `pricing.models`; a config in
        another currency replaces the bundled table (prices in two currencies never add up)."""
        own = [
            (pattern, Price(float(p["input"]), float(p["output"]), _opt(p.get("cached"))))
            for pattern, p in (config or {}).items()
        ]
        bundled = (
            [(k, Price(*v)) for k, v in BUNDLED_PRICES.items() if k not in dict(own)]
            if currency == "USD"
            else []
        )
        version = BUNDLED_VERSION if bundled else "none"
        if own:
            digest = hashlib.sha256(
                json.dumps([currency, [(k, p.input, p.output, p.cached) for k, p in own]]).encode()
            ).hexdigest()[:12]
            version = f"{version}+config-{digest}"
        return cls(tuple(own + bundled), currency, version)

    def price_of(self, model: str) -> Price | None:
        try:
            return self._found[model]
        except KeyError:
            found = self._lookup(model)
            if len(self._found) < 1024:  # bounded: a monitor may see any number of names
                self._found[model] = found
            return found

    def _lookup(self, model: str) -> Price | None:
        for pattern, price in self.entries:
            if pattern == model:
                return price
        for pattern, price in self.entries:
            if fnmatch.fnmatchcase(model, pattern):
                return price
        return None

    def price(self, tokens: Tokens) -> Tokens:
        """`tokens` with its cost filled in (in place; returned)."""
        tokens.currency = self.currency
        unpriced, total = [], []
        for name, m in tokens.models.items():
            price = self.price_of(name)
            if price is None:
                unpriced.append(name)
                continue
            cached = min(m.cached_tokens, m.input_tokens)
            cached_price = price.input if price.cached is None else price.cached
            total.append(
                ((m.input_tokens - cached) * price.input + cached * cached_price)
                + m.output_tokens * price.output
            )
        tokens.unpriced = sorted(unpriced)
        reported = tokens.calls - tokens.unknown_calls
        if unpriced or (tokens.calls and not reported):
            tokens.cost = None
        else:
            tokens.cost = math.fsum(total) / 1_000_000
        return tokens

    def describe(self) -> dict[str, Any]:
        """The table as the run identity records it."""
        return {
            "version": self.version,
            "currency": self.currency,
            "models": {
                k: {"input": p.input, "output": p.output, "cached": p.cached}
                for k, p in self.entries
            },
        }


def _opt(value: Any) -> float | None:
    return None if value is None else float(value)


def priced(calls: Iterable[ModelCall], prices: PriceTable | None = None) -> Tokens:
    """`calls` summed per model and priced (None: the bundled table)."""
    tokens = Tokens()
    tokens.add(calls)
    return (prices if prices is not None else PriceTable.build()).price(tokens)


def question_usage(
    agent_calls: Sequence[ModelCall],
    *,
    wall_s: float,
    tools: Mapping[str, list[float]] | None = None,
    prices: PriceTable | None = None,
) -> QuestionUsage:
    """The agent side of a question's accounting, priced by `prices` (None: the bundled
    table)."""
    table = prices if prices is not None else PriceTable.build()
    agent = Tokens()
    agent.add(agent_calls)
    table.price(agent)
    return QuestionUsage(
        agent=agent,
        latency=Latency(
            wall_s=wall_s,
            model_calls=[round(c.latency_s, 6) for c in agent_calls],
            tools={k: [round(v, 6) for v in vs] for k, vs in (tools or {}).items()},
        ),
        prices=table.version,
    )
