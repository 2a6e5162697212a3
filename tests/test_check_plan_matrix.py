"""The check plan's rules as a generated matrix: every dataset key a built-in grader owns x its
owner attached or not (or the key named `unchecked:`) x every source x every outcome of the
check, each cell asserting one decision, one report line and one exit code.

The expected decision of a cell is read from the rules as docs/running.md states them (not from
the plan's code): an attached owner checks its key; an unattached key gets its deterministic
owner attached, or is "not checked" when only judges own it; a named key is unchecked; a
grader whose evidence the source lacks is not applicable. The exit code of a checked key's
outcome is the gate's: met 0, broken 2, waiting in Review 2, decided by a person pass 0 / fail 2.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tracegrade import GraderSpec, QuestionResult
from tracegrade.graders import load_registry
from tracegrade.graders.declarations import SOURCES
from tracegrade.inputs.config import GraderEntry, parse_gate
from tracegrade.inputs.config_model import TargetConfig
from tracegrade.rundir.annotations import Annotation, apply_annotations
from tracegrade.verdicts.gate import evaluate_gate
from tracegrade.verdicts.plan import check_plan, plan_notes
from tracegrade.verdicts.scoring import GraderVerdict, score_question

# What each key needs, as the docs say: the evidence of the grader that checks it.
KEYS = {
    "expected_tools": ("tool_usage_grader", "tool_calls"),
    "trajectory": ("trajectory_grader", "tool_calls"),
    "expected_interrupts": ("interrupt_grader", "interrupts"),
    "metadata.state": ("state_grader", "environment"),
    "expected.format": ("format_grader", "answer"),
    "rubric_ref": ("rubric_checks", "answer"),
    "expected_facts": ("accuracy_grader", "judge"),  # only judges own it
}
ROWS = {
    "expected_tools": {"expected_tools": [{"tool": "x", "should_run": True}]},
    "trajectory": {"trajectory": {"forbid": ["x"]}},
    "expected_interrupts": {"expected_interrupts": {"count": 1}},
    "metadata.state": {"metadata": {"state": {"assertions": []}}},
    "expected.format": {"expected": {"format": "json"}},
    "rubric_ref": {"rubric_ref": "rubric/r@1"},
    "expected_facts": {"expected_facts": {"city": "Paris"}},
}
ATTACHED = ("attached", "not attached", "named unchecked")
OUTCOMES = ("met", "broken", "in review", "decided pass", "decided fail")
CELLS = list(itertools.product(KEYS, ATTACHED, sorted(SOURCES), OUTCOMES))


def _target(attached: str, key: str) -> TargetConfig:
    owner, _ = KEYS[key]
    graders = [GraderEntry(id=owner)] if attached == "attached" else []
    # a grader checking every question, so a target is never empty of checks
    graders.append(
        GraderEntry(id="format_grader")
        if owner != "format_grader"
        else GraderEntry(id="tool_usage_grader")
    )
    return TargetConfig(
        name="t",
        mode="agent",
        factory="agent.py:build",
        dataset=Path("data.yaml"),
        environment="agent.py:env",
        graders=graders,
        unchecked=[key] if attached == "named unchecked" else [],
    )


def _expected(key: str, attached: str, source: str) -> str:
    _, evidence = KEYS[key]
    lacking = evidence == "environment" and source == "traces"  # a trace has no environment
    if attached == "attached" and not lacking:
        return "checked"
    if attached == "named unchecked":
        return "unchecked"
    if lacking:
        return "not applicable"
    return "not checked" if evidence == "judge" else "attached"


def _score(grader_id: str, cls, outcome: str) -> QuestionResult:
    hi, lo = float(cls.max_score), float(cls.min_score)
    spec = GraderSpec(must_pass=True, threshold=hi)
    checks = []
    score: float | None = {"met": hi, "broken": lo}.get(outcome)
    if outcome not in ("met", "broken"):
        checks = [
            {
                "id": f"{grader_id}:panel",
                "kind": "judge_panel",
                "status": "review",
                "required": True,
                "reason": "members split",
            }
        ]
    grader = GraderVerdict(
        grader_id=grader_id,
        score=score,
        min_score=lo,
        max_score=hi,
        binary=cls.binary,
        spec=spec,
        checks=checks,
    )
    question = score_question(QuestionResult(id="q", target="t", graders=[grader]))
    if outcome.startswith("decided"):
        apply_annotations(
            question,
            [
                Annotation(
                    target="t",
                    question_id="q",
                    trial=0,
                    label=f"review:{grader_id}:panel",
                    answer=outcome == "decided pass",
                    author="ana",
                    note=None,
                    answer_sha256="x",
                    created="2026-12-02T00:00:00",
                )
            ],
        )
    return question


@pytest.mark.parametrize(("key", "attached", "source", "outcome"), CELLS)
def test_each_cell_gets_one_decision_one_line_and_one_exit_code(key, attached, source, outcome):
    registry = load_registry()
    target = _target(attached, key)
    owners = [registry.get(e.id) for e in target.graders]
    row = {"id": "q", "input": "hi", **ROWS[key]}
    plan = check_plan(target, [row], owners, source=source, judge=True, registry=registry)
    (decided,) = [k for k in plan.keys if k.key == key]
    expected = _expected(key, attached, source)
    assert decided.status == expected
    mentioning = [
        n
        for n in plan_notes("t", plan.as_dict())
        if key in n or any(g in n for g in plan.not_applicable)
    ]
    if expected == "checked":
        assert mentioning == []  # nothing a person must be told
    else:
        assert len(mentioning) == 1, plan_notes("t", plan.as_dict())
    if expected not in ("checked", "attached"):
        assert KEYS[key][0] not in plan.graders  # it does not run: never a silent pass
        return
    grader_id = decided.graders[0]
    if attached != "attached":  # the safe defaults: must pass at full score
        (entry,) = [e for e in plan.additions if e.id == grader_id]
        assert entry.spec.must_pass and entry.spec.threshold == registry.get(grader_id).max_score
    verdict = evaluate_gate(
        [_score(grader_id, registry.get(grader_id), outcome)],
        parse_gate({}),
        must_pass=[grader_id],
        selected=1,
    )
    assert verdict.exit_code == {"met": 0, "decided pass": 0}.get(outcome, 2), verdict.reasons
    assert not any("nothing was scored" in r for r in verdict.reasons)


def test_a_target_where_nothing_can_be_checked_is_nothing_to_run():
    registry = load_registry()
    target = TargetConfig(
        name="t",
        mode="agent",
        factory="a.py:b",
        dataset=Path("d.yaml"),
        environment="a.py:e",
        graders=[GraderEntry(id="state_grader")],
    )
    row = {"id": "q", "input": "hi", **ROWS["metadata.state"]}
    plan = check_plan(
        target,
        [row],
        [registry.get("state_grader")],
        source="traces",
        judge=False,
        registry=registry,
    )
    assert plan.graders == [] and plan.unchecked_questions == ["q"]
    assert "nothing can be checked from traces" in plan.nothing_checkable
    assert "a trace carries no live environment" in plan.nothing_checkable
