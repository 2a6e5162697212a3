"""The rubric model: a versioned set of narrow checks (seed 002 "Rubrics").

One model covers both file shapes: a rubric with `checks` and a `scoring` block, and a
Jeval-style file holding a single check (read as a rubric of one check, `Rubric.from_data`).
Structural rules live in `schema/rubric.schema.json` too; the rules JSON Schema cannot say
(thresholds summing above 1, weights naming real checks, regexes that compile) live here.
"""

from __future__ import annotations

from typing import Any, Literal

import jsonschema
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ...redaction import compile_pattern

__all__ = [
    "DEFAULT_THRESHOLDS",
    "EVIDENCE_FIELDS",
    "EXECUTABLE_KINDS",
    "JUDGE_KINDS",
    "KIND_EVIDENCE",
    "Applicability",
    "Check",
    "Outcomes",
    "Rubric",
    "Scoring",
    "SuccessWhen",
    "Thresholds",
]

EXECUTABLE_KINDS = frozenset(
    {"must_contain", "must_not_contain", "regex", "json_schema", "max_length"}
)
"""Checks run by code on the response text (`rubric_checks`)."""
JUDGE_KINDS = frozenset(
    {"policy-compliance", "claim-support", "tool-claim", "escalation", "custom"}
)
"""The five Jeval kinds: multiple-choice questions for the judge (`rubric_judge`)."""
PROSE_KINDS = frozenset({"llm_judge"})
"""Prose appended to `criteria` for the judges; executed by neither rubric grader."""
EVIDENCE_FIELDS = ("policy", "context", "toolEvents", "messages")

KIND_EVIDENCE: dict[str, tuple[str, ...]] = {
    "policy-compliance": ("policy",),
    "claim-support": ("context",),
    "tool-claim": ("toolEvents",),
    "escalation": ("policy", "toolEvents"),
    "custom": (),
}
"""Evidence each judge kind requires whatever `applicability.requires` adds (seed 002)."""

Severity = Literal["critical", "major", "minor"]
Kind = Literal[
    "must_contain",
    "must_not_contain",
    "regex",
    "json_schema",
    "max_length",
    "llm_judge",
    "policy-compliance",
    "claim-support",
    "tool-claim",
    "escalation",
    "custom",
]
_VERSION = r"^[0-9A-Za-z][0-9A-Za-z.+-]*$"
_ID = r"^[a-z0-9][a-z0-9_.-]*$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Thresholds(_Strict):
    """Probability bars turning outcome probabilities into statuses."""

    pass_: float = Field(0.75, alias="pass", ge=0.0, le=1.0)
    """Pass when p(acceptable) reaches this (and unacceptable did not reach `fail`)."""
    fail: float = Field(0.5, ge=0.0, le=1.0)
    """Fail when p(unacceptable) reaches this; checked first."""

    @model_validator(mode="after")
    def _sum_above_one(self) -> Thresholds:
        # pass + fail > 1 is what makes Pass and Fail mutually exclusive (seed 002).
        if self.pass_ + self.fail <= 1.0:
            raise ValueError(
                f"thresholds pass ({self.pass_}) + fail ({self.fail}) must be greater than 1, "
                "otherwise Pass and Fail could both fire"
            )
        return self


DEFAULT_THRESHOLDS = Thresholds()


class Applicability(_Strict):
    """When a check applies and what evidence it needs."""

    requires: tuple[Literal["policy", "context", "toolEvents", "messages"], ...] = ()
    """Evidence that must exist besides what the kind requires; missing evidence is Review."""
    only_when_metadata: dict[str, Any] = Field(default_factory=dict, alias="onlyWhenMetadata")
    """Run only when every key equals the question's `metadata` value; otherwise Skipped."""


class Outcomes(_Strict):
    """Descriptions of the outcomes shown to the judge."""

    acceptable: str = Field(min_length=1)
    unacceptable: str = Field(min_length=1)
    insufficient_context: str = Field("The evidence given is not enough to decide.", min_length=1)


