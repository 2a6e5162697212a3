"""Scoring: grader results folded into question scores (the gate that holds question scores
against a target's `gate:` is `tracegrade.verdicts.gate`).

The arithmetic of seed 000 ("Score scales", skips and errors) and seed 003 ("How scores
combine"):

- composite (0–5): mean of the non-null grader scores after each is mapped onto 0–5 by its
  declared scale; skips are excluded silently.
- objective (0–1): weighted mean (weight default 1) of the scored graders, each normalised to
  0–1 by its declared scale; a must-pass grader that fails makes the question's objective 0.
- pass rule: a binary grader (declared `binary`, or a 0–1 code grader that returned a bool)
  passes iff its score is its max; a scalar grader passes iff score >= threshold (default 0;
  the full score for a grader that observes actions, which is also must-pass unless the target
  relaxes it). A question passes when every scored grader met its bar and no required or
  critical rubric check failed; the gate's `min_pass_rate` defaults to 1.0, so any failing
  question fails it.
- an agent error or timeout scores 0, counts in the mean, fails the gate and the target's
  must-pass graders (seed 003: an errored test fails every gate); a grader error marks the
  question degraded (out of the mean). Both count against the error budget (`max_errored`).
- a target whose questions scored nothing (every one degraded, or every grader skipped) never
  passes: incomplete (3).
- every decided rubric check counts, whatever its sibling checks (or the grader) did.
- exit-code precedence: 4 invalid input, 5 nothing to run, 3 incomplete, 2 gate failed, 0.
"""

from __future__ import annotations

import statistics
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from ..records import GradeResult, GraderSpec, map_to_composite


class Question(Protocol):
    """What scoring reads of a question result (`tracegrade.verdicts.result.QuestionResult`,
    which imports this module: named here by shape, not by import)."""

    target: str
    id: str
    graders: list[GraderVerdict]
    composite: float | None
    objective: float | None
    over_budget: list[str]

    @property
    def errored(self) -> bool: ...
    @property
    def ended_early(self) -> bool: ...
    @property
    def unmet(self) -> list[GraderVerdict]: ...
    @property
    def must_pass_failures(self) -> list[str]: ...
    @property
    def required_check_failures(self) -> list[str]: ...
    @property
    def critical_failures(self) -> list[str]: ...
    def grader_checks(self) -> list[dict[str, Any]]: ...


_Q = TypeVar("_Q", bound=Question)

__all__ = [
    "GraderFold",
    "GraderSummary",
    "GraderVerdict",
    "aggregate_samples",
    "all_passed",
    "can_fail",
    "is_unscored",
    "pass_bar",
    "pass_rate",
    "passes",
    "question_passed",
    "score_question",
    "summarise_graders",
]

_REPORT_ALIASES = {
    "id": "grader_id",
    "min": "min_score",
    "max": "max_score",
    "samples": "sample_scores",
}
_DERIVED = ("mapped", "skipped", "passed", "pass_bar", "spread")
_SPEC_KEYS = tuple(k for k in GraderSpec.model_fields if k != "samples")  # flat in the report


def passes(
    score: float, *, min_score: float, max_score: float, binary: bool, threshold: float
) -> bool:
    """The pass rule (`GraderSpec.passes`) for a bare threshold."""
    del min_score  # the scale bottom never decides a pass; kept for a uniform call shape
    return GraderSpec(threshold=threshold).passes(score, max_score=max_score, binary=binary)


def can_fail(*, binary: bool, threshold: float, min_score: float, max_score: float) -> bool:
    """Whether some score misses the bar: not for a scalar grader whose threshold is at the
    bottom of its scale (seed 003's default 0). Reports show such a grader's verdict as
    "scored", never a green "passed" it could not have missed."""
    del max_score  # a uniform call shape with `pass_bar`
    return binary or threshold > min_score


def pass_bar(*, binary: bool, threshold: float, min_score: float, max_score: float) -> str:
    """The pass rule in words (`GraderSpec.pass_bar`) for a bare threshold."""
    spec = GraderSpec(threshold=threshold)
    return spec.pass_bar(min_score=min_score, max_score=max_score, binary=binary)


