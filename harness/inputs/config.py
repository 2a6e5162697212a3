"""The run config file (`tracegrade.yaml`): loading, validation and object references.

Validated against `schema/config.schema.json` through `tracegrade.inputs.sourcefile`, then checked for
what a schema cannot say (files that must exist, exactly one of `agent`/`chat_model`), every
problem naming file, line and key. Relative paths resolve against the config file's directory.

Object references are `path/to/file.py:attr` (loaded by file path under a private module name,
never as `agents.*`: the openai-agents package installs a top-level `agents` module too) or
`package.module:attr` (imported normally).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..loading import is_file_reference, load_object
from ..otlp import (
    ENDPOINT_VARS,
    endpoint_problem,
    env_endpoint,
    exporting_from_env,
    resolve_protocol,
)
from ..pricing import PriceTable
from ..records import GraderSpec
from ..redaction import RedactionPolicy, compile_pattern, use_console_policy
from .files import not_a_file
from .sourcefile import (
    Document,
    Problem,
    load_document,
    pointer_of,
    problem_at,
    raise_problems,
    validate_document,
)

__all__ = [
    "DEFAULT_CONFIG",
    "DEFAULT_MIN_PASS_RATE",
    "Config",
    "GateConfig",
    "GraderEntry",
    "GraderSpec",
    "TargetConfig",
    "TelemetryConfig",
    "config_from_document",
    "find_config",
    "load_config",
    "load_object",
    "parse_gate",
    "parse_grader_entry",
    "validate_config_file",
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
    configurable: dict[str, Any] = field(default_factory=dict)
    """LangGraph `config["configurable"]` for every question (a question's own keys win)."""
    response_char_limit: int = 4000
    concurrency: int = 8
    timeout_s: float = 60.0
    grading_deadline_s: float | None = None
    """Seconds all graders of one question may take (None: the judge block's, or 300)."""
    repeats: int = 1
    """Trials per question (`repeats:`): each runs, is graded and stored on its own."""
    graders: list[GraderEntry] = field(default_factory=list)
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
        pointer = pointer_of(["targets", self.name, *parts])
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
            return self.factory
        key = "agent" if self.mode == "agent" else "chat_model"
        return load_object(self.factory, base_dir=self.base_dir, **self._where(key))

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

    def select_targets(self, names: list[str] | tuple[str, ...] = ()) -> list[TargetConfig]:
        """Targets by name (all when none named); an unknown name is a config error."""
        if not names:
            return list(self.targets.values())
        unknown = [n for n in names if n not in self.targets]
        if unknown:
            raise ConfigError(
                f"unknown target {unknown[0]!r}",
                file=str(self.path),
                key="/targets",
                hint=f"targets: {', '.join(self.targets) or '(none)'}",
            )
        return [self.targets[n] for n in names]


def find_config(path: str | Path | None = None) -> Path:
    """The config file to use: `path`, else `tracegrade.yaml` in the working directory."""
    candidate = Path(path) if path is not None else Path(DEFAULT_CONFIG)
    if not candidate.is_file():
        raise ConfigError(
            "config file not found",
            file=str(candidate),
            hint="pass --config PATH or create tracegrade.yaml",
        )
    return candidate


def _resolve(base: Path, value: str) -> Path:
    p = Path(value).expanduser()
    # normpath, not resolve: `examples/../runs` reads as `runs`, symlinks stay as written
    return Path(os.path.normpath(p if p.is_absolute() else base / p))


def _ref_file(ref: str) -> str | None:
    """The file part of a `file.py:attr` reference, None for `module:attr`."""
    target, _, _ = ref.rpartition(":")
    return target if is_file_reference(target) else None


def _non_finite(value: Any, parts: list[Any]) -> list[list[Any]]:
    """Where a number is NaN or infinite: it compares false with everything, so a gate holding
    one could never fail (and JSON cannot carry it)."""
    if isinstance(value, float) and not math.isfinite(value):
        return [parts]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _non_finite(v, [*parts, k])]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _non_finite(v, [*parts, i])]
    return []


