"""The config's types: `Config`, `TargetConfig`, `GateConfig`, `GraderEntry`, `TelemetryConfig`
and the defaults a config leaves unsaid. Keyword-only: a config can be built in code as well as
read from `tracegrade.yaml` (`tracegrade.inputs.config` reads, validates and builds them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cost.pricing import PriceTable
from ..errors import ConfigError
from ..records import GraderSpec
from ..redaction import RedactionPolicy
from ..usercode.loading import load_object
from .sourcefile import (
    Problem,
    pointer_of,
)

__all__ = [
    "DEFAULTS",
    "DEFAULT_CONFIG",
    "DEFAULT_MIN_PASS_RATE",
    "CassetteSettings",
    "Config",
    "GateConfig",
    "GraderEntry",
    "TargetConfig",
    "TelemetryConfig",
]


DEFAULT_CONFIG = "tracegrade.yaml"


DEFAULTS: dict[str, Any] = {
    "response_char_limit": 4000,
    "concurrency": 8,
    "timeout_s": 60.0,
    "repeats": 1,
}


DEFAULT_MIN_PASS_RATE = 1.0
"""The safe default of `gate.min_pass_rate`: a gate nobody tuned fails on any failing question."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GateConfig:
    """A target's gate (config `gate:`)."""

    min_mean_composite: float | None = None
    """Minimum mean composite (0–5): errored questions count as 0, degraded ones are left out;
    None: no bar."""
    max_errored: int = 0
    """Error budget: degraded or errored questions allowed before the run is incomplete (3)."""
    zero_critical_failures: bool = True
    """Any failed critical rubric check fails the gate."""
    allow_review: bool = False
    """A required rubric check left in Review does not block the gate."""
    min_pass_rate: float | None = DEFAULT_MIN_PASS_RATE
    """Minimum share of questions whose trials all passed (pass^k; with one trial the plain
    pass rate). Default 1.0 (the safe default): any failing question fails the gate; 0 (or
    None in code) relaxes it."""
    max_cost: float | None = None
    """Budget for the agent's model calls over the whole run, in the price table's currency;
    an unpriced model or calls without usage fail it (the cost is unknown, never free)."""
    max_cost_per_question: float | None = None
    """Budget per question run: a question over it fails, its reason naming the figure."""
    max_tokens_per_question: int | None = None
    """Input plus output tokens of the agent's calls per question run."""
    max_p95_latency_s: float | None = None
    """The 95th percentile of the question runs' wall times, in seconds."""

    @property
    def budgets(self) -> bool:
        """A per-question budget is set (a question can fail on what it cost or used)."""
        return self.max_cost_per_question is not None or self.max_tokens_per_question is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class GraderEntry:
    """A grader a target names in its config (`graders:`): which one, its options, and how it
    counts (`spec`)."""

    id: str
    """Registry id of the grader."""
    spec: GraderSpec = field(default_factory=GraderSpec)
    """Weight, must_pass, threshold and samples, validated once when the entry is parsed."""
    options: dict[str, Any] = field(default_factory=dict)
    """Every other key of the mapping, passed to the grader's constructor."""
    line: int | None = None
    """Line of the entry in the config file (for error messages)."""
    pointer: str = ""
    """JSON pointer of the entry in the config file (for error messages)."""

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, **self.spec.model_dump(), "options": dict(self.options)}


@dataclass(frozen=True, slots=True, kw_only=True)
class TelemetryConfig:
    otlp_endpoint: str | None = None
    """OTLP/HTTP endpoint; None: no exporter (OTEL_EXPORTER_OTLP_* env vars also honoured)."""
    otlp_headers: dict[str, str] = field(default_factory=dict)
    trace_file: bool = True
    """Write the run's local trace file (`tracegrade grade` reads records from it)."""
    project: str | None = None
    """Project for trace backends (`openinference.project.name`); the config's directory name
    when not set."""
    protocol: str | None = None
    """OTLP transport, `http/protobuf` or `http/json`; None: the OTEL_* variables, else
    protobuf."""
    capture_messages: bool = False
    """Opt-in: each chat span carries the messages the model saw and its answer."""
    message_chars: int = 4096
    """...each cut to this many characters."""

    def captured_message_chars(self) -> int | None:
        """The cut for captured messages, or None when messages are not captured."""
        return self.message_chars if self.capture_messages else None


