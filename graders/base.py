"""The grader base class: the eight declarations of seed 001 and the one result helper.

A grader scores one response on one dimension. Built-ins and third-party graders are the
same kind of object and register the same way (entry-point group `tracegrade.graders`).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..records import GradeResult, GraderSpec
from ..redaction import DEFAULT_POLICY, RedactionPolicy
from .declarations import evidence_of

__all__ = ["Attachment", "Grader", "GraderServices", "gates_by_default", "with_safe_defaults"]


@dataclass(slots=True)
class GraderServices:
    """What the runner hands every grader it builds. Every field is optional: a grader that
    needs a missing service errors (never passes) when asked to grade."""

    judge_provider: Any = None
    """A `tracegrade.judging.JudgeProvider` (None when no provider is configured)."""
    judge_settings: Mapping[str, Any] = field(default_factory=dict)
    """Judge knobs from config: template overrides per judge id, `judge_response_char_limit`,
    `use_cache`..."""
    judge_cache: Any = None
    """A `tracegrade.judging.JudgeCache`, or None to call the provider every time."""
    rubrics: Any = None
    """A `tracegrade.graders.rubrics.RubricStore`, or None when no rubric directory is configured."""
    workdir: Path | None = None
    """The run directory, for graders that look at files the agent wrote."""
    judge_client: Any = None
    """The run's `tracegrade.judging.JudgeClient` (provider, cache, settings, redaction); built
    from the fields above on first use when not given."""

    def client(self) -> Any:
        """The judge client every judge path calls; None when no provider is configured."""
        if self.judge_client is None and self.judge_provider is not None:
            from ..judging.client import JudgeClient

            self.judge_client = JudgeClient(
                self.judge_provider,
                cache=self.judge_cache,
                use_cache=bool(self.judge_settings.get("use_cache", True)),
                settings=self.judge_settings,
                redaction=self.redaction,
            )
        return self.judge_client

    redaction: RedactionPolicy = DEFAULT_POLICY
    """The run's redaction policy: judge prompt builders redact what they render with it
    (graders themselves get raw values)."""
    judge_block: Mapping[str, Any] | None = None
    """The config's `judge:` block as authored: what a judge panel's members are laid over."""
    judge_panels: Mapping[str, Any] = field(default_factory=dict)
    """The config's named judge panels (`judge_panels:`)."""
    base_dir: Path | None = None
    """The config file's directory (paths in judge blocks resolve against it)."""
    prices: Any = None
    """The run's `tracegrade.cost.usage.PriceTable` (the config's `pricing:` over the bundled
    table); None: the bundled table."""
    _member_clients: dict[str, Any] = field(default_factory=dict, repr=False)

    def member_client(self, block: Mapping[str, Any]) -> Any:
        """The judge client of one panel member's judge block: its own provider (redacted with
        the run's policy) sharing the run's cache and settings; one per distinct block. Bad
        settings raise `ConfigError` naming the key."""
        import json

        key = json.dumps(block, sort_keys=True, default=str)
        if key not in self._member_clients:
            from ..judging import build_provider
            from ..judging.client import JudgeClient
            from ..judging.redacting import RedactingProvider

            provider = RedactingProvider(
                build_provider(block, base_dir=self.base_dir), self.redaction
            )
            self._member_clients[key] = JudgeClient(
                provider,
                cache=self.judge_cache,
                use_cache=bool(self.judge_settings.get("use_cache", True)),
                settings=self.judge_settings,
                redaction=self.redaction,
            )
        return self._member_clients[key]


