"""Alerts from the live receiver: rules over a sliding window of graded traces (pass rate below,
cost per trace above, p95 latency above, errors above), each posting one JSON message to a
webhook when it crosses its bound, then quiet for a cooldown.

Delivery never blocks ingest: alerts go on a bounded queue that one task posts from, with a
timeout per try and a few retries; every alert fired, delivered, dropped or failed is counted in
the receiver's counts, which the monitor run keeps per hour. The body is Slack-compatible (a
`text` field) and carries the figures as fields for any other endpoint.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from ...cost.usage import percentile
from ...verdicts.scoring import question_passed

__all__ = ["AlertRule", "Alerts", "AlertsConfig", "alerts_config", "seen_of"]

log = logging.getLogger(__name__)

_QUEUE = 100


@dataclass(frozen=True, slots=True)
class AlertRule:
    metric: str
    below: float | None = None
    above: float | None = None
    name: str | None = None

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        bound = f"below {self.below:g}" if self.below is not None else f"above {self.above:g}"
        return f"{self.metric} {bound}"

    def crossed(self, value: float | None) -> bool:
        if value is None:
            return False
        if self.below is not None:
            return value < self.below
        return self.above is not None and value > self.above


@dataclass(frozen=True, slots=True)
class AlertsConfig:
    webhook: str
    rules: tuple[AlertRule, ...]
    window_s: float = 600.0
    cooldown_s: float = 1800.0
    min_traces: int = 10
    timeout_s: float = 5.0
    retries: int = 2


def alerts_config(block: Mapping[str, Any] | None) -> AlertsConfig | None:
    """The config's `alerts:` block (already schema-checked) as settings; None without one."""
    if not block:
        return None
    rules = tuple(
        AlertRule(
            metric=str(r["metric"]),
            below=r.get("below"),
            above=r.get("above"),
            name=r.get("name"),
        )
        for r in block["rules"]
    )
    return AlertsConfig(
        webhook=str(block["webhook"]),
        rules=rules,
        window_s=float(block.get("window_s", 600.0)),
        cooldown_s=float(block.get("cooldown_s", 1800.0)),
        min_traces=int(block.get("min_traces", 10)),
        timeout_s=float(block.get("timeout_s", 5.0)),
        retries=int(block.get("retries", 2)),
    )


@dataclass(slots=True)
class _Seen:
    at: float
    passed: bool | None
    errored: bool
    cost: float | None
    latency_s: float | None


def seen_of(score: Any) -> tuple[bool | None, bool, float | None, float | None]:
    """What the alert rules read of one graded trace: passed, errored, cost, latency."""
    usage = getattr(score, "usage", None)
    cost = usage.agent.cost if usage is not None else None
    latency = usage.latency.wall_s if usage is not None else None
    return question_passed(score), bool(score.degraded), cost, latency