def _semantic_problems(doc: Document) -> list[Problem]:
    data = doc.data
    base = doc.path.parent
    problems: list[Problem] = []

    def at(parts: list[Any], message: str, hint: str | None = None) -> None:
        problems.append(problem_at(doc, pointer_of(parts), message, hint))

    for parts in _non_finite(data, []):
        at(parts, "must be a finite number (NaN and infinity compare false with every score)")

    for key in ("rubrics",):
        if isinstance(data.get(key), str) and not _resolve(base, data[key]).is_dir():
            at([key], f"directory not found: {_resolve(base, data[key])}")
    redaction = data.get("redaction")
    patterns = redaction.get("patterns") if isinstance(redaction, dict) else None
    for i, pattern in enumerate(patterns if isinstance(patterns, list) else []):
        try:
            compile_pattern(pattern)
        except ValueError as exc:
            at(["redaction", "patterns", i], f"pattern {pattern!r} does not compile: {exc}")
    telemetry = data.get("telemetry")
    endpoint = telemetry.get("otlp_endpoint") if isinstance(telemetry, dict) else None
    if isinstance(endpoint, str) and (why := endpoint_problem(endpoint)):
        at(["telemetry", "otlp_endpoint"], why, f"http://{endpoint.split('://')[-1]}")
    judge = data.get("judge")
    base_url = judge.get("base_url") if isinstance(judge, dict) else None
    if isinstance(base_url, str) and (why := endpoint_problem(base_url)):
        at(["judge", "base_url"], why, f"http://{base_url.split('://')[-1]}")
    if isinstance(judge, dict):
        installed = _provider_names()
        if isinstance(judge.get("provider"), str) and judge["provider"] not in installed:
            at(
                ["judge", "provider"],
                f"unknown judge provider {judge['provider']!r}",
                f"installed providers: {', '.join(sorted(installed))} (a plugin registers "
                "through the entry-point group tracegrade.providers)",
            )
        if judge.get("provider") == "langchain" and not judge.get("chat_model"):
            at(["judge"], "provider 'langchain' needs `chat_model: module:attr`")
        if judge.get("provider") == "openai-compatible":
            for required in ("base_url", "model"):
                if not judge.get(required):
                    at(["judge"], f"provider 'openai-compatible' needs `{required}`")
    for name, target in (data.get("targets") or {}).items():
        if not isinstance(target, dict):
            continue
        kinds = [k for k in ("agent", "chat_model") if k in target]
        if len(kinds) != 1:
            at(["targets", name], "a target names exactly one of `agent` or `chat_model`")
        if "chat_model" in target and "environment" in target:
            at(
                ["targets", name, "environment"],
                "`environment` needs an agent target (chat mode has no tools)",
            )
        for key in ("agent", "chat_model", "environment"):
            ref = target.get(key)
            if (
                isinstance(ref, str)
                and (file := _ref_file(ref))
                and (problem := not_a_file(_resolve(base, file)))
            ):
                at(["targets", name, key], f"{problem}: {_resolve(base, file)}")
        for key in ("dataset", "grading_module", "policy"):
            value = target.get(key)
            if key == "dataset" and isinstance(value, str):
                from .sources import split_reference

                scheme, value = split_reference(value)
                if scheme != "file":  # another source checks its own reference when read
                    continue
            if isinstance(value, str) and (problem := not_a_file(_resolve(base, value))):
                at(["targets", name, key], f"{problem}: {_resolve(base, value)}")
            elif key == "policy" and isinstance(value, str):
                try:  # read at grading as text: said now, by `validate` too, not mid-run
                    _resolve(base, value).read_text(encoding="utf-8")
                except UnicodeDecodeError as exc:
                    at(
                        ["targets", name, key],
                        f"not UTF-8 text (byte {exc.start}): {_resolve(base, value)}",
                    )
                except OSError as exc:
                    at(["targets", name, key], f"cannot read: {exc.strerror or exc}")
        # No graders at all is no error here: the goal judge scores such a target against
        # each question's goal, and the run's pre-flight rejects questions without one.
        graders = target.get("graders") or []
        seen: set[str] = set()
        for i, spec in enumerate(graders if isinstance(graders, list) else []):
            gid = (
                spec
                if isinstance(spec, str)
                else spec.get("id")
                if isinstance(spec, dict)
                else None
            )
            if isinstance(gid, str):
                if gid in seen:
                    at(["targets", name, "graders", i], f"grader {gid!r} attached twice")
                seen.add(gid)
    return problems


