"""Comparing two runs: is the candidate worse than the baseline?

Results are aligned by target and question id; a question's trials (with `repeats`) are taken
together: it passes when every trial passed (pass^k), its composite is the trials' mean, and
its pass rate is shown beside. A question whose content (input, expected, expected_tools,
rubric_ref) or rubric versions differ between the two runs is drift: comparing it would compare
two different questions, so the comparison is refused (exit 4, naming them) unless drift is
allowed, and then those questions are listed apart. Questions in only one run are listed, not
compared.

Paired statistics over the aligned questions: the exact McNemar test on pass/fail and a seeded
paired bootstrap interval on the mean composite delta (`tracegrade.comparison.stats`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ExitCode, InputError, NothingToRunError
from ..rundir.history import StoredRun
from ..rundir.record import QuestionResult
from ..verdicts.scoring import all_passed
from .costs import FIGURES, CostComparison, compare_costs, parse_thresholds
from .rules import DEFAULT_FAIL_ON, FAIL_ON
from .stats import BootstrapInterval, McNemar, mcnemar_exact, paired_bootstrap
from .tool_diff import ToolCallChange, diff_tool_calls

__all__ = [
    "DEFAULT_FAIL_ON",
    "FAIL_ON",
    "Comparison",
    "DriftedQuestion",
    "GraderDelta",
    "QuestionChange",
    "ToolCallChange",
    "compare_runs",
    "diff_tool_calls",
]


@dataclass(frozen=True, slots=True)
class GraderDelta:
    """One grader's verdict on a question in both runs (means over trials, own scale)."""

    grader_id: str
    """The grader's id."""
    base: float | None
    """Baseline score; None when skipped or errored."""
    cand: float | None
    """Candidate score."""
    max_score: float
    """Top of the grader's scale."""
    base_passed: bool | None
    """Passed in every baseline trial (None when undecided)."""
    cand_passed: bool | None
    """Passed in every candidate trial."""
    must_pass: bool
    """Declared must-pass (in either run)."""

    @property
    def delta(self) -> float | None:
        return None if self.base is None or self.cand is None else self.cand - self.base


@dataclass(slots=True)
class QuestionChange:
    """One aligned question: pass/fail in both runs, composite and grader deltas, calls."""

    target: str
    """The candidate's target name."""
    question_id: str
    """The question's id."""
    base_passed: bool | None
    """Every baseline trial passed; None when a trial's evaluation failed."""
    cand_passed: bool | None
    """Every candidate trial passed."""
    base_composite: float | None
    """Mean composite over the baseline's trials."""
    cand_composite: float | None
    """Mean composite over the candidate's trials."""
    base_pass_rate: float | None
    """Share of the baseline's decided trials that passed."""
    cand_pass_rate: float | None
    """Share of the candidate's decided trials that passed."""
    trials: tuple[int, int]
    """(baseline trials, candidate trials)."""
    graders: list[GraderDelta]
    """Per-grader verdicts, in the candidate's order."""
    must_pass_newly_failing: list[str]
    """Must-pass graders that passed in the baseline and fail in the candidate."""
    tool_changes: list[ToolCallChange]
    """Differences in the first trial's tool calls."""
    base_error: str | None = None
    """The baseline agent's error, if any trial errored."""
    cand_error: str | None = None
    """The candidate agent's error, if any trial errored."""
    cand_degraded: bool = False
    """A candidate trial's evaluation failed (a grader error, not the agent's)."""

    @property
    def status(self) -> str:
        """newly_failing, newly_passing, still_failing, still_passing, or undecided."""
        if self.base_passed is None or self.cand_passed is None:
            return "undecided"
        if self.base_passed and not self.cand_passed:
            return "newly_failing"
        if not self.base_passed and self.cand_passed:
            return "newly_passing"
        return "still_passing" if self.cand_passed else "still_failing"

    @property
    def composite_delta(self) -> float | None:
        if self.base_composite is None or self.cand_composite is None:
            return None
        return self.cand_composite - self.base_composite

    @property
    def changed(self) -> bool:
        """Anything to show: a pass change, a score change, a call change."""
        return (
            self.status in ("newly_failing", "newly_passing")
            or bool(self.tool_changes)
            or any(g.delta for g in self.graders)
            or self.base_error != self.cand_error
        )


@dataclass(frozen=True, slots=True)
class DriftedQuestion:
    """A question that is not the same question in both runs."""

    target: str
    """The candidate's target name."""
    question_id: str
    """The question's id."""
    reasons: list[str]
    """What differs."""


