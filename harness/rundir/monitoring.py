"""A monitor run's rollups per hour (`tracegrade receive`): the key its store keeps them under
and how reports word them. The receiver writes them (`tracegrade.traces.live.monitor`); `show` and
the JSON report read them here."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

__all__ = ["MONITOR_META", "monitor_notes"]

MONITOR_META = "monitor"
"""The store meta key of a monitor run's rollups: `hours` (UTC hour -> counts), `listed`
(kind -> the first trace ids of unmatched, ambiguous and dropped traces), `sample`."""

_SHOWN = (
    ("graded", "graded"),
    ("passed", "passed"),
    ("failed", "failed"),
    ("errored", "errored"),
    ("policy", "graded by the trace policy (no question)"),
    ("unmatched", "matched no question"),
    ("ambiguous", "matched several questions"),
    ("not_agent", "not agent traces"),
    ("spans_received", "spans received"),
    ("spans_sampled_out", "spans sampled out"),
    ("spans_late", "spans after their trace was graded"),
    ("traces_dropped_cap", "traces dropped at the memory cap"),
    ("traces_dropped_timeout", "traces dropped at the timeout (no root span)"),
    ("traces_dropped_too_large", "traces dropped for too many spans"),
    ("agent_traces_dropped", "agent traces dropped (not graded)"),
    ("requests_refused", "requests refused"),
    ("forward_failed", "forward failures"),
    ("forward_dropped", "forwards dropped (queue full)"),
    ("forwarded_ungraded", "traces forwarded before their grade (marked ungraded)"),
    ("annotations_written", "Phoenix annotations written"),
    ("annotations_failed", "Phoenix annotations failed"),
    ("annotations_dropped", "Phoenix annotations dropped (queue full or stopped)"),
)


def monitor_notes(data: Mapping[str, Any] | None) -> list[str]:
    """The rollups as report notes: the totals, then one line per hour (the last 24)."""
    hours: Mapping[str, Mapping[str, int]] = (data or {}).get("hours") or {}
    if not hours:
        return []
    total: Counter[str] = Counter()
    for counts in hours.values():
        total.update(counts)

    def line(counts: Mapping[str, int]) -> str:
        return ", ".join(f"{counts[k]} {label}" for k, label in _SHOWN if counts.get(k))

    notes = [f"monitor, all hours: {line(total) or 'nothing received'}"]
    for hour in sorted(hours)[-24:]:
        notes.append(f"monitor {hour}: {line(hours[hour]) or 'nothing received'}")
    for kind, ids in ((data or {}).get("listed") or {}).items():
        if ids:
            notes.append(f"monitor, {kind} traces (first {len(ids)}): {', '.join(ids)}")
    return notes