def _provider_names() -> set[str]:
    """The judge providers installed (entry-point group `tracegrade.providers`): the two
    built-ins and any plugin's."""
    from importlib import metadata

    return {ep.name for ep in metadata.entry_points(group="tracegrade.providers")}


def validate_config_file(path: str | Path) -> list[Problem]:
    """Every problem of a config file (schema, then files and references), for `tracegrade
    validate`. A file that cannot be parsed raises `ConfigError` instead."""
    doc = load_document(path, error_cls=ConfigError)
    problems = validate_document(doc, "config")
    if not problems and isinstance(doc.data, dict):
        problems.extend(_semantic_problems(doc))
    return problems


def parse_grader_entry(raw: Any, *, line: int | None = None, pointer: str = "") -> GraderEntry:
    """A `graders:` entry (an id, or a mapping with id, options and the `GraderSpec` keys) as
    a `GraderEntry`; a spec value the schema let through but the spec refuses is a
    `ConfigError` at `line`/`pointer`."""
    if isinstance(raw, str):
        return GraderEntry(id=raw, line=line, pointer=pointer)
    counts = {k: v for k, v in raw.items() if k in GraderSpec.model_fields}
    try:
        spec = GraderSpec(**counts)
    except ValueError as exc:
        raise ConfigError(f"grader {raw.get('id')!r}: {exc}", line=line, key=pointer) from None
    options = {k: v for k, v in raw.items() if k != "id" and k not in GraderSpec.model_fields}
    return GraderEntry(id=raw["id"], spec=spec, options=options, line=line, pointer=pointer)


def parse_gate(raw: dict[str, Any] | None) -> GateConfig:
    """A target's `gate:` block (absent: the defaults)."""
    raw = raw or {}
    return GateConfig(
        min_mean_composite=raw.get("min_mean_composite"),
        max_errored=int(raw.get("max_errored", 0)),
        zero_critical_failures=bool(raw.get("zero_critical_failures", True)),
        allow_review=bool(raw.get("allow_review", False)),
        min_pass_rate=raw.get("min_pass_rate", DEFAULT_MIN_PASS_RATE),
        max_cost=_optional_float(raw.get("max_cost")),
        max_cost_per_question=_optional_float(raw.get("max_cost_per_question")),
        max_tokens_per_question=(
            None
            if raw.get("max_tokens_per_question") is None
            else int(raw["max_tokens_per_question"])
        ),
        max_p95_latency_s=_optional_float(raw.get("max_p95_latency_s")),
    )


def _protocol(telemetry: dict[str, Any], path: Path) -> str | None:
    """The OTLP protocol when spans will be exported; an unsupported one from the environment is
    invalid input now, before anything runs."""
    if not (telemetry.get("otlp_endpoint") or exporting_from_env()):
        return telemetry.get("protocol")
    if not telemetry.get("otlp_endpoint") and (why := endpoint_problem(env_endpoint())):
        var = next(v for v in ENDPOINT_VARS if os.environ.get(v))
        raise ConfigError(
            f"{var}: {why}", file=str(path), key=var, hint="e.g. http://localhost:4318"
        )
    try:
        return resolve_protocol(telemetry.get("protocol"))
    except ConfigError as exc:
        exc.file = str(path)
        raise


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def load_config(path: str | Path | None = None) -> Config:
    """Load and validate a config file; `ConfigError` (exit 4) listing every problem."""
    return config_from_document(load_document(find_config(path), error_cls=ConfigError))