class SuccessWhen(_Strict):
    """An exact comparison on the tool's result, read by code: `result[path] == equals`."""

    path: str = Field(min_length=1)
    """Dot-separated path into the result (list indexes as numbers), e.g. `status`."""
    equals: Any
    """The value the result must hold at `path` (compared exactly, types included)."""


class _ValuesParams(_Strict):
    values: tuple[str, ...] = Field(min_length=1)
    """Substrings looked for in the response."""
    case_sensitive: bool = False
    """Compare case-sensitively (default: case-insensitive)."""


class _RegexParams(_Strict):
    pattern: str
    """A regular expression (RE2 syntax: no look-around or back-references, linear time)
    searched for in the response."""
    must_match: bool = True
    """True: the response must match; False: it must not."""
    case_sensitive: bool = True

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            compile_pattern(value)
        except ValueError as exc:
            raise ValueError(f"pattern does not compile: {exc}") from None
        return value


class _JsonSchemaParams(_Strict):
    schema_: dict[str, Any] = Field(alias="schema")
    """A JSON Schema the response, parsed as JSON, must satisfy."""

    @field_validator("schema_")
    @classmethod
    def _valid_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            jsonschema.validators.validator_for(value).check_schema(value)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"not a valid JSON Schema: {exc.message}") from None
        return value


class _MaxLengthParams(_Strict):
    max_chars: int = Field(ge=0)
    """The response may have at most this many characters."""


class _ClaimSupportParams(_Strict):
    claim: str | None = None
    """The one claim to check; without it, every factual claim of the response."""
    uncovered_is: Literal["review", "fail"] = Field("review", alias="uncoveredIs")
    """What a claim the reference material does not cover becomes."""


class _ToolClaimParams(_Strict):
    tool_name: str = Field(alias="toolName", min_length=1)
    action: str = Field(min_length=1)
    """The action, as a phrase the judge can look for: "booking the appointment"."""
    success_when: SuccessWhen | None = Field(None, alias="successWhen")


class _EscalationParams(_Strict):
    tool_name: str = Field(alias="toolName", min_length=1)
    """The tool that escalates (e.g. `escalate_to_human`)."""
    success_when: SuccessWhen | None = Field(None, alias="successWhen")


class _NoParams(_Strict):
    pass


PARAMS_MODELS: dict[str, type[_Strict]] = {
    "must_contain": _ValuesParams,
    "must_not_contain": _ValuesParams,
    "regex": _RegexParams,
    "json_schema": _JsonSchemaParams,
    "max_length": _MaxLengthParams,
    "llm_judge": _NoParams,
    "policy-compliance": _NoParams,
    "claim-support": _ClaimSupportParams,
    "tool-claim": _ToolClaimParams,
    "escalation": _EscalationParams,
    "custom": _NoParams,
}