class GraderVerdict(BaseModel):
    """One attached grader's verdict on one question, its samples aggregated: the one grader
    verdict every layer shares. The store keeps it as a `grades` row; the JSON report writes it
    (under a question's `graders`) in its documented shape, `{"id", "score", "min", "max",
    "mapped", "reason", "error", "skipped", "binary", "passed", "must_pass", "weight",
    "threshold", "pass_bar", "samples", "spread", "details"}`, and reads that shape back
    (`compare` on a JSON report). What follows from the score (`mapped`, `skipped`, `passed`,
    `pass_bar`, `spread`) is computed, never stored apart from it. Build it with
    `aggregate_samples`."""

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)

    grader_id: str
    """Id of the grader (`id` in the report)."""
    score: float | None
    """Mean of the sample scores on the grader's own scale; None when skipped or errored."""
    min_score: float = 0.0
    """Declared lower bound of the grader's scale (`min` in the report)."""
    max_score: float = 5.0
    """Declared upper bound of the grader's scale (`max` in the report)."""
    reason: str = ""
    """The grader's reason (the first error's reason when a sample errored)."""
    error: bool = False
    """True when any sample errored: the question is degraded."""
    binary: bool = False
    """Pass/fail grader: passes only at its max."""
    spec: GraderSpec = Field(default_factory=GraderSpec)
    """How it counts: weight, must_pass, threshold, samples (flat in the report)."""
    sample_scores: list[float | None] = Field(default_factory=list)
    """Each sample's score (one entry when `samples` is 1; `samples` in the report)."""
    checks: list[dict[str, Any]] = Field(default_factory=list)
    """Rubric check outcomes from `GradeResult.details["checks"]`, when the grader gives them
    (the report lists them under the question's `checks`)."""
    details: dict[str, Any] = Field(default_factory=dict)
    """The first sample's grader-specific details."""

    @model_validator(mode="before")
    @classmethod
    def _from_report(cls, data: Any) -> Any:
        """Read the report's shape (and flat spec keys) as well as the field names."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for alias, name in _REPORT_ALIASES.items():
            if alias in data and name not in data:
                data[name] = data.pop(alias)
        for derived in _DERIVED:
            data.pop(derived, None)
        counts = {k: data.pop(k) for k in _SPEC_KEYS if k in data}
        if counts and "spec" not in data:
            data["spec"] = GraderSpec(**counts)
        return data

    @model_serializer(mode="wrap")
    def _report_shape(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        spec = data["spec"]
        return {
            "id": data["grader_id"],
            "score": data["score"],
            "min": data["min_score"],
            "max": data["max_score"],
            "mapped": self.mapped,
            "reason": data["reason"],
            "error": data["error"],
            "skipped": self.skipped,
            "binary": data["binary"],
            "passed": self.passed,
            "must_pass": spec["must_pass"],
            "weight": spec["weight"],
            "threshold": spec["threshold"],
            "pass_bar": self.pass_bar,
            "samples": data["sample_scores"],
            "spread": self.spread,
            "details": data["details"],
        }

    @property
    def id(self) -> str:
        """The grader's id, as the report names it."""
        return self.grader_id

    @property
    def weight(self) -> float:
        return self.spec.weight

    @property
    def must_pass(self) -> bool:
        return self.spec.must_pass

    @property
    def threshold(self) -> float:
        return self.spec.threshold

    @property
    def pass_bar(self) -> str:
        """The pass rule in words: "= 1", ">= 3", ">= 0 (any score)"."""
        return self.spec.pass_bar(
            min_score=self.min_score, max_score=self.max_score, binary=self.binary
        )

    @property
    def skipped(self) -> bool:
        """Did not apply: excluded from every mean silently."""
        return self.score is None and not self.error

    @property
    def spread(self) -> float | None:
        """Max minus min over scored samples; None with fewer than two scored samples."""
        scored = [s for s in self.sample_scores if s is not None]
        return (max(scored) - min(scored)) if len(scored) > 1 else None

    @property
    def stdev(self) -> float | None:
        scored = [s for s in self.sample_scores if s is not None]
        return statistics.pstdev(scored) if len(scored) > 1 else None

    @property
    def mapped(self) -> float | None:
        """The score on the 0–5 composite scale."""
        if self.score is None:
            return None
        return map_to_composite(self.score, self.min_score, self.max_score)

    @property
    def normalised(self) -> float | None:
        """The score on 0–1, for the objective."""
        if self.score is None:
            return None
        span = self.max_score - self.min_score
        return (self.score - self.min_score) / span if span else 0.0

    @property
    def passed(self) -> bool | None:
        """True/False by the pass rule; None when skipped or errored."""
        if self.score is None:
            return None
        return self.spec.passes(self.score, max_score=self.max_score, binary=self.binary)