def config_from_document(doc: Document) -> Config:
    """A `Config` from a parsed config document (a file's, or one built in code: `evaluate()`
    hands its mapping here as a `Document`), validated exactly as a file is: the schema, then
    what a schema cannot say. Relative paths resolve against the document's directory."""
    path = doc.path
    problems = validate_document(doc, "config")
    if not problems:
        problems = _semantic_problems(doc)
    raise_problems(problems, ConfigError)
    data: dict[str, Any] = doc.data
    base = path.resolve().parent
    defaults = {**DEFAULTS, **(data.get("defaults") or {})}
    telemetry_raw = data.get("telemetry") or {}
    config = Config(
        path=path,
        base_dir=base,
        runs_dir=_resolve(base, data.get("runs_dir", "runs")),
        rubrics=_resolve(base, data["rubrics"]) if data.get("rubrics") else None,
        judge=dict(data["judge"]) if data.get("judge") else None,
        judge_panels=dict(data.get("judge_panels") or {}),
        telemetry=TelemetryConfig(
            otlp_endpoint=telemetry_raw.get("otlp_endpoint"),
            otlp_headers=dict(telemetry_raw.get("otlp_headers") or {}),
            trace_file=bool(telemetry_raw.get("trace_file", True)),
            project=telemetry_raw.get("project") or base.name or None,
            protocol=_protocol(telemetry_raw, path),
            capture_messages=bool(telemetry_raw.get("capture_messages", False)),
            message_chars=int(telemetry_raw.get("message_chars", 4096)),
        ),
        redaction=RedactionPolicy.from_config(data.get("redaction")),
        data=data,
        workers=int(data.get("workers", 1)),
        executor=str(data.get("executor", "local")),
        ray_address=(data.get("ray") or {}).get("address"),
        pricing=PriceTable.build(
            (data.get("pricing") or {}).get("models"),
            currency=str((data.get("pricing") or {}).get("currency", "USD")),
        ),
        dataset_store=_resolve(base, data.get("dataset_store", "datasets.sqlite")),
    )
    # The console prints log lines and errors of the run this config drives: its policy there.
    use_console_policy(config.redaction)
    for name, raw in data["targets"].items():
        dataset = _dataset_of(raw["dataset"], config, doc, name)
        module = raw.get("grading_module")
        grading_module = _resolve(base, module) if module else None
        automatic = False
        if module is None and (dataset.parent / "graders.py").is_file():
            grading_module, automatic = dataset.parent / "graders.py", True
        own = pointer_of(["targets", name])
        line = doc.line_of(own)
        lines = {p: n for p, n in doc.lines.items() if p == own or p.startswith(own + "/")}
        config.targets[name] = TargetConfig(
            name=name,
            mode="agent" if "agent" in raw else "chat",
            factory=raw.get("agent") or raw["chat_model"],
            dataset=dataset,
            environment=raw.get("environment"),
            grading_module=grading_module,
            grading_module_auto=automatic,
            policy=_resolve(base, raw["policy"]) if raw.get("policy") else None,
            system_prompt=raw.get("system_prompt"),
            configurable=dict(raw.get("configurable") or {}),
            response_char_limit=int(
                raw.get("response_char_limit", defaults["response_char_limit"])
            ),
            concurrency=int(raw.get("concurrency", defaults["concurrency"])),
            timeout_s=float(raw.get("timeout_s", defaults["timeout_s"])),
            grading_deadline_s=_optional_float(
                raw.get("grading_deadline_s", defaults.get("grading_deadline_s"))
            ),
            repeats=int(raw.get("repeats", defaults["repeats"])),
            graders=[
                parse_grader_entry(
                    g,
                    line=doc.line_of(pointer_of(["targets", name, "graders", i])),
                    pointer=pointer_of(["targets", name, "graders", i]),
                )
                for i, g in enumerate(raw.get("graders") or [])
            ],
            gate=parse_gate(raw.get("gate")),
            base_dir=base,
            config_file=str(path),
            line=line,
            raw=dict(raw),
            lines=lines,
        )
    return config


def _dataset_of(reference: str, config: Config, doc: Document, target: str) -> Path:
    """The dataset file a target's `dataset:` names, through its source plugin (a plain path
    is `file:`), validated whole; an error names the config's line when the source's own
    error has no file."""
    from ..errors import DatasetError
    from .sources import resolve_dataset, split_reference

    scheme, what = split_reference(reference)
    if scheme == "file":  # the common case, checked by the file source when the run reads it
        return _resolve(config.base_dir, what)
    pointer = pointer_of(["targets", target, "dataset"])
    try:
        return resolve_dataset(reference, base_dir=config.base_dir, store_path=config.dataset_store)
    except DatasetError as exc:
        if exc.file is None:
            exc.file, exc.line, exc.key = str(config.path), doc.line_of(pointer), pointer
        raise
