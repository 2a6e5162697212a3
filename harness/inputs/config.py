"""The run config file (`tracegrade.yaml`): loading, validation and object references.

Validated against `schema/config.schema.json` through `tracegrade.inputs.sourcefile`, then checked for
what a schema cannot say (files that must exist, exactly one of `agent`/`chat_model`), every
problem naming file, line and key. Relative paths resolve against the config file's directory.

Object references are `path/to/file.py:attr` (loaded by file path under a private module name,
never as `agents.*`: the openai-agents package installs a top-level `agents` module too) or
`package.module:attr` (imported normally).
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
from typing import Any

from ..cost.pricing import PriceTable
from ..errors import ConfigError
from ..otel.otlp import (
    ENDPOINT_VARS,
    endpoint_problem,
    env_endpoint,
    exporting_from_env,
    resolve_protocol,
)
from ..records import GraderSpec
from ..redaction import RedactionPolicy, compile_pattern, use_console_policy
from ..usercode.loading import is_file_reference, load_object
from .config_model import (
    DEFAULT_CONFIG,
    DEFAULT_MIN_PASS_RATE,
    DEFAULTS,
    CassetteSettings,
    Config,
    GateConfig,
    GraderEntry,
    TargetConfig,
    TelemetryConfig,
)
from .files import missing_file_hint, not_a_file
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


def find_config(path: str | Path | None = None) -> Path:
    """The config file to use: `path`, else `tracegrade.yaml` in the working directory."""
    candidate = Path(path) if path is not None else Path(DEFAULT_CONFIG)
    if not candidate.is_file():
        raise ConfigError(
            (not_a_file(candidate) if candidate.exists() else None) or "config file not found",
            file=str(candidate),
            hint=missing_file_hint(candidate) or "pass --config PATH or create tracegrade.yaml",
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
                missing = _resolve(base, file)
                at(["targets", name, key], f"{problem}: {missing}", missing_file_hint(missing))
        for key in ("dataset", "grading_module", "policy"):
            value = target.get(key)
            if key == "dataset" and isinstance(value, str):
                from .sources import split_reference

                scheme, value = split_reference(value)
                if scheme != "file":  # another source checks its own reference when read
                    continue
            if isinstance(value, str) and (problem := not_a_file(_resolve(base, value))):
                missing = _resolve(base, value)
                at(["targets", name, key], f"{problem}: {missing}", missing_file_hint(missing))
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


def _tool_overrides(raw: Any, doc: Document, target: str, path: Path) -> dict[str, Any]:
    """A target's `tools:` as `ToolOverride`s; a contradictory one (fail and returns) is
    invalid input at its line (the schema checked the shape)."""
    from pydantic import ValidationError

    from ..world import ToolOverride

    out = {}
    for name, override in (raw or {}).items():
        try:
            out[str(name)] = ToolOverride.model_validate(override)
        except ValidationError as exc:
            pointer = pointer_of(["targets", target, "tools", name])
            message = "; ".join(
                str(e.get("msg", "")).removeprefix("Value error, ") for e in exc.errors()
            )
            raise ConfigError(
                f"tools: {name}: {message}", file=str(path), line=doc.line_of(pointer), key=pointer
            ) from None
    return out


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
            cassettes=_cassettes(base, raw.get("cassettes")),
            configurable=dict(raw.get("configurable") or {}),
            tools=_tool_overrides(raw.get("tools"), doc, name, path),
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
            unchecked=list(raw.get("unchecked") or []),
            gate=parse_gate(raw.get("gate")),
            base_dir=base,
            config_file=str(path),
            line=line,
            raw=dict(raw),
            lines=lines,
        )
    return _expand_variants(config, doc)


def _cassettes(base: Path, raw: dict[str, Any] | None) -> CassetteSettings | None:
    """A target's `cassettes:` block (schema-checked already); None when absent."""
    if not raw:
        return None
    return CassetteSettings(
        dir=_resolve(base, raw["dir"]),
        mode=str(raw.get("mode", "none")),
        record_tools=tuple(raw.get("record_tools") or ()),
    )


def with_cassettes(
    config: Config, *, directory: str | Path | None = None, mode: str | None = None
) -> Config:
    """`config` with the command line's cassettes (`--cassettes DIR`, `--record-mode MODE`)
    laid over every target's `cassettes:`; a mode with no folder anywhere is invalid input."""
    if directory is None and mode is None:
        return config
    for name, target in config.targets.items():
        own = target.cassettes
        if directory is None and own is None:
            continue
        config.targets[name] = dataclasses.replace(
            target,
            cassettes=CassetteSettings(
                dir=Path(directory) if directory is not None else own.dir,  # type: ignore[union-attr]
                mode=mode or (own.mode if own is not None else "none"),
                record_tools=own.record_tools if own is not None else (),
            ),
        )
    if not any(t.cassettes is not None for t in config.targets.values()):
        raise ConfigError(
            "--record-mode needs cassettes: give --cassettes DIR, or a target's `cassettes:`",
            key="--record-mode",
        )
    return config


def _expand_variants(config: Config, doc: Document) -> Config:
    """Each target with `variants:` replaced by one target per variant, `<target>.<variant>`,
    its factory called with the variant's keyword arguments."""
    for name, target in list(config.targets.items()):
        variants = target.raw.get("variants")
        if not variants:
            continue
        if target.mode != "agent":
            raise ConfigError(
                "variants: are factory keyword arguments of an agent target",
                **target.where("variants"),
            )
        del config.targets[name]
        for variant, args in variants.items():
            full = f"{name}.{variant}"
            if full in config.targets or full in doc.data.get("targets", {}):
                raise ConfigError(
                    f"variant {full!r} is also a target's name", **target.where("variants", variant)
                )
            config.targets[full] = dataclasses.replace(
                target,
                name=full,
                variant=str(variant),
                variant_of=name,
                factory_args=dict(args or {}),
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
