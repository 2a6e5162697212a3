"""JUnit XML: one testcase per question, one `<failure>` per unmet grader and per failed
critical or required rubric check (named), agent and grader errors as `<error>` (never
`<failure>`), the trace id in the testcase's properties.

Written only when asked with `--junit FILE` (an explicit flag; the format never depends on a
file name).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from ..cost.usage import format_cost
from ..verdicts.result import QuestionResult
from ..verdicts.scoring import is_unscored
from .common import (
    check_label,
    check_problems,
    fmt,
    fmt_score,
    lost_spans_reason,
    outcome_line,
    question_label,
)
from .costs import question_cells, run_cost_properties

__all__ = ["render_junit", "write_junit"]

# What XML 1.0 forbids (C0 controls but tab/newline/CR, lone surrogates, U+FFFE/U+FFFF): an
# agent's exception with ANSI colour codes must not make the whole report unreadable.
_FORBIDDEN = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_safe(root: ET.Element) -> None:
    for element in root.iter():
        if element.text:
            element.text = _FORBIDDEN.sub("", element.text)
        for name, value in element.attrib.items():
            element.set(name, _FORBIDDEN.sub("", value))


def _testcase(parent: ET.Element, target: str, q: QuestionResult) -> tuple[int, int]:
    case = ET.SubElement(parent, "testcase", classname=target, name=question_label(q))
    props = ET.SubElement(case, "properties")
    for name, value in (
        ("trace_id", q.trace_id),
        ("composite", fmt(q.composite)),
        ("objective", fmt(q.objective)),
        ("split", q.split),
        ("bundle", q.bundle),
        *_cost_properties(q),
    ):
        if value is not None:
            ET.SubElement(props, "property", name=name, value=str(value))
    for a in getattr(q, "annotations", []):  # what people answered (`tracegrade label`)
        stale = " (stale)" if a.get("stale") else ""
        answer = "yes" if a["answer"] else "no"
        ET.SubElement(
            props,
            "property",
            name=f"label:{a['label'].removeprefix('label:')}",
            value=f"{answer} by {a['by']}{stale}" + (f": {a['note']}" if a.get("note") else ""),
        )
    failures = errors = 0
    if q.errored:
        err = ET.SubElement(
            case, "error", message=f"agent error: {q.error}", type=q.error_type or "error"
        )
        err.text = q.error
        return 0, 1
    if q.ended_early:
        fail = ET.SubElement(case, "failure", message=outcome_line(q), type=str(q.outcome))
        fail.text = q.outcome_reason
        failures += 1
    for g in q.graders:
        if g.error:
            err = ET.SubElement(case, "error", message=f"{g.grader_id} errored", type=g.grader_id)
            err.text = g.reason
            errors += 1
        elif g.passed is False:
            bar = "its max" if g.binary else f"threshold {fmt(g.threshold)}"
            kind = "must-pass " if g.must_pass else ""
            fail = ET.SubElement(
                case,
                "failure",
                message=f"{kind}{g.grader_id} {fmt_score(g.score, g.max_score)} (needs {bar})",
                type=g.grader_id,
            )
            fail.text = g.reason
            failures += 1
    if is_unscored(q):  # shown as skipped: a CI page never counts it as passed
        ET.SubElement(
            case, "skipped", message="no grader scored this question (every grader skipped)"
        )
    for what, check in check_problems(q):
        if not what.endswith("failed"):
            continue
        fail = ET.SubElement(
            case,
            "failure",
            message=f"{what.split()[0]} rubric check failed: {check_label(check)}",
            type="rubric",
        )
        fail.text = str(check.get("reason") or check_label(check))
        failures += 1
    for why in q.over_budget:  # a per-question budget of the gate
        fail = ET.SubElement(case, "failure", message=f"over budget: {why}", type="budget")
        fail.text = why
        failures += 1
    return failures, errors


def _cost_properties(q: QuestionResult) -> list[tuple[str, str | None]]:
    """tokens, cost (`unpriced`, `unknown`: never 0) and latency of one question."""
    if q.usage is None:
        return []
    tokens, cost, _ = question_cells(q.usage)
    return [
        ("tokens", tokens),
        ("cost", cost),
        ("latency_s", f"{q.usage.latency.wall_s:.3f}"),
        ("judges.cost", format_cost(q.usage.judges) if q.usage.judges.calls else None),
    ]


def _suite_properties(suite: ET.Element, verdict, questions=()) -> None:
    """The gate's figures, critical failures counted apart so no average can hide them, and
    the run's cost, tokens and latency."""
    props = ET.SubElement(suite, "properties")
    for name, text in run_cost_properties(questions).items():
        ET.SubElement(props, "property", name=name, value=text)
    for name, value in (
        ("gate", "passed" if verdict.passed and not verdict.incomplete else "failed"),
        ("exit_code", verdict.exit_code),
        ("critical_failures", verdict.critical_failures),
        ("must_pass_failures", verdict.must_pass_failures),
        ("reviews", verdict.reviews),
        ("degraded", verdict.degraded),
        ("mean_composite", fmt(verdict.mean_composite)),
        ("gate_rule", verdict.rule or None),
    ):
        if value is not None:
            ET.SubElement(props, "property", name=name, value=str(value))


def _comparison_suite(root: ET.Element, comparison) -> int:
    suite = ET.SubElement(root, "testsuite", name="baseline comparison", tests="1")
    case = ET.SubElement(
        suite, "testcase", classname="baseline comparison", name=f"against {comparison.base}"
    )
    reasons = comparison.regressions
    suite.set("failures", str(int(bool(reasons))))
    suite.set("errors", "0")
    if reasons:
        failure = ET.SubElement(case, "failure", message=reasons[0])
        failure.text = "\n".join(reasons)
    return int(bool(reasons))


def render_junit(outcome) -> str:
    """The XML document (`outcome` is a `tracegrade.execution.run.lifecycle.RunOutcome`)."""
    root = ET.Element("testsuites", name=f"tracegrade {outcome.run_id}")
    total_f = total_e = total_t = 0
    for t in outcome.targets:
        suite = ET.SubElement(root, "testsuite", name=t.target)
        _suite_properties(suite, t.verdict, t.questions)
        failures = errors = 0
        for q in t.questions:
            # JUnit counts test cases, not elements: a case with an error is an error, else
            # one with any failure is one failure.
            f, e = _testcase(suite, t.target, q)
            errors += 1 if e else 0
            failures += 1 if f and not e else 0
        suite.set("tests", str(len(t.questions)))
        suite.set("failures", str(failures))
        suite.set("errors", str(errors))
        total_f, total_e, total_t = total_f + failures, total_e + errors, total_t + len(t.questions)
    lost = int(getattr(outcome, "lost_spans", 0) or 0)
    if lost:  # one test that errored: "every agent trace was graded"
        suite = ET.SubElement(root, "testsuite", name="run", tests="1", failures="0", errors="1")
        case = ET.SubElement(suite, "testcase", classname="run", name="every agent trace graded")
        error = ET.SubElement(case, "error", message=lost_spans_reason(lost), type="incomplete")
        error.text = lost_spans_reason(lost)
        total_t, total_e = total_t + 1, total_e + 1
    comparison = getattr(outcome, "comparison", None)
    if comparison is not None:  # one test: "no regression against the baseline"
        failed = _comparison_suite(root, comparison)
        total_t, total_f = total_t + 1, total_f + failed
    root.set("tests", str(total_t))
    root.set("failures", str(total_f))
    root.set("errors", str(total_e))
    _xml_safe(root)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(outcome, path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_junit(outcome), encoding="utf-8")
    return path
