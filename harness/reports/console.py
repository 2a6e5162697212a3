"""What a run shows on the terminal. The console report: per target a summary table (each
grader's mean on its own scale), composite, objective, errors, the gate verdict, then the worst
questions with reasons. And `Progress`, the run's progress while it runs: questions done/total,
errors, ETA, on stderr; quiet when stderr is not a TTY (CI logs stay clean) or when asked
(`--quiet`).

`ReportDigest`: what the console report shows of a streamed run's questions, folded one score
at a time. A run graded from an archive (`grade-traces`) can hold more question runs than
memory: its verdict is folded from one pass over the store (`decide_run`'s `digest`) and this
fold rides the same pass, keeping only what the console prints: the accounting's sums, the few
costliest and worst questions, the rubric findings and labels (lines), the injected variants,
the trials per question, and for the advisories a witness question per grader. The reports'
own functions then run over those few, so a streamed report says what a held one says.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from ..cost.usage import RunTotals, TotalsFold
from ..verdicts.result import QuestionResult
from ..verdicts.trials import TrialsFold
from .common import (
    annotation_lines,
    fmt,
    fmt_score,
    lost_spans_reason,
    question_label,
    question_reasons,
    rubric_findings,
    unscored_line,
    worst_questions,
)
from .costs import question_cells, run_cost_lines
from .escaping import one_line
from .variants import injection_lines, variant_lines

__all__ = ["KEPT", "Progress", "ReportDigest", "digest_of", "render_console"]


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]


def _yes(value: bool | None) -> str:
    return {True: "yes", False: "no", None: "?"}[value]


def _trial_lines(trials: TrialsFold, pass_hat_rate: float | None) -> list[str]:
    """With repeats: per question the trials passed, pass@k, pass^k, composite mean and spread."""
    if not trials.repeated:
        return []
    from ..verdicts.trials import pass_at_k_rate

    summaries = trials.summaries()
    k = max(s.trials for s in summaries)
    lines = [
        f"  trials (k = {k}): pass@k {fmt(pass_at_k_rate(summaries))}, "
        f"pass^k {fmt(pass_hat_rate)} of {len(summaries)} question(s)"
    ]
    for s in summaries:
        spread = f" spread {fmt(s.composite_spread)}" if s.composite_spread else ""
        lines.append(
            f"    {s.question_id}: {s.passed}/{s.trials} passed, pass@k {_yes(s.pass_at_k)}, "
            f"pass^k {_yes(s.pass_hat_k)}; composite {fmt(s.composite_mean)}{spread}"
        )
    return lines


def _cost_cells(q) -> str:
    if q.usage is None:
        return ""
    tokens, cost, latency = question_cells(q.usage)
    return f"; tokens {tokens}, cost {cost}, {latency}"


def _costliest(questions, limit: int = 3) -> list[str]:
    """The questions that cost most (or, unpriced, used the most tokens), with their figures."""
    have = [q for q in questions if q.usage is not None and q.usage.agent.calls]
    if not have:
        return []
    have.sort(key=lambda q: (-(q.usage.cost or 0.0), -(q.usage.tokens or 0), q.id))
    lines = ["  costliest questions:"]
    for q in have[:limit]:
        tokens, cost, latency = question_cells(q.usage)
        lines.append(f"    {one_line(question_label(q))}: {cost}, {tokens}, {latency}")
    return lines


def render_console(outcome, *, worst: int = 5, verbose: bool = False) -> str:
    """The text printed after a run or re-grade (`outcome` is a `tracegrade.execution.run.lifecycle.RunOutcome`)."""
    lines = [f"run {outcome.run_id} (grading {outcome.grading_id}): {outcome.run_dir}"]
    for note in outcome.notes:
        lines.append(f"note: {note}")
    for t in outcome.targets:
        v = t.verdict
        digest = digest_of(t)
        lines.append("")
        lines.append(f"target {t.target} ({t.mode}): {t.dataset}")
        for advisory in t.advisories:
            lines.append(f"  ! {advisory}")
        rows = [["grader", "mean", "pass bar", "scored", "skipped", "errors", "passed"]]
        for g in t.graders:
            rows.append(
                [
                    g.grader_id + (" (must pass)" if g.must_pass else ""),
                    fmt_score(g.mean, g.max_score),
                    g.pass_bar,
                    str(g.scored),
                    str(g.skipped),
                    str(g.errored),
                    f"{g.passed}/{g.passed + g.failed}",
                ]
            )
        lines.extend(_table(rows))
        # errored questions count as 0; questions with a grader error are left out
        counted = v.questions - (v.degraded - v.errored) - len(v.unscored)
        lines.append(
            f"  composite {fmt_score(v.mean_composite, 5)} over {counted} question(s)"
            f" (errored as 0);"
            f" objective {fmt(v.mean_objective)}"
        )
        if v.unscored:
            lines.append(f"  {unscored_line(v.unscored, one_line)}")
        lines.append(
            f"  errored {v.errored}, degraded {v.degraded} of {v.questions} "
            f"(error budget {v.max_errored}); critical failures {v.critical_failures}"
        )
        lines.extend(f"  {line}" for line in run_cost_lines(totals=digest.totals))
        lines.extend(f"  {line}" for line in injection_lines(digest.injected, one_line))
        if verbose:  # -v: every question's objective (the weighted mean of its graders, 0-1)
            lines.append("  per question:")
            lines.extend(
                f"    {question_label(q)}: objective {fmt(q.objective)}, composite "
                f"{fmt(q.composite)}" + (" (errored)" if q.errored else "") + _cost_cells(q)
                for q in t.questions
            )
        else:
            lines.extend(_costliest(digest.costly))
        lost = int(getattr(outcome, "lost_spans", 0) or 0)
        nothing = getattr(outcome, "nothing_to_run", None)
        if nothing:
            verdict = f"nothing to gate (exit 5): {nothing}"
        elif v.incomplete or lost:
            verdict = "INCOMPLETE (exit 3)"
        elif v.passed:
            verdict = "PASSED"
        else:
            verdict = "FAILED (exit 2)"
        lines.append(f"  gate: {verdict}")
        if v.rule:
            lines.append(f"    rule: {v.rule}")
        for reason in [] if nothing else v.reasons:
            lines.append(f"    - {one_line(reason)}")
        if lost:
            lines.append(f"    - {lost_spans_reason(lost)}")
        findings = digest.findings
        if findings:
            lines.append("  rubric checks to look at:")
            lines.extend(f"    {finding}" for finding in findings)
        labelled = digest.labels
        if labelled:
            lines.append("  labels (answered by people):")
            lines.extend(f"    {line}" for line in labelled)
        lines.extend(_trial_lines(digest.trials, v.pass_rate))
        flagged = worst_questions(digest.worst, worst)
        if flagged:
            lines.append("  worst questions:")
            for q in flagged:
                trace = f" trace {q.trace_id}" if q.trace_id else ""
                lines.append(
                    f"    {one_line(question_label(q))}: composite {fmt(q.composite)}{trace}"
                )
                for reason in question_reasons(q):
                    lines.append(f"      {one_line(reason)}")
    side_by_side = variant_lines(outcome)
    if side_by_side:
        lines += ["", *side_by_side]
    comparison = getattr(outcome, "comparison", None)
    if comparison is not None:
        from .compare_report import render_comparison_console

        lines.append("")
        lines.append("against the baseline:")
        lines.extend(render_comparison_console(comparison).rstrip("\n").split("\n"))
    lines.append("")
    lines.append(f"exit code {outcome.exit_code}")
    return "\n".join(lines) + "\n"


class Progress:
    """A one-line progress display, redrawn in place at most every `interval_s`."""

    def __init__(
        self, *, stream: TextIO | None = None, quiet: bool = False, interval_s: float = 0.1
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = not quiet and bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval_s = interval_s
        self.total = 0
        self.done = 0
        self.errors = 0
        self._started = time.monotonic()
        self._last_draw = 0.0

    def start(self, run_dir: Any, total: int) -> None:
        """Called once the run directory exists and the number of questions is known."""
        self.total = total
        self._started = time.monotonic()
        self._draw(force=True)

    def advance(self, question: Any) -> None:
        """Called after each committed question (a `QuestionResult`)."""
        self.done += 1
        if getattr(question, "degraded", False):
            self.errors += 1
        self._draw(force=self.done == self.total)

    def line(self) -> str:
        elapsed = time.monotonic() - self._started
        eta = ""
        if 0 < self.done < self.total:
            remaining = elapsed / self.done * (self.total - self.done)
            eta = f", ETA {remaining:.0f}s"
        return f"{self.done}/{self.total} questions, {self.errors} error(s){eta}"

    def _draw(self, *, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last_draw < self.interval_s:
            return
        self._last_draw = now
        # the line holds only numbers: its own erase-line code goes to the terminal as is
        stream = getattr(self.stream, "unescaped", self.stream)
        stream.write("\r\x1b[2K" + self.line())
        stream.flush()

    def close(self) -> None:
        if self.enabled and self.total:
            self.stream.write("\n")
            self.stream.flush()


KEPT = 25
"""The worst and the costliest questions kept (the console shows 5 and 3, the HTML 10)."""
_INJECTED = "injection:"
_FALLBACK = "no tool-call record available"  # graders.tool_usage.FALLBACK_MARKER


def _costly_key(q: QuestionResult) -> tuple[float, int, str]:
    usage = q.usage
    assert usage is not None
    return (-(usage.cost or 0.0), -(usage.tokens or 0), q.id)


class ReportDigest:
    """One target's console report, folded (`add` each score, in selection order)."""

    def __init__(self) -> None:
        self.fold = TotalsFold()
        self.trials = TrialsFold()
        self.findings: list[str] = []
        self.labels: list[str] = []
        self.injected: list[QuestionResult] = []
        self.unavailable = 0
        """Question runs whose trace carried no token counts."""
        self._worst: list[QuestionResult] = []
        self._costly: list[QuestionResult] = []
        self._witnesses: dict[tuple[str, str], QuestionResult] = {}

    def add(self, q: QuestionResult) -> None:
        """Fold one score (its `over_budget` already set by the verdict's fold)."""
        self.fold.add(q.usage)
        self.trials.add(q)
        self.findings += rubric_findings([q])
        self.labels += annotation_lines([q])
        if any(t.startswith(_INJECTED) for t in q.tags or ()):
            self.injected.append(q)
        if q.usage is not None and q.usage.unavailable:
            self.unavailable += 1
        if q.usage is not None and q.usage.agent.calls:
            self._costly.append(q)
            if len(self._costly) > 2 * KEPT:
                self._costly = sorted(self._costly, key=_costly_key)[:KEPT]
        self._worst += worst_questions([q])
        if len(self._worst) > 2 * KEPT:
            self._worst = worst_questions(self._worst, KEPT)
        for g in q.graders:  # what the advisories ask of a grader, one witness each
            for kind, holds in (
                ("any", True),
                ("not skipped", g.score is not None or g.error),
                ("fallback", g.score is not None and _FALLBACK in (g.reason or "")),
                ("observed actions", g.details.get("observes_actions") is True),
            ):
                if holds:
                    self._witnesses.setdefault((g.grader_id, kind), q)

    @property
    def totals(self) -> RunTotals:
        return self.fold.totals()

    @property
    def costly(self) -> list[QuestionResult]:
        """The costliest questions, most first (what `_costliest` sorts, at most `KEPT`)."""
        return sorted(self._costly, key=_costly_key)[:KEPT]

    @property
    def worst(self) -> list[QuestionResult]:
        """The worst questions, worst first (`worst_questions`, at most `KEPT`)."""
        return worst_questions(self._worst, KEPT)

    @property
    def witnesses(self) -> list[Any]:
        """A question per grader and per thing the advisories ask (has it, scored it, read the
        response for want of a record): over these the advisories say what they say over all."""
        return list({id(q): q for q in self._witnesses.values()}.values())


def digest_of(target: Any) -> ReportDigest:
    """A target's digest: the streamed run's own, or its held questions folded now (one path
    for both, so the two say the same)."""
    if getattr(target, "digest", None) is not None:
        return target.digest  # type: ignore[no-any-return]
    digest = ReportDigest()
    for q in target.questions:
        digest.add(q)
    return digest
