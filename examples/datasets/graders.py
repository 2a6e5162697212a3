"""Grading module for the example datasets: picked up automatically because it sits beside them.

`claims_match_record` is the "never trust an agent's text" rule written as code: when the answer
says it booked, cancelled, refunded, published, archived or saved something, the tool-call
record must hold a successful call of the tool that does that. An answer that claims nothing
is not this grader's business (skip).

It also checks what each result says (`status`), which a pattern table cannot. For the common
case, "the answer claims an action, a call of that tool must have ended ok", attach the built-in
`claims_grader` with a `claims:` table of RE2 patterns instead of copying this file (see the
refund desk target in tracegrade.yaml, and docs/graders.md).
"""

from __future__ import annotations

import json
import re
from typing import Any

from tracegrade.graders.code import grader
from tracegrade.records import GradeResult, RunRecord

# claim word -> (tool that performs it, the `status` its result carries on success)
CLAIMS: dict[str, tuple[str, str]] = {
    "booked": ("book_appointment", "confirmed"),
    "cancelled": ("cancel_booking", "cancelled"),
    "refunded": ("issue_refund", "refunded"),
    "published": ("publish_article", "published"),
    "archived": ("archive_article", "archived"),
    "saved a draft": ("create_draft", "created"),
}
_CLAIM = re.compile(r"\b(" + "|".join(re.escape(word) for word in CLAIMS) + r")\b", re.I)
_NEGATION = re.compile(r"\b(not|never|no)\b|n't\b", re.I)


def _result_status(result: Any) -> Any:
    """The `status` field of a tool result, whether the record kept a dict or JSON text."""
    if hasattr(result, "content"):  # a ToolMessage
        result = result.content
    if isinstance(result, str):
        try:
            result = json.loads(result)
        except ValueError:
            return None
    return result.get("status") if isinstance(result, dict) else None


def claimed_actions(text: str) -> list[str]:
    """The claim words of affirmative sentences (a sentence with a negation claims nothing)."""
    found = []
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        if _NEGATION.search(sentence):
            continue
        found.extend(match.group(1).lower() for match in _CLAIM.finditer(sentence))
    return found


def _verdict(score: float | None, reason: str, *, error: bool = False) -> GradeResult:
    return GradeResult(
        grader_id="claims_match_record",
        score=score,
        reason=reason,
        error=error,
        min_score=0.0,
        max_score=1.0,
    )


@grader(name="claims_match_record", threshold=1.0)
def claims_match_record(output: str, record: RunRecord) -> GradeResult:
    """Every action the answer claims is backed by a successful tool call in the record."""
    claims = list(dict.fromkeys(claimed_actions(output)))
    if not claims:
        return _verdict(None, "the answer claims no action, skipping")
    if record.tool_calls is None:
        # Absent record: nobody knows what ran, so the claims cannot be checked either way.
        return _verdict(None, "no tool-call record available: cannot check the claims", error=True)
    unbacked, backed = [], []
    for claim in claims:
        tool, success = CLAIMS[claim]
        calls = record.tool_calls.calls_of(tool)
        if any(_result_status(call.result) == success for call in calls):
            backed.append(f"{claim!r} by {tool}")
        elif calls:
            unbacked.append(
                f"says {claim!r} but no {tool} call returned status {success!r} "
                f"({len(calls)} call(s))"
            )
        else:
            unbacked.append(f"says {claim!r} but the record has no {tool} call")
    if unbacked:
        return _verdict(0.0, "; ".join(unbacked))
    return _verdict(1.0, "claims backed by the record: " + ", ".join(backed))