@dataclass(slots=True)
class Comparison:
    """The result of `compare_runs`."""

    base: str
    """The baseline as named (run id, directory or file) with its run id."""
    cand: str
    """The candidate as named."""
    targets: list[tuple[str, str]]
    """(baseline target, candidate target) pairs compared."""
    questions: list[QuestionChange]
    """Every aligned question, in the candidate's order."""
    drifted: list[DriftedQuestion]
    """Questions listed apart (only with drift allowed)."""
    only_base: list[str]
    """`target/question` only in the baseline."""
    only_cand: list[str]
    """`target/question` only in the candidate."""
    mcnemar: McNemar
    """Exact McNemar test over questions decided in both runs."""
    bootstrap: BootstrapInterval | None
    """Interval on the mean composite delta; None without paired composites."""
    fail_on: tuple[str, ...]
    """The regression rules applied."""
    notes: list[str] = field(default_factory=list)
    """What could not be checked (e.g. a results file without content fingerprints)."""
    incomplete: list[str] = field(default_factory=list)
    """Why the comparison does not cover what the baseline asked: questions only in the
    baseline, a candidate that did not finish its selection, candidate questions whose
    evaluation failed (degraded). Exit 3 unless `allow_missing`."""
    allow_missing: bool = False
    """`--allow-missing`: an incomplete comparison is listed, not exit 3."""
    costs: CostComparison | None = None
    """Cost, token and latency deltas of the aligned questions (`--fail-on cost:+20%`)."""

    def with_status(self, status: str) -> list[QuestionChange]:
        return [q for q in self.questions if q.status == status]

    @property
    def regressions(self) -> list[str]:
        """Why the candidate regresses under `fail_on` (empty: it does not)."""
        reasons = []
        rules = set(self.fail_on)
        if rules & {"must-pass", "any"}:
            hit = [q for q in self.questions if q.must_pass_newly_failing]
            if hit:
                names = ", ".join(
                    f"{q.question_id} ({', '.join(q.must_pass_newly_failing)})" for q in hit
                )
                reasons.append(f"{len(hit)} question(s) newly fail a must-pass grader: {names}")
        if rules & {"significant", "any"} and self.bootstrap and self.bootstrap.below_zero:
            b = self.bootstrap
            reasons.append(
                f"mean composite delta {b.mean:+.2f}: its {b.confidence:.0%} interval "
                f"[{b.low:+.2f}, {b.high:+.2f}] lies wholly below zero"
            )
        if rules & {"gate", "any"}:
            newly = self.with_status("newly_failing")
            if newly:
                names = ", ".join(q.question_id for q in newly)
                reasons.append(f"{len(newly)} question(s) newly fail the gate's pass rule: {names}")
        if "any" in rules:
            below = [
                (q.question_id, g.grader_id)
                for q in self.questions
                for g in q.graders
                if g.base_passed is True and g.cand_passed is False and not g.must_pass
            ]
            if below:
                names = ", ".join(f"{qid} ({gid})" for qid, gid in below)
                reasons.append(f"{len(below)} grader verdict(s) newly below their bar: {names}")
        if self.costs is not None:
            reasons += self.costs.regressions
        return reasons

    @property
    def unflagged(self) -> str | None:
        """Why newly failing questions are no regression under `fail_on` (None when there are
        none, or when they are one): said beside "no regression", never left to be guessed."""
        newly = self.with_status("newly_failing")
        if not newly or self.regressions:
            return None
        names = ", ".join(q.question_id for q in newly)
        why = (
            "the composite interval does not lie wholly below zero"
            if "significant" in self.fail_on
            else "no rule of --fail-on counts them"
        )
        return (
            f"{len(newly)} question(s) newly failing ({names}) are not counted under "
            f"--fail-on {' '.join(self.fail_on)}: {why}; the default (--fail-on gate) counts them"
        )

    @property
    def exit_code(self) -> int:
        if self.incomplete and not self.allow_missing:
            return int(ExitCode.INCOMPLETE)
        return int(ExitCode.GATE_FAILED if self.regressions else ExitCode.OK)


