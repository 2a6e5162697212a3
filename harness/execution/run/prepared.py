"""The typed prepared run: what `prepare` turns the config into, once.

Nothing below the lifecycle's entry points takes the whole `Config`: the executors, the
services, the telemetry, the pytest session and re-grading read a `RunSettings` (the
run-wide settings: paths, judge, redaction, pricing, telemetry, the executor) and each
target's `PreparedTarget` (its target, selected questions, graders and plan). A new run's
`PreparedRun` holds both with its directory and manifest (`prepare.prepare_run`); a stored
run's, what its directory recorded (`reopen.prepare_resume`, `reopen.prepare_regrade`)."""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import ConfigError
from ...inputs.config import Config, TargetConfig, TelemetryConfig
from ...redaction import RedactionPolicy
from ...rundir.directory import RunDirectory
from ...rundir.manifest import RunManifest

if TYPE_CHECKING:  # the runner imports LangChain's pieces; re-grading never needs them
    from ...cost.pricing import PriceTable
    from ...graders.base import GraderServices
    from ..question.grading import AttachedGrader
    from ..question.runner import TargetPlan

__all__ = ["ExecutorSettings", "PreparedRun", "PreparedTarget", "RunSettings"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutorSettings:
    """Where a run's questions run: `executor:` ("local" or "ray"), `workers:` (processes per
    target), `ray_address:`; the command line's `--executor` / `--workers` already applied."""

    kind: str = "local"
    workers: int = 1
    ray_address: str | None = None

    @classmethod
    def of(cls, config: Config) -> ExecutorSettings:
        return cls(kind=config.executor, workers=config.workers, ray_address=config.ray_address)

    def with_options(self, *, executor: str | None, workers: int | None) -> ExecutorSettings:
        """These settings with the command line's `--executor` / `--workers` (None: as set)."""
        return ExecutorSettings(
            kind=executor or self.kind,
            workers=workers or self.workers,
            ray_address=self.ray_address,
        )

    def refuse_unsendable(self, targets: Iterable[TargetConfig]) -> None:
        """Worker processes get each target as the run prepared it, pickled: a target built in
        code whose agent factory (or another part) is a lambda or a nested function cannot go,
        and would fail the run with a pickling traceback once it started. Refused here, before
        the run directory exists, as invalid input (exit 4) naming the target and the part.
        Ray actors take their part by cloudpickle, which carries such functions by value."""
        if self.kind == "ray" or self.workers <= 1:
            return
        for target in targets:
            if target.concurrency <= 1:  # one question at a time: no worker process is started
                continue
            problem = _unpicklable(target)
            if problem is None:
                continue
            key, value, exc = problem
            part = _PARTS.get(key, f"`{key}`")
            if key == "factory" and target.mode != "agent":
                part = "chat model"
            raise ConfigError(
                f"target {target.name!r}: its {part} {value!r} cannot be sent to the "
                f"{self.workers} worker processes the run asked for (--workers): each gets "
                f"the target pickled, and it does not pickle ({type(exc).__name__}: {exc})",
                key=f"targets.{target.name}.{key}",
                hint="a lambda or a function defined inside another cannot be pickled: pass "
                "a function defined at a module's top level, or name it `file.py:name` in a "
                "config; or run with --workers 1",
            )


_PARTS = {"factory": "agent factory", "environment": "environment factory"}


def _unpicklable(target: TargetConfig) -> tuple[str, Any, Exception] | None:
    """(field, value, why) of the first field of `target` that does not pickle; None when the
    whole target pickles."""
    try:
        pickle.dumps(target)
        return None
    except Exception as whole:
        for item in fields(target):
            value = getattr(target, item.name)
            try:
                pickle.dumps(value)
            except Exception as exc:
                return item.name, value, exc
        return "target", target, whole


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSettings:
    """What a run reads of its config besides its targets, typed and frozen
    (`RunSettings.of(config)`): what the services, the telemetry, the executors, the pytest
    session and re-grading take instead of the config."""

    config_path: Path
    """The config file (what errors about the config name)."""
    config_sha256: str
    """What the config says, whatever its path (`Config.content_sha256`: what a resume pins)."""
    base_dir: Path
    runs_dir: Path
    redaction: RedactionPolicy
    judge: dict[str, Any] | None
    judge_panels: dict[str, Any]
    rubrics: Path | None
    pricing: PriceTable
    telemetry: TelemetryConfig
    executor: ExecutorSettings

    @classmethod
    def of(cls, config: Config) -> RunSettings:
        return cls(
            config_path=config.path,
            config_sha256=config.content_sha256,
            base_dir=config.base_dir,
            runs_dir=config.runs_dir,
            redaction=config.redaction,
            judge=config.judge,
            judge_panels=config.judge_panels,
            rubrics=config.rubrics,
            pricing=config.pricing,
            telemetry=config.telemetry,
            executor=ExecutorSettings.of(config),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedTarget:
    """One target of a prepared run: its config entry, its graders and, when the selection
    held questions of it, its plan (the questions of this run's shard, its agent loaded)."""

    target: TargetConfig
    attached: tuple[AttachedGrader, ...]
    plan: TargetPlan | None
    """None when the selection matched no question of the target."""

    @property
    def name(self) -> str:
        return self.target.name


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedRun:
    """A run ready to go: a new one with every input checked, its directory created and its
    identity written (`prepare.prepare_run`), or a stored one prepared again from what it
    recorded (`reopen`); no question asked yet."""

    run_id: str
    directory: RunDirectory
    """The run's directory (its manifest written)."""
    manifest: RunManifest
    """The manifest written (`identity.json`)."""
    settings: RunSettings
    services: GraderServices
    """The grader services the run grades with (judge, cache, rubrics, prices)."""
    entries: tuple[PreparedTarget, ...]
    """The selected targets, in config order (a stored run's: in the order it recorded)."""
    notes: tuple[str, ...] = ()

    @property
    def run_dir(self) -> Path:
        return self.directory.path

    @property
    def targets(self) -> list[TargetConfig]:
        """The selected targets' config entries, in config order."""
        return [e.target for e in self.entries]

    @property
    def plans(self) -> dict[str, TargetPlan]:
        """Each target's plan over its selected questions, by name (targets without any left
        out)."""
        return {e.name: e.plan for e in self.entries if e.plan is not None}

    @property
    def attached(self) -> dict[str, list[AttachedGrader]]:
        """Each target's graders, by name."""
        return {e.name: list(e.attached) for e in self.entries}

    @property
    def total(self) -> int:
        """Question runs over every target: its selected questions times its repeats."""
        return sum(plan.work_count() for plan in self.plans.values())