@dataclass(frozen=True, slots=True, kw_only=True)
class CassetteSettings:
    """A target's `cassettes:` (or the command line's `--cassettes`/`--record-mode`)."""

    dir: Path
    """The cassettes' folder; a folder per target inside it."""
    mode: str = "none"
    """`none`, `once`, `new` or `all` (`tracegrade.capture.cassette.MODES`)."""
    record_tools: tuple[str, ...] = ()
    """Tools recorded and replayed like model calls (those that reach the outside world)."""


@dataclass(slots=True, kw_only=True)
class TargetConfig:
    """One target: what runs (agent graph or chat model), on which dataset, graded how."""

    name: str
    mode: str
    """"agent" (a compiled LangGraph graph) or "chat" (a bare chat model: no tool record)."""
    factory: Any
    """The `agent:` or `chat_model:` reference as written (`file.py:attr`, `module:attr`), or,
    for a target built in code (`evaluate()`), the factory or chat model itself."""
    dataset: Path
    """Resolved dataset path."""
    environment: Any = None
    """Environment factory reference (or, built in code, the factory itself): one fresh
    environment per question."""
    grading_module: Path | None = None
    """Named module, or `graders.py` found beside the dataset; None when neither (or when the
    target says `grading_module: false`)."""
    grading_module_auto: bool = False
    """True when `grading_module` is the `graders.py` found beside the dataset, not named."""
    policy: Path | None = None
    system_prompt: str | None = None
    """Replaces any stored system message of a question."""
    cassettes: CassetteSettings | None = None
    """Record and replay of the agent's model calls; None: every call is live."""
    configurable: dict[str, Any] = field(default_factory=dict)
    """LangGraph `config["configurable"]` for every question (a question's own keys win)."""
    variant: str | None = None
    """The variant's name (a target's `variants:` run as one target each); None otherwise."""
    variant_of: str | None = None
    """For a variant, the target as the config names it (`desk` of `desk.small`)."""
    factory_args: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments the agent factory is called with (a variant's)."""
    tools: dict[str, Any] = field(default_factory=dict)
    """`tracegrade.world.ToolOverride` by tool name: the world every question's tools meet
    (a question's own `tools:` win tool by tool)."""
    response_char_limit: int = 4000
    concurrency: int = 8
    timeout_s: float = 60.0
    grading_deadline_s: float | None = None
    """Seconds all graders of one question may take (None: the judge block's, or 300)."""
    repeats: int = 1
    """Trials per question (`repeats:`): each runs, is graded and stored on its own."""
    graders: list[GraderEntry] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    """Dataset keys left unchecked on purpose (`unchecked:`): the check plan attaches no grader
    for them and every report names them."""
    gate: GateConfig = field(default_factory=GateConfig)
    base_dir: Path = Path(".")
    """The config file's directory (object references resolve against it)."""
    config_file: str = ""
    """The config file the target came from, for error messages."""
    line: int | None = None
    """Line of the target in the config file."""
    raw: dict[str, Any] = field(default_factory=dict)
    """The target as authored (for the run identity snapshot)."""
    lines: dict[str, int] = field(default_factory=dict)
    """JSON pointer -> line in the config file, for the pointers under this target."""

    def where(self, *parts: Any) -> dict[str, Any]:
        """`file`, `line` and `key` of `/targets/<name>/<parts...>` in the config file (the
        line of the nearest enclosing key when that one has none), for errors and problems."""
        pointer = pointer_of(["targets", self.variant_of or self.name, *parts])
        probe = pointer
        while probe not in self.lines and "/" in probe:
            probe = probe.rsplit("/", 1)[0]
        return {"file": self.config_file, "line": self.lines.get(probe, self.line), "key": pointer}

    def problem(self, parts: tuple[Any, ...] | list[Any], message: str, hint: str | None = None):
        """A `Problem` at `/targets/<name>/<parts...>` of the config file."""
        where = self.where(*parts)
        return Problem(where["file"], where["line"], where["key"], message, hint=hint)

    def load_factory(self) -> Any:
        if not isinstance(self.factory, str):
            factory = self.factory
        else:
            key = "agent" if self.mode == "agent" else "chat_model"
            factory = load_object(self.factory, base_dir=self.base_dir, **self._where(key))
        if not self.factory_args:
            return factory
        import functools
        import inspect

        try:  # an argument the factory does not take is the variant's error, not each question's
            inspect.signature(factory).bind_partial(**self.factory_args)
        except TypeError as exc:
            raise ConfigError(
                f"variant {self.variant!r}: the agent factory {self.factory!r} {exc}",
                **self.where("variants", self.variant),
            ) from None
        except ValueError:  # no signature to check against
            pass
        return functools.partial(factory, **self.factory_args)

    def load_environment_factory(self) -> Any:
        if self.environment is None or not isinstance(self.environment, str):
            return self.environment
        return load_object(self.environment, base_dir=self.base_dir, **self._where("environment"))

    def _where(self, key: str) -> dict[str, Any]:
        return self.where(key)


@dataclass(slots=True, kw_only=True)
class Config:
    """A loaded, validated config file."""

    path: Path
    base_dir: Path
    runs_dir: Path
    rubrics: Path | None = None
    judge: dict[str, Any] | None = None
    """The `judge:` block as authored (for `tracegrade.judging.build_provider`)."""
    judge_panels: dict[str, Any] = field(default_factory=dict)
    """Named judge panels (`judge_panels:`): a judge grader's `panel: NAME` option uses one."""
    telemetry: TelemetryConfig = field(default_factory=TelemetryConfig)
    redaction: RedactionPolicy = field(default_factory=RedactionPolicy)
    """The `redaction:` block as a policy: applied to every copy stored, exported, printed or
    sent to a judge."""
    targets: dict[str, TargetConfig] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    workers: int = 1
    """Worker processes per target (`workers:`; `--workers` overrides): 1 runs the questions
    in the run's own process; with `executor: ray`, the number of Ray actors."""
    executor: str = "local"
    """`local` (this machine) or `ray` (`executor:`; `--executor` overrides)."""
    pricing: PriceTable = field(default_factory=PriceTable.build)
    """Model prices (`pricing:`): the bundled table overridden by the config's entries."""
    ray_address: str | None = None
    """`ray.address`: the Ray cluster to join; None: `RAY_ADDRESS`, else a local Ray."""
    dataset_store: Path = Path("datasets.sqlite")
    """The writable dataset store (`dataset_store:`, default `datasets.sqlite` beside the
    config): where `tracegrade dataset promote` writes and `dataset: store:NAME` reads."""

    @property
    def content_sha256(self) -> str:
        """The sha256 of what the config says (its parsed content: comments, layout, key order
        and `x-` keys aside), whatever its path: what a resume pins."""
        import hashlib
        import json

        text = json.dumps(self.data, sort_keys=True, default=str, ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def select_targets(self, names: list[str] | tuple[str, ...] = ()) -> list[TargetConfig]:
        """Targets by name (all when none named); an unknown name is a config error."""
        if not names:
            return list(self.targets.values())
        # a target with variants is named by its config name: all of its variants
        variants = {n: [t.name for t in self.targets.values() if t.variant_of == n] for n in names}
        names = [v for n in names for v in (variants[n] or [n])]
        unknown = [n for n in names if n not in self.targets]
        if unknown:
            raise ConfigError(
                f"unknown target {unknown[0]!r}",
                file=str(self.path),
                key="/targets",
                hint=f"targets: {', '.join(self.targets) or '(none)'}",
            )
        return [self.targets[n] for n in names]