def aggregate_samples(
    results: Sequence[GradeResult],
    *,
    spec: GraderSpec | None = None,
    binary: bool = False,
) -> GraderVerdict:
    """Fold the N samples of one grader on one question into one GraderVerdict.

    Any errored sample makes the whole grader errored (a noisy judge that failed once did not
    answer); skipped samples are ignored; the score is the mean of the scored samples.
    A result carrying `details["binary"] = True` (a 0–1 code grader that returned a bool)
    is binary whatever the class declared.
    """
    if not results:
        raise ValueError("aggregate_samples needs at least one result")
    first = results[0]
    binary = binary or any(r.details.get("binary") is True for r in results)
    errored = [r for r in results if r.error]
    scored = [r for r in results if r.score is not None]
    checks: list[dict[str, Any]] = []
    for r in scored or results:
        if isinstance(r.details.get("checks"), list):
            checks = [dict(c) for c in r.details["checks"]]
            break
    common: dict[str, Any] = {
        "grader_id": first.grader_id,
        "min_score": first.min_score,
        "max_score": first.max_score,
        "binary": binary,
        "spec": spec if spec is not None else GraderSpec(),
        "sample_scores": [r.score for r in results],
        "checks": checks,
        "details": dict(first.details),
    }
    if errored:
        return GraderVerdict(score=None, reason=errored[0].reason, error=True, **common)
    if not scored:
        return GraderVerdict(score=None, reason=first.reason, **common)
    values = [r.score for r in scored if r.score is not None]
    mean = sum(values) / len(values)
    reason = scored[0].reason
    if len(results) > 1:
        spread = max(values) - min(values)
        reason = f"{reason} (mean of {len(scored)} samples, spread {spread:g})"
    return GraderVerdict(score=mean, reason=reason, **common)


def question_passed(question: Question, *, critical_fails: bool = True) -> bool | None:
    """One question run's pass/fail, the gate's pass rule: every scored grader met its bar
    (a must-pass grader's failure also fails the gate on its own) and no required or critical
    rubric check failed; False for an errored agent; None when a grader errored (the
    evaluation, not the agent, failed). `critical_fails=False` (a gate with
    `zero_critical_failures: false`) lets a critical check that is not required fail without
    failing the question."""
    if question.errored or question.ended_early or question.over_budget:
        return False
    if any(g.error for g in question.graders):
        return None
    if is_unscored(question):  # no grader decided anything: never counted as passed
        return None
    return (
        not question.unmet
        and not question.required_check_failures
        and not (critical_fails and question.critical_failures)
    )


def is_unscored(question: Question) -> bool:
    """The agent answered and no grader scored it: every grader skipped, no rubric check was
    decided. Such a question is named in every report and never counts as passed."""
    return (
        not question.errored
        and not any(g.error or g.score is not None for g in question.graders)
        and not any(c.get("status") in ("pass", "fail") for c in question.grader_checks())
    )


def all_passed(verdicts: Sequence[bool | None]) -> bool | None:
    """pass^k of one question's trials: False if any failed, None if any is undecided."""
    if any(v is False for v in verdicts):
        return False
    if any(v is None for v in verdicts):
        return None
    return True


def pass_rate(questions: Sequence[Question], *, critical_fails: bool = True) -> float | None:
    """Share of questions whose trials all passed (pass^k), over questions with a verdict; with
    one trial per question, the plain pass rate."""
    trials: dict[tuple[str, str], list[bool | None]] = {}
    for q in questions:
        verdict = question_passed(q, critical_fails=critical_fails)
        trials.setdefault((q.target, q.id), []).append(verdict)
    decided = [v for v in (all_passed(t) for t in trials.values()) if v is not None]
    return sum(decided) / len(decided) if decided else None