@dataclass(slots=True)
class Alerts:
    """The rules' state: the window of graded traces, when each rule last fired, the queue."""

    config: AlertsConfig
    counts: MutableMapping[str, int]
    run_id: str = ""
    clock: Callable[[], float] = time.monotonic
    _window: deque[_Seen] = field(default_factory=deque)
    _fired_at: dict[str, float] = field(default_factory=dict)
    _queue: asyncio.Queue[dict[str, Any]] | None = None

    def observe(self, score: Any) -> None:
        """One graded trace (a question verdict with its usage) enters the window."""
        self.observe_seen(*seen_of(score))

    def observe_seen(
        self, passed: bool | None, errored: bool, cost: float | None, latency_s: float | None
    ) -> None:
        """One graded trace as `seen_of` gives it (what a grading worker sends back)."""
        self._window.append(_Seen(self.clock(), passed, errored, cost, latency_s))

    def figures(self) -> dict[str, float | None]:
        """Each metric over the window as it stands now."""
        horizon = self.clock() - self.config.window_s
        while self._window and self._window[0].at < horizon:
            self._window.popleft()
        seen = list(self._window)
        decided = [s.passed for s in seen if s.passed is not None]
        costs = [s.cost for s in seen if s.cost is not None]
        latencies = [s.latency_s for s in seen if s.latency_s is not None]
        return {
            "traces": float(len(seen)),
            "pass_rate": sum(decided) / len(decided) if decided else None,
            "cost_per_trace": sum(costs) / len(costs) if costs else None,
            "p95_latency_s": percentile(latencies, 95) if latencies else None,
            "errors": float(sum(s.errored for s in seen)),
        }

    def check(self) -> list[dict[str, Any]]:
        """Fire every rule whose bound the window crosses and whose cooldown is over: each
        fired alert is queued for delivery (dropped and counted when the queue is full)."""
        figures = self.figures()
        if (figures["traces"] or 0) < self.config.min_traces:
            return []
        now = self.clock()
        fired = []
        for rule in self.config.rules:
            value = figures.get(rule.metric)
            last = self._fired_at.get(rule.label)
            if not rule.crossed(value) or (
                last is not None and now - last < self.config.cooldown_s
            ):
                continue
            self._fired_at[rule.label] = now
            message = self._message(rule, value, figures)
            self.counts["alerts_fired"] = self.counts.get("alerts_fired", 0) + 1
            fired.append(message)
            if self._queue is not None:
                try:
                    self._queue.put_nowait(message)
                except asyncio.QueueFull:
                    self.counts["alerts_dropped"] = self.counts.get("alerts_dropped", 0) + 1
        return fired

    def _message(self, rule: AlertRule, value: Any, figures: Mapping[str, Any]) -> dict[str, Any]:
        window = f"{self.config.window_s:g} s"
        shown = f"{value:.3g}" if isinstance(value, float) else str(value)
        text = (
            f"tracegrade alert: {rule.label} (now {shown} over the last {window}, "
            f"{int(figures['traces'])} graded trace(s)); monitor run {self.run_id}"
        )
        return {
            "text": text,
            "rule": rule.label,
            "metric": rule.metric,
            "value": value,
            "bound": rule.below if rule.below is not None else rule.above,
            "window_s": self.config.window_s,
            "figures": dict(figures),
            "run": self.run_id,
        }

    async def deliver(self) -> None:
        """Post queued alerts until cancelled; bounded tries, every outcome counted."""
        import httpx

        self._queue = asyncio.Queue(_QUEUE)
        async with httpx.AsyncClient(timeout=self.config.timeout_s) as client:
            while True:
                message = await self._queue.get()
                try:
                    await self._post(client, message)
                finally:
                    self._queue.task_done()

    async def drain(self, seconds: float) -> None:
        """Give the alerts still queued up to `seconds` to go out (at a stop); the rest are
        counted as dropped."""
        if self._queue is None:
            return
        try:
            await asyncio.wait_for(self._queue.join(), seconds)
        except TimeoutError:
            self.counts["alerts_dropped"] = (
                self.counts.get("alerts_dropped", 0) + self._queue.qsize()
            )

    async def _post(self, client: Any, message: dict[str, Any]) -> None:
        import httpx

        for attempt in range(self.config.retries + 1):
            try:
                response = await client.post(self.config.webhook, json=message)
                if response.status_code < 300:
                    self.counts["alerts_delivered"] = self.counts.get("alerts_delivered", 0) + 1
                    return
                why = f"HTTP {response.status_code}"
            except httpx.HTTPError as exc:  # isolation point: counted, never raised into ingest
                why = f"{type(exc).__name__}: {exc or 'no answer'}"
            if attempt < self.config.retries:
                await asyncio.sleep(min(0.5 * 2**attempt, 5.0))
        self.counts["alerts_failed"] = self.counts.get("alerts_failed", 0) + 1
        log.warning("posting an alert to the webhook failed: %s", why)
