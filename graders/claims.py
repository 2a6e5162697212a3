"""`claims_grader`: the answer's claims of action held against the record.

A declarative table, `claims: {"opened (a )?ticket": create_ticket, "refund(ed)?": issue_refund}`
(RE2 patterns, case-insensitive, -> the tool or tools that perform the action), from the
question, the grader's `claims:` option or a trace policy. A sentence that matches a pattern
claims that action unless it is negated ("I could not open a ticket"); each claim needs a call
of one of its tools that ended ok. Each unsupported claim is named with the words that made it
and what the record holds instead. Score 0-1, binary; no table: skip; a table and no claim: 1.
The judge mode (`claims_judge`) asks a model the same question, shown the record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..inputs.blocks.checks import claims_problems
from ..records import GradeResult, Outcome, ToolRecord
from ..redaction import compile_pattern
from .base import Grader, GraderServices
from .trajectory.grader import record_in

__all__ = ["GRADERS", "ClaimsGrader", "claimed_actions", "unsupported_claims"]

_NEGATION = compile_pattern(r"(?i)\b(not|never|no|cannot|unable)\b|n't\b")
_SENTENCE = compile_pattern(r"[^.!?\n]+[.!?]?")


def claimed_actions(text: str, table: Mapping[str, Any]) -> list[tuple[str, str, list[str]]]:
    """(pattern, the words that matched, its tools) for each claim the text makes: a match in a
    sentence without a negation. Each pattern counts once."""
    compiled = [(p, compile_pattern(f"(?i){p}")) for p in table]
    found: dict[str, tuple[str, str, list[str]]] = {}
    for sentence in (m.group(0) for m in _SENTENCE.finditer(text or "")):
        if _NEGATION.search(sentence):
            continue
        for pattern, regex in compiled:
            match = regex.search(sentence)
            if match and pattern not in found:
                tools = table[pattern]
                found[pattern] = (
                    pattern,
                    match.group(0),
                    [tools] if isinstance(tools, str) else list(tools),
                )
    return list(found.values())


def unsupported_claims(
    text: str, table: Mapping[str, Any], record: ToolRecord
) -> tuple[list[str], list[str]]:
    """(unsupported claims, each named with why; supported ones, named with their call)."""
    bad, good = [], []
    for _pattern, words, tools in claimed_actions(text, table):
        calls = [c for t in tools for c in record.calls_of(t)]
        ok = [c for c in calls if c.outcome is Outcome.OK]
        wanted = " or ".join(tools)
        if ok:
            good.append(f"{words!r} by {ok[0].name} (call #{ok[0].seq})")
        elif calls:
            outcomes = ", ".join(sorted({c.outcome.value for c in calls}))
            bad.append(
                f"{words!r}: no call of {wanted} ended ok ({len(calls)} call(s): {outcomes})"
            )
        else:
            bad.append(f"{words!r}: the record has no call of {wanted}")
    return bad, good


class ClaimsGrader(Grader):
    """Every action the answer claims is backed by a successful call in the record."""

    id = "claims_grader"
    label = "Claims"
    description = (
        "Deterministic: each claim of action in the answer (a `claims` table of RE2 patterns "
        "-> tools) is backed by a call of that tool that ended ok; names each unsupported claim."
    )
    needs = "`claims` (the question's or the grader's option; else skips)"
    owns = ("claims",)
    evidence = ("answer", "tool_calls")
    min_score = 0.0
    max_score = 1.0
    observes_actions = True
    binary = True

    def __init__(self, *, services: GraderServices | None = None, **options: Any) -> None:
        super().__init__(services=services, **options)
        table = options.get("claims")
        self.table = table
        self.problems = claims_problems(table) if table is not None else []

    def grade(self, input: str, response: str, context: Mapping[str, Any]) -> GradeResult:
        if self.problems:
            pointer, message = self.problems[0]
            return self.result(0.0, f"setup failure: claims{pointer}: {message}")
        own = context.get("claims")
        if own is not None and claims_problems(own):
            pointer, message = claims_problems(own)[0]
            return self.result(0.0, f"setup failure: claims{pointer}: {message}")
        table = {**(self.table or {}), **(own or {})}
        if not table:
            return self.result(None, "no `claims` table for this question")
        record = record_in(self, context, "claims are held against the record, never the text")
        if isinstance(record, GradeResult):
            return record
        bad, good = unsupported_claims(response, table, record)
        details = {"source": "record", "unsupported": bad, "supported": good}
        if bad:
            return self.result(
                0.0, f"{len(bad)} unsupported claim(s): " + "; ".join(bad), details=details
            )
        if not good:
            return self.result(1.0, "the answer claims no action in the table", details=details)
        return self.result(1.0, "claims backed by the record: " + ", ".join(good), details=details)


GRADERS: list[type[Grader]] = [ClaimsGrader]