def score_question(question: _Q) -> _Q:
    """Fill in `composite` and `objective` from the question's graders (in place; returned)."""
    if question.errored or question.ended_early:  # no answer to grade: 0, as errored
        question.composite = 0.0
        question.objective = 0.0
        return question
    mapped = [g.mapped for g in question.graders if g.mapped is not None]
    question.composite = sum(mapped) / len(mapped) if mapped else None
    weighted = [(g.normalised, g.weight) for g in question.graders if g.normalised is not None]
    total_weight = sum(w for _, w in weighted)
    if question.must_pass_failures or question.ended_early:
        question.objective = 0.0
    elif weighted and total_weight > 0:
        question.objective = sum(n * w for n, w in weighted) / total_weight
    elif weighted:
        question.objective = sum(n for n, _ in weighted) / len(weighted)
    else:
        question.objective = None
    return question


@dataclass(slots=True)
class GraderSummary:
    """One grader over a target's questions, on the grader's own scale."""

    grader_id: str
    min_score: float
    max_score: float
    binary: bool
    mean: float | None
    """Mean score over the questions it scored, on its own scale."""
    scored: int
    skipped: int
    errored: int
    passed: int
    failed: int
    spec: GraderSpec = field(default_factory=GraderSpec)
    """How it counts (the first question's; every question of a target shares it)."""

    @property
    def threshold(self) -> float:
        return self.spec.threshold

    @property
    def must_pass(self) -> bool:
        return self.spec.must_pass

    @property
    def pass_bar(self) -> str:
        """What passes, on the grader's own scale: "= 1", ">= 5", ">= 0 (any score)"."""
        return self.spec.pass_bar(
            min_score=self.min_score, max_score=self.max_score, binary=self.binary
        )

    @property
    def display(self) -> str:
        """ "0.75 / 1" or "3.2 / 5": the grader's own answer against its own denominator."""
        if self.mean is None:
            return "-"
        return f"{_fmt(self.mean)} / {_fmt(self.max_score)}"

    def to_dict(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.__slots__ if name != "spec"}
        data["threshold"] = self.threshold
        data["must_pass"] = self.must_pass
        data["display"] = self.display
        data["pass_bar"] = self.pass_bar
        return data


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}".rstrip("0").rstrip(".")


def summarise_graders(questions: Iterable[Question]) -> list[GraderSummary]:
    """Per grader summaries across questions (agent-errored questions have no grader verdicts)."""
    fold = GraderFold()
    for q in questions:
        fold.add(q)
    return fold.summaries()


class GraderFold:
    """`summarise_graders` one question at a time: per grader its counts and scores, never
    the verdicts."""

    def __init__(self) -> None:
        self.first: dict[str, GraderVerdict] = {}
        self.binary: dict[str, bool] = {}
        self.scores: dict[str, array[float]] = {}  # doubles: 8 bytes a score
        self.counts: dict[str, list[int]] = {}  # skipped, errored, passed, failed

    def add(self, q: Question) -> None:
        for g in q.graders:
            gid = g.grader_id
            if gid not in self.first:
                self.first[gid] = g
                self.binary[gid] = False
                self.scores[gid] = array("d")
                self.counts[gid] = [0, 0, 0, 0]
            self.binary[gid] = self.binary[gid] or g.binary
            if g.score is not None:
                self.scores[gid].append(g.score)
            counts = self.counts[gid]
            counts[0] += bool(g.skipped)
            counts[1] += bool(g.error)
            counts[2] += g.passed is True
            counts[3] += g.passed is False

    def summaries(self) -> list[GraderSummary]:
        out = []
        for grader_id, first in self.first.items():
            scored = self.scores[grader_id]
            skipped, errored, passed, failed = self.counts[grader_id]
            out.append(
                GraderSummary(
                    grader_id=grader_id,
                    min_score=first.min_score,
                    max_score=first.max_score,
                    binary=self.binary[grader_id],
                    mean=_mean(scored),
                    scored=len(scored),
                    skipped=skipped,
                    errored=errored,
                    passed=passed,
                    failed=failed,
                    spec=first.spec,
                )
            )
        return out