def _mean(values: Iterable[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return sum(got) / len(got) if got else None


def _pass_rate(trials: Sequence[QuestionResult]) -> float | None:
    decided = [t.passed for t in trials if t.passed is not None]
    return sum(decided) / len(decided) if decided else None


def _grader_passed(trials: Sequence[QuestionResult], grader_id: str) -> bool | None:
    """Passed in every trial; an errored agent fails every grader it had."""
    verdicts: list[bool | None] = []
    for t in trials:
        if t.error is not None:
            verdicts.append(False)
            continue
        g = t.grader(grader_id)
        verdicts.append(None if g is None or g.error else g.passed)
    decided = [v for v in verdicts if v is not None]
    if not decided:
        return None
    return all(decided)


def _question_change(
    target: str, base: Sequence[QuestionResult], cand: Sequence[QuestionResult]
) -> QuestionChange:
    ids = list(
        dict.fromkeys(
            [g.id for t in cand for g in t.graders] + [g.id for t in base for g in t.graders]
        )
    )
    graders = []
    for gid in ids:
        b = [t.grader(gid) for t in base]
        c = [t.grader(gid) for t in cand]
        any_g = next(g for g in b + c if g is not None)
        graders.append(
            GraderDelta(
                grader_id=gid,
                base=_mean(g.score for g in b if g is not None),
                cand=_mean(g.score for g in c if g is not None),
                max_score=any_g.max_score,
                base_passed=_grader_passed(base, gid),
                cand_passed=_grader_passed(cand, gid),
                must_pass=any(g.must_pass for g in b + c if g is not None),
            )
        )
    newly = [
        g.grader_id
        for g in graders
        if g.must_pass and g.base_passed is True and g.cand_passed is False
    ]
    base_calls = base[0].tool_calls if base else None
    cand_calls = cand[0].tool_calls if cand else None
    tool_changes = (
        diff_tool_calls(base_calls, cand_calls)
        if base_calls is not None and cand_calls is not None
        else []
    )
    return QuestionChange(
        target=target,
        question_id=cand[0].id,
        base_passed=all_passed([t.passed for t in base]),
        cand_passed=all_passed([t.passed for t in cand]),
        base_composite=_mean(t.composite for t in base if _counts(t)),
        cand_composite=_mean(t.composite for t in cand if _counts(t)),
        base_pass_rate=_pass_rate(base),
        cand_pass_rate=_pass_rate(cand),
        trials=(len(base), len(cand)),
        graders=graders,
        must_pass_newly_failing=newly,
        tool_changes=tool_changes,
        base_error=next((t.error for t in base if t.error), None),
        cand_error=next((t.error for t in cand if t.error), None),
        cand_degraded=any(t.degraded and t.error is None for t in cand),
    )


def _by_label(run: StoredRun, label: str) -> StoredRun:
    """`run` with each question's pass/fail taken from the person's answer to `label`."""
    from dataclasses import replace

    from ..records import GraderSpec
    from ..verdicts.scoring import GraderVerdict

    questions = []
    for q in run.questions:
        answer = q.label(label)
        signal = GraderVerdict(
            grader_id=f"label:{label}",
            score=None if answer is None else float(answer),
            min_score=0.0,
            max_score=1.0,
            reason="answered by a person" if answer is not None else "not labelled",
            binary=True,
            spec=GraderSpec(must_pass=True),
        )
        questions.append(q.model_copy(update={"passed": answer, "graders": [*q.graders, signal]}))
    return replace(run, questions=questions)


def _counts(q: QuestionResult) -> bool:
    """A trial's composite counts in the delta unless the evaluation itself failed (a grader
    error): an agent error is a real 0."""
    return q.error is not None or not q.degraded


def _drift(
    target: str, qid: str, base: QuestionResult, cand: QuestionResult
) -> DriftedQuestion | None:
    reasons = []
    if base.content_sha256 and cand.content_sha256 and base.content_sha256 != cand.content_sha256:
        reasons.append("content differs (input, expected, expected_tools or rubric_ref)")
    if base.rubrics and cand.rubrics and base.rubrics != cand.rubrics:
        reasons.append(
            f"rubric versions differ: {', '.join(base.rubrics)} vs {', '.join(cand.rubrics)}"
        )
    return DriftedQuestion(target, qid, reasons) if reasons else None


def _by_question(run: StoredRun) -> dict[str, dict[str, list[QuestionResult]]]:
    out: dict[str, dict[str, list[QuestionResult]]] = {}
    for q in sorted(run.questions, key=lambda q: q.trial):
        out.setdefault(q.target, {}).setdefault(q.id, []).append(q)
    return out


def _pair_targets(
    base: dict[str, Any], cand: dict[str, Any], notes: list[str]
) -> list[tuple[str, str]]:
    common = [t for t in cand if t in base]
    if common:
        return [(t, t) for t in common]
    if len(base) == 1 and len(cand) == 1:
        (b,), (c,) = base, cand
        notes.append(f"comparing target {b} (baseline) with target {c} (candidate)")
        return [(b, c)]
    return []


def _names(items: Sequence[str], limit: int = 10) -> str:
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def _incomplete(
    cand: StoredRun, only_base: Sequence[str], changes: Sequence[QuestionChange]
) -> list[str]:
    """What the candidate leaves uncompared: a question it never asked, a selection it never
    finished, a question whose evaluation failed. None of these is "no regression"."""
    out = []
    if only_base:
        out.append(
            f"{len(only_base)} baseline question(s) missing from the candidate: {_names(only_base)}"
        )
    for target, t in (cand.manifest.targets if cand.manifest is not None else {}).items():
        selected = t.selected
        have = sum(1 for q in cand.questions if q.target == target)
        if selected is not None and have < selected:
            out.append(
                f"the candidate is unfinished: target {target} has results for {have} of "
                f"{selected} selected question run(s) (interrupted, never resumed)"
            )
    degraded = [f"{q.target}/{q.question_id}" for q in changes if q.cand_degraded]
    if degraded:
        out.append(
            f"{len(degraded)} candidate question(s) degraded (their evaluation failed, no "
            f"verdict to compare): {_names(degraded)}"
        )
    return out


def compare_runs(
    base: StoredRun,
    cand: StoredRun,
    *,
    allow_drift: bool = False,
    allow_missing: bool = False,
    fail_on: Sequence[str] = DEFAULT_FAIL_ON,
    resamples: int = 10_000,
    seed: int = 0,
    label: str | None = None,
) -> Comparison:
    """Compare `cand` against `base`. Raises `InputError` (exit 4) on drift unless
    `allow_drift`, and `NothingToRunError` (exit 5) when no question is in both runs. A
    candidate that leaves baseline questions out, did not finish or degraded makes the
    comparison incomplete (exit 3) unless `allow_missing`. With
    `label`, a person's answer to that checklist item is each question's pass/fail (a
    must-pass signal `label:<id>`; unlabelled or stale: undecided)."""
    if label is not None:
        base, cand = _by_label(base, label), _by_label(cand, label)
    thresholds = parse_thresholds(fail_on)
    unknown = [f for f in fail_on if f not in FAIL_ON and f.split(":", 1)[0] not in FIGURES]
    if unknown:
        raise InputError(
            f"unknown --fail-on {unknown[0]!r}; one of {', '.join(FAIL_ON)}, or "
            "cost:+N%, tokens:+N%, latency:+N%",
            key="--fail-on",
        )
    notes: list[str] = []
    b_all, c_all = _by_question(base), _by_question(cand)
    pairs = _pair_targets(b_all, c_all, notes)
    paired_b = {b for b, _ in pairs}
    paired_c = {c for _, c in pairs}
    only_base = [f"{t}/{q}" for t in b_all if t not in paired_b for q in b_all[t]]
    only_cand = [f"{t}/{q}" for t in c_all if t not in paired_c for q in c_all[t]]
    changes: list[QuestionChange] = []
    aligned: list[tuple[str, list[QuestionResult], list[QuestionResult]]] = []
    drifted: list[DriftedQuestion] = []
    for bt, ct in pairs:
        bq, cq = b_all[bt], c_all[ct]
        only_base += [f"{bt}/{q}" for q in bq if q not in cq]
        for qid, trials in cq.items():
            if qid not in bq:
                only_cand.append(f"{ct}/{qid}")
                continue
            drift = _drift(ct, qid, bq[qid][0], trials[0])
            if drift is not None:
                drifted.append(drift)
                continue
            changes.append(_question_change(ct, bq[qid], trials))
            aligned.append((ct, bq[qid], trials))
    for run in (base, cand):
        if any(q.content_sha256 is None for q in run.questions):
            notes.append(
                f"{run.label} has questions without a content fingerprint (written by an "
                "older release): their content was not checked for drift"
            )
    if drifted and not allow_drift:
        names = "; ".join(f"{d.target}/{d.question_id}: {', '.join(d.reasons)}" for d in drifted)
        raise InputError(
            f"{len(drifted)} question(s) differ between the runs and cannot be compared: {names}",
            key="CAND",
            hint="pass --allow-drift to compare the other questions and list these apart",
        )
    if not changes:
        raise NothingToRunError(
            "no question is in both runs: nothing to compare",
            hint=f"baseline targets {sorted(b_all)}, candidate targets {sorted(c_all)}",
        )
    decided = [q for q in changes if q.base_passed is not None and q.cand_passed is not None]
    mcnemar = mcnemar_exact(
        sum(1 for q in decided if q.base_passed and not q.cand_passed),
        sum(1 for q in decided if not q.base_passed and q.cand_passed),
    )
    deltas = [q.composite_delta for q in changes if q.composite_delta is not None]
    return Comparison(
        base=f"{base.label} (run {base.run_id})" if base.label != base.run_id else base.label,
        cand=f"{cand.label} (run {cand.run_id})" if cand.label != cand.run_id else cand.label,
        targets=pairs,
        questions=changes,
        drifted=drifted,
        only_base=only_base,
        only_cand=only_cand,
        mcnemar=mcnemar,
        bootstrap=paired_bootstrap(deltas, resamples=resamples, seed=seed),
        fail_on=tuple(fail_on),
        notes=notes,
        incomplete=_incomplete(cand, only_base, changes),
        allow_missing=allow_missing,
        costs=compare_costs(aligned, thresholds=thresholds, resamples=resamples, seed=seed),
    )
