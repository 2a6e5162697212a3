"""`to_json_text`: standard JSON for every report file (the run's JSON report, `compare
--json`): a NaN or an infinity is written as null, never as a bare `NaN` a parser rejects."""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["to_json_text"]


def _finite(value: Any) -> Any:
    """`value` with NaN and infinities as null: JSON has no such numbers, and a parser that
    follows the standard rejects a file holding a bare `NaN`."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def to_json_text(data: Any) -> str:
    """Standard JSON, always: non-finite numbers written as null."""
    try:
        return json.dumps(data, indent=2, sort_keys=False, default=str, allow_nan=False)
    except ValueError:  # a NaN or an infinity somewhere
        return json.dumps(_finite(data), indent=2, sort_keys=False, default=str)