class Check(_Strict):
    """One narrow check with a stable id (seed 002 "Fields")."""

    id: str = Field(pattern=_ID)
    """Stable id within its rubric."""
    version: str | None = Field(None, pattern=_VERSION)
    """The check's own version; defaults to its rubric's. Changing the criterion bumps it."""
    kind: Kind
    description: str | None = None
    """What the check asks, in one line; appended to the judges' `criteria`."""
    criterion: str | None = None
    """The condition, phrased as one specific question (the prose of an `llm_judge` check)."""
    severity: Severity = "major"
    required: bool = True
    """Required checks feed CI gates; optional ones are reported only."""
    applicability: Applicability = Applicability()
    thresholds: Thresholds | None = None
    """Per-check override of the rubric and run thresholds."""
    outcomes: Outcomes | None = None
    """Outcome descriptions shown to the judge (required for `custom`)."""
    params: dict[str, Any] = Field(default_factory=dict, validate_default=True)
    """Kind-specific settings, validated per kind (see `typed_params`)."""

    @field_validator("params")
    @classmethod
    def _params_of_kind(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        kind = info.data.get("kind")
        if kind is None:  # the kind itself was invalid: that error is reported instead
            return value
        try:
            PARAMS_MODELS[kind].model_validate(value)
        except ValidationError as exc:
            problems = "; ".join(
                f"params.{'.'.join(str(p) for p in e['loc']) or '(root)'}: "
                f"{str(e['msg']).removeprefix('Value error, ')}"
                for e in exc.errors()
            )
            raise ValueError(f"invalid params for a {kind} check: {problems}") from None
        return value

    @model_validator(mode="after")
    def _kind_rules(self) -> Check:
        if self.kind == "custom" and self.outcomes is None:
            raise ValueError("a custom check needs outcomes (acceptable, unacceptable)")
        if self.kind in ("custom", "llm_judge") and not self.criterion:
            raise ValueError(f"a {self.kind} check needs a criterion")
        return self

    @property
    def typed_params(self) -> Any:
        """`params` as the kind's typed model (validated already, so this cannot fail)."""
        return PARAMS_MODELS[self.kind].model_validate(self.params)

    @property
    def executable(self) -> bool:
        return self.kind in EXECUTABLE_KINDS

    @property
    def judged(self) -> bool:
        return self.kind in JUDGE_KINDS

    def evidence_required(self) -> tuple[str, ...]:
        """The kind's evidence plus `applicability.requires`, in the canonical order."""
        wanted = set(KIND_EVIDENCE.get(self.kind, ())) | set(self.applicability.requires)
        return tuple(f for f in EVIDENCE_FIELDS if f in wanted)


class Scoring(_Strict):
    """How `rubric_checks` combines its executable checks into one 0–1 verdict."""

    mode: Literal["all", "any", "weighted_mean", "min"] = "weighted_mean"
    """all: 1 only if every check passes; any: 1 if one does; weighted_mean; min."""
    weights: dict[str, float] = Field(default_factory=dict)
    """Per-check weights by check id (default 1); only `weighted_mean` reads them."""

    @field_validator("weights")
    @classmethod
    def _non_negative(cls, value: dict[str, float]) -> dict[str, float]:
        bad = [k for k, w in value.items() if w < 0]
        if bad:
            raise ValueError(f"weights must not be negative: {', '.join(bad)}")
        return value


class Rubric(_Strict):
    """A versioned rubric: identity, checks and how their verdicts combine."""

    id: str = Field(pattern=_ID)
    version: str = Field(pattern=_VERSION)
    description: str | None = None
    thresholds: Thresholds | None = None
    """Rubric-wide override of the run thresholds (a check's own override wins)."""
    scoring: Scoring = Scoring()
    checks: tuple[Check, ...] = Field(min_length=1)
    _single_check: bool = PrivateAttr(False)

    @model_validator(mode="after")
    def _consistent(self) -> Rubric:
        seen: set[str] = set()
        for check in self.checks:
            if check.id in seen:
                raise ValueError(f"duplicate check id {check.id!r}")
            seen.add(check.id)
        unknown = sorted(set(self.scoring.weights) - seen)
        if unknown:
            raise ValueError(f"scoring.weights names no check of this rubric: {', '.join(unknown)}")
        return self

    @classmethod
    def from_data(cls, data: Any) -> Rubric:
        """Build from a parsed file: a rubric, or a single check (it has `kind`, no `checks`).
        Top-level `$schema` and `$comment` keys (editor and documentation aids) are ignored."""
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k not in ("$schema", "$comment")}
        if isinstance(data, dict) and "kind" in data and "checks" not in data:
            check = Check.model_validate(data)
            if check.version is None:
                raise ValueError("a single-check rubric file needs a version")
            rubric = cls(
                id=check.id, version=check.version, description=check.description, checks=(check,)
            )
            rubric._single_check = True
            return rubric
        return cls.model_validate(data)

    @property
    def single_check(self) -> bool:
        """True when read from a Jeval-style single-check file."""
        return self._single_check

    @property
    def ref(self) -> str:
        """`rubric/<id>@<version>`, the form questions use."""
        return f"rubric/{self.id}@{self.version}"

    def check_version(self, check: Check) -> str:
        return check.version or self.version

    def thresholds_for(self, check: Check, run: Thresholds | None = None) -> Thresholds:
        """The check's override, else the rubric's, else the run's, else the defaults."""
        return check.thresholds or self.thresholds or run or DEFAULT_THRESHOLDS

    def weight_of(self, check: Check) -> float:
        return self.scoring.weights.get(check.id, 1.0)