class Grader:
    """Base for every grader. Subclasses set the class declarations and implement `grade`
    (or `agrade`, its async twin; implementing either is enough)."""

    id: ClassVar[str]
    """The grader id targets name. Stable: changing it breaks every config that uses it."""
    label: ClassVar[str]
    """Human-readable name."""
    description: ClassVar[str] = ""
    """What this grader measures."""
    llm: ClassVar[bool] = False
    """The grader scores by asking a model."""
    min_score: ClassVar[float] = 0.0
    """The lowest score the grader can produce."""
    max_score: ClassVar[float] = 5.0
    """The highest score the grader can produce."""
    sees_tool_calls: ClassVar[bool] = False
    """An LLM judge is shown a rendering of the tool-call record in its criteria block."""
    observes_actions: ClassVar[bool] = False
    """The verdict rests on what the agent did (the record or real state), not its text."""
    binary: ClassVar[bool] = False
    """Only ever answers its min or its max (pass/fail): gates read it as a pass/fail grader."""
    needs: ClassVar[str] = ""
    """What it needs from the question, for the catalog (e.g. "`expected_tools` (required, else skips)")."""
    owns: ClassVar[tuple[str, ...]] = ()
    """The dataset keys it checks (`"trajectory"`, `"metadata.state"`: dotted for a nested key).
    A question carrying one is checked by it; when no attached grader owns a key a question
    carries, the check plan attaches an owner with the safe defaults (docs/graders.md)."""
    evidence: ClassVar[tuple[str, ...]] = ("answer",)
    """What it grades from: any of "answer", "tool_calls", "environment", "usage",
    "interrupts", "judge" (an LLM grader needs "judge" whether it says so or not). Where the
    source cannot give it (a trace has no live environment) it is "not applicable here"."""

    def __init__(self, *, services: GraderServices | None = None, **options: Any) -> None:
        self.services = services if services is not None else GraderServices()
        self.options = options

    # -- grading -------------------------------------------------------------------------
    def grade(self, input: str, response: str, context: Mapping[str, Any]) -> GradeResult:
        if type(self).agrade is Grader.agrade:
            raise NotImplementedError(f"{type(self).__name__} implements neither grade nor agrade")
        return asyncio.run(self.agrade(input, response, context))

    async def agrade(self, input: str, response: str, context: Mapping[str, Any]) -> GradeResult:
        if type(self).grade is Grader.grade:
            raise NotImplementedError(f"{type(self).__name__} implements neither grade nor agrade")
        return self.grade(input, response, context)

    # -- the one result helper -----------------------------------------------------------
    def result(
        self,
        score: float | None,
        reason: str,
        error: bool = False,
        *,
        raw: Any = None,
        details: Mapping[str, Any] | None = None,
        identity: Mapping[str, Any] | None = None,
    ) -> GradeResult:
        """Build a GradeResult stamped with this grader's id and declared scale.

        A real score is clamped to the declared bounds; `None` with `error=False` is a skip,
        `None` with `error=True` is an error. A score with `error=True` is a bug.
        """
        if score is not None:
            if error:
                raise ValueError("a GradeResult is either scored or errored, not both")
            score = float(score)
            if math.isnan(score):
                raise ValueError(f"{self.id}: NaN is not a score")
            score = max(self.min_score, min(self.max_score, score))
        details = dict(details or {})
        if self.binary:  # pass/fail: the scale reads "(binary, 0-1)" wherever the result goes
            details.setdefault("binary", True)
        if identity:
            # Stored with the result and shown in every report: which judge (dimension, model,
            # template hash, answer path, file) produced this verdict.
            details.setdefault("judge", dict(identity))
        return GradeResult(
            grader_id=self.id,
            score=score,
            reason=reason,
            error=error,
            min_score=self.min_score,
            max_score=self.max_score,
            raw=raw,
            details=details,
            identity=dict(identity or {}),
        )

    @classmethod
    def declaration(cls) -> dict[str, Any]:
        """The eight declarations (plus `needs`, `owns` and `evidence`) as a plain mapping."""
        return {
            "id": cls.id,
            "label": cls.label,
            "description": cls.description,
            "llm": cls.llm,
            "min_score": cls.min_score,
            "max_score": cls.max_score,
            "sees_tool_calls": cls.sees_tool_calls,
            "observes_actions": cls.observes_actions,
            "needs": cls.needs,
            "owns": list(cls.owns),
            "evidence": sorted(evidence_of(cls)),
        }


class Attachment:
    """A grader attached to a target, with how it counts (seed 003 "How scores combine").

    `Attachment(grader, spec=GraderSpec(...))`, or the spec's fields as keywords
    (`Attachment(grader, weight=3)`): either way they are validated once, by `GraderSpec`.
    """

    __slots__ = ("grader", "spec")

    def __init__(self, grader: Grader, spec: GraderSpec | None = None, **counts: Any) -> None:
        if spec is not None and counts:
            raise TypeError("Attachment takes spec= or the spec's fields, not both")
        self.grader = grader
        self.spec: GraderSpec = spec if spec is not None else GraderSpec(**counts)
        """Weight, must_pass, threshold and samples."""

    def __repr__(self) -> str:
        return f"Attachment({self.grader!r}, spec={self.spec!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Attachment):
            return NotImplemented
        return self.grader is other.grader and self.spec == other.spec

    def __hash__(self) -> int:
        return hash((id(self.grader), self.spec))


def gates_by_default(grader: Grader | type[Grader]) -> bool:
    """The safe default: a grader whose verdict rests on what the agent did (it declares
    `observes_actions`) and that is no LLM judge is must-pass at its full score unless the
    target says otherwise. A wrong action must fail a gate nobody tuned."""
    return bool(getattr(grader, "observes_actions", False)) and not getattr(grader, "llm", False)


def with_safe_defaults(grader: Grader | type[Grader], spec: GraderSpec) -> GraderSpec:
    """`spec` with what it leaves unsaid taken from the safe defaults: for a grader that
    `gates_by_default`, `must_pass` (unless written) is true and `threshold` (unless written)
    its full score, so `must_pass: false` or a `threshold` relaxes it; any other grader keeps
    seed 003's defaults (not must-pass, threshold 0). What was written always stands."""
    if not gates_by_default(grader):
        return spec
    written = spec.model_fields_set
    values = spec.model_dump(include=set(written))
    values.setdefault("must_pass", True)
    values.setdefault("threshold", float(grader.max_score))
    return GraderSpec(**values)
