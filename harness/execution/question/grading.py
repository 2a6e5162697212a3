"""Attaching graders to a target and grading one question with them.

Shared by the runner (fresh runs) and `tracegrade grade` (re-grades): graders come from the
config's `graders:` list (registry ids with options) and from a grading module (`graders.py`
beside the dataset, or the one a target names; seed 003). Each attached grader carries a spec
(id, options, declared scale, code hash, where it came from) that the run identity records, so
a re-grade can rebuild exactly the graders a run used.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import ConfigError, RubricError
from ...graders.base import Attachment, Grader, GraderServices, with_safe_defaults
from ...inputs.config import GraderEntry
from ...judging.breaker import DEFAULT_BREAKER_FAILURES, CircuitBreaker
from ...records import GradeResult, GraderSpec
from ...redaction import DEFAULT_POLICY, RedactionPolicy
from ...rundir.identity import grader_code_hash
from ...rundir.manifest import GraderRecord
from ...usercode.abandon import in_daemon_thread
from ...verdicts.scoring import GraderVerdict, aggregate_samples

if TYPE_CHECKING:
    from ...graders.registry import GraderRegistry
    from ...graders.rubrics import RubricStore
    from ...inputs.config import TargetConfig
from .errortext import (
    MAX_ERROR_CHARS,
    bounded,
    describe_agent_error,
    traceback_text,
)

__all__ = [
    "AttachedGrader",
    "agrade_question",
    "attach_from_specs",
    "attach_graders",
    "build_services",
    "criteria_with_rubric",
    "grading_deadline",
    "target_policy",
]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class AttachedGrader:
    """A grader instance attached to a target, with how it counts and where it came from."""

    attachment: Attachment
    spec: GraderRecord
    """What the run's manifest records of it: id, source, options, how it counts, declared
    scale, code hash, module path."""
    deadline_misses: CircuitBreaker = field(
        default_factory=lambda: CircuitBreaker(DEFAULT_BREAKER_FAILURES)
    )
    """The judges' breaker, for the grading deadline: after that many consecutive questions
    on which this grader missed it, the rest of its work errors at once (a grader that never
    returns would otherwise cost its whole deadline on every question)."""

    @property
    def grader(self) -> Grader:
        return self.attachment.grader

    @property
    def self_sampling(self) -> bool:
        """LLM graders take `samples` as an option and sample themselves (independent cache
        keys per sample); other graders are simply run N times."""
        return bool(getattr(self.grader, "llm", False))


def build_services(
    *,
    judge: Mapping[str, Any] | None,
    base_dir: Path,
    runs_dir: Path,
    rubrics: Path | None,
    use_cache: bool = True,
    workdir: Path | None = None,
    redaction: RedactionPolicy = DEFAULT_POLICY,
    judge_panels: Mapping[str, Any] | None = None,
) -> GraderServices:
    """The services every grader gets: the judge provider (None when no `judge:` block: judges
    then error, exit 3), the judge cache shared by runs and re-grades, the rubric store."""
    provider = None
    cache = None
    settings: dict[str, object] = {"use_cache": use_cache}
    if judge:
        from ...judging import JudgeCache, build_provider
        from ...judging.redacting import RedactingProvider

        # Wrapped once here, so every judge path sends and keeps only redacted text.
        provider = RedactingProvider(build_provider(judge, base_dir=base_dir), redaction)
        settings["templates"] = dict(judge.get("templates") or {})
        if judge.get("judge_response_char_limit") is not None:
            settings["judge_response_char_limit"] = judge["judge_response_char_limit"]
        if judge.get("grading_deadline_s"):
            settings["grading_deadline_s"] = float(judge["grading_deadline_s"])
        use_cache = use_cache and bool(judge.get("cache", True))
        settings["use_cache"] = use_cache
        if use_cache:
            cache = JudgeCache(JudgeCache.default_path(runs_dir))
    store = None
    if rubrics is not None:
        from ...graders.rubrics import RubricStore

        store = RubricStore(rubrics)
    # Every grader of a question, code graders too, is cut at the grading deadline.
    from ...judging import DEFAULT_GRADING_DEADLINE_S

    settings.setdefault("grading_deadline_s", DEFAULT_GRADING_DEADLINE_S)
    return GraderServices(
        judge_provider=provider,
        judge_settings=settings,
        judge_cache=cache,
        rubrics=store,
        workdir=workdir,
        redaction=redaction,
        judge_block=dict(judge) if judge else None,
        judge_panels=dict(judge_panels or {}),
        base_dir=base_dir,
    )


def _spec_of(
    att: Attachment, *, source: str, options: Mapping[str, object], module: str | None
) -> GraderRecord:
    g = att.grader
    return GraderRecord.model_validate(
        {
            "id": g.id,
            "source": source,
            "module": module,
            "options": dict(options),
            **att.spec.model_dump(),
            "min_score": float(g.min_score),
            "max_score": float(g.max_score),
            "binary": bool(getattr(g, "binary", False)),
            "llm": bool(getattr(g, "llm", False)),
            "observes_actions": bool(getattr(g, "observes_actions", False)),
            "sees_tool_calls": bool(getattr(g, "sees_tool_calls", False)),
            "code_sha256": grader_code_hash(g),
        }
    )


def _registry_attachment(
    registry: GraderRegistry, entry: GraderEntry, services: GraderServices
) -> AttachedGrader:
    options = dict(entry.options)
    cls = registry.get(entry.id)
    samples = entry.spec.samples
    build_options = (
        {**options, "samples": samples} if getattr(cls, "llm", False) and samples > 1 else options
    )
    grader = registry.create(entry.id, services=services, **build_options)
    att = Attachment(grader, spec=with_safe_defaults(grader, entry.spec))
    return AttachedGrader(att, _spec_of(att, source="registry", options=options, module=None))


def _module_attachments(
    path: Path, services: GraderServices, *, module_label: str
) -> list[AttachedGrader]:
    from ...graders.modules import load_grading_module

    out = []
    for att in load_grading_module(path, services=services):
        att.grader.services = services
        out.append(
            AttachedGrader(att, _spec_of(att, source="module", options={}, module=module_label))
        )
    return out


def _check_pass_bar(att: Attachment, entry: GraderEntry, config_file: str | None) -> None:
    """A gate that can never decide is invalid input (`GraderSpec.gate_problem`): must-pass on
    a scalar grader whose threshold is at the bottom of its scale (seed 003's default 0 passes
    any score), or a threshold above the scale's top (nothing passes)."""
    g = att.grader
    problem = att.spec.gate_problem(
        grader_id=g.id,
        min_score=float(g.min_score),
        max_score=float(g.max_score),
        binary=bool(getattr(g, "binary", False)),
    )
    if problem is None:
        return
    message, key, hint = problem
    if key == "must_pass":
        hint = getattr(g, "threshold_hint", None) or hint
    raise ConfigError(
        message,
        file=config_file,
        line=entry.line,
        key=f"{entry.pointer or '/graders'}/{key}",
        hint=hint,
    )


def attach_graders(
    specs: Sequence[GraderEntry | GraderRecord],
    *,
    grading_module: Path | None,
    services: GraderServices,
    registry: GraderRegistry | None = None,
    module_label: str | None = None,
    config_file: str | None = None,
) -> list[AttachedGrader]:
    """Attach the config's grader entries (`GraderEntry`, or the `GraderRecord`s of a run's
    manifest) then the grading module's graders. An unknown id, a bad option or a gate that can never fail (must-pass
    on a scalar grader without a threshold) is invalid input (exit 4); `config_file` names
    the file in those errors."""
    if registry is None:
        from ...graders.registry import load_registry

        registry = load_registry()
    attached = []
    for spec in specs:
        entry = spec if isinstance(spec, GraderEntry) else _entry_of(spec)
        try:
            attached.append(_registry_attachment(registry, entry, services))
        except ConfigError:
            raise
        except TypeError as exc:  # an option the grader's constructor does not take
            raise ConfigError(f"grader {entry.id!r}: {exc}", key="graders") from exc
        _check_pass_bar(attached[-1].attachment, entry, config_file)
    if grading_module is not None:
        label = module_label or str(grading_module)
        attached.extend(_module_attachments(grading_module, services, module_label=label))
    ids = [a.grader.id for a in attached]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ConfigError(
            f"grader {dupes[0]!r} attached twice (config and grading module?)", key="graders"
        )
    return attached


def _entry_of(stored: GraderRecord) -> GraderEntry:
    """A grader as a run's manifest recorded it (`_spec_of`) as a config entry again."""
    values = {k: getattr(stored, k, None) for k in GraderSpec.model_fields}
    counts = {k: v for k, v in values.items() if v is not None}
    return GraderEntry(id=stored.id, spec=GraderSpec(**counts), options=dict(stored.options))


def attach_from_specs(
    specs: Sequence[GraderRecord],
    *,
    run_dir: Path,
    services: GraderServices,
    registry: GraderRegistry | None = None,
) -> list[AttachedGrader]:
    """Rebuild the graders a run used from its identity snapshot: registry graders by id and
    stored options, module graders from the copy of the grading module in the run dir."""
    registry_specs = [s for s in specs if s.source == "registry"]
    modules = sorted({s.module for s in specs if s.source == "module" and s.module})
    attached = attach_graders(
        registry_specs, grading_module=None, services=services, registry=registry
    )
    for module in modules:
        path = run_dir / module
        if not path.is_file():
            raise ConfigError(
                f"the run's copy of its grading module is missing: {path}", file=str(path)
            )
        attached.extend(_module_attachments(path, services, module_label=module))
    for att in attached:
        stored = next((s for s in specs if s.id == att.grader.id), None)
        before, now = stored.code_sha256 if stored else None, att.spec.code_sha256
        if before and now and before != now:
            log.warning(
                "grader %s: its code changed since the run (sha256 %s -> %s)",
                att.grader.id,
                before[:12],
                now[:12],
            )
    return attached


def criteria_with_rubric(row: Mapping[str, object], rubrics: RubricStore | None) -> str | None:
    """The question's criteria with its rubric's check descriptions appended (seed 000); None
    when the question has no `rubric_ref` (the row's own criteria stand)."""
    ref = row.get("rubric_ref")
    if not ref:
        return None
    if rubrics is None:
        raise RubricError(
            f"question uses rubric_ref {ref!r} but the config names no `rubrics:` directory",
            question_id=str(row.get("id")),
            key="rubric_ref",
        )
    from ...graders.rubrics import criteria_text

    rubric = rubrics.resolve(str(ref))
    text = criteria_text(rubric)
    base = row.get("criteria")
    if isinstance(base, list | tuple):
        base = "\n".join(str(c) for c in base)
    return f"{base}\n\n{text}" if base else text


def grading_deadline(target: TargetConfig, services: GraderServices) -> float | None:
    """Seconds all graders of one question may take: the target's `grading_deadline_s`, else
    the judge block's, else the default."""
    own = getattr(target, "grading_deadline_s", None)
    return float(own) if own else services.judge_settings.get("grading_deadline_s")


def target_policy(target: TargetConfig) -> str | None:
    """The text of the target's `policy:` file (evidence for rubric judge checks), or None.
    Read once per file and modification time: every question of the target shares it."""
    path = getattr(target, "policy", None)
    if path is None:
        return None
    path = Path(path)
    try:
        return _read_policy(path, path.stat().st_mtime_ns)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read the target's policy file: {exc}",
            file=str(getattr(target, "config_file", "")) or None,
            key=f"/targets/{getattr(target, 'name', '?')}/policy",
        ) from None


@functools.lru_cache(maxsize=32)
def _read_policy(path: Path, _mtime_ns: int) -> str:
    return path.read_text(encoding="utf-8")


def _runs_inline(grader: Grader) -> bool:
    """A built-in grader with only a sync `grade`: it never suspends and never blocks, so it is
    called in place (no task, no thread, no loop turn). A sync grader of user code may block
    for ever: it runs in a daemon thread the grading deadline can abandon."""
    cls = type(grader)
    return cls.agrade is Grader.agrade and cls.__module__.startswith("tracegrade.")


async def _one(
    grader: Grader, input: str, response: str, context: Mapping[str, object]
) -> GradeResult:
    try:
        if type(grader).agrade is Grader.agrade and not _runs_inline(grader):
            result = await in_daemon_thread(
                lambda: grader.grade(input, response, context),
                name=f"tracegrade-grader-{grader.id}",
            )
        else:
            result = await grader.agrade(input, response, context)
    except Exception as exc:  # isolation point: a grader that raised errors its verdict only
        log.debug("grader %s raised:\n%s", grader.id, traceback_text(exc))
        return grader.result(None, f"grader raised {describe_agent_error(exc)}", True)
    if isinstance(result, GradeResult) and len(result.reason or "") > MAX_ERROR_CHARS:
        result = result.model_copy(update={"reason": bounded(result.reason)})
    problem = _unusable(result)
    if problem is not None:
        return grader.result(None, problem, True)
    return result


def _unusable(result: object) -> str | None:
    """Why a grader's own answer cannot be a score, or None when it can: a NaN, an infinity or
    a number outside the scale it declares is that grader's error on that question, never a
    score (one such number would lift or sink a whole mean)."""
    if not isinstance(result, GradeResult):
        return f"grader returned {type(result).__name__}, not a GradeResult"
    low, high = result.min_score, result.max_score
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        return f"grader declared the scale {low:g}-{high:g} (needs finite bounds, min below max)"
    score = result.score
    if score is None:
        return None
    if not math.isfinite(score):
        return f"grader returned score {score!r}: not a finite number"
    if not low <= score <= high:
        return f"grader returned score {score:g}, outside its declared scale {low:g}-{high:g}"
    return None


async def agrade_question(
    attached: Sequence[AttachedGrader],
    *,
    input: str,
    response: str,
    context: Mapping[str, object],
    deadline_s: float | None = None,
) -> list[GraderVerdict]:
    """Every attached grader on one answer (graders concurrently; a grader's own samples too),
    folded per grader into a GraderVerdict. Graders still running `deadline_s` after the
    concurrent ones started are cancelled and error, naming the deadline."""

    async def one_grader(a: AttachedGrader) -> GraderVerdict:
        n = 1 if a.self_sampling else a.attachment.spec.samples
        results = [await _one(a.grader, input, response, context) for _ in range(n)]
        score = aggregate_samples(
            results,
            spec=a.attachment.spec,
            binary=bool(getattr(a.grader, "binary", False)),
        )
        own = results[0].details.get("samples")
        if n == 1 and isinstance(own, list) and own:
            score.sample_scores = [float(s) if s is not None else None for s in own]
        return score

    # Built-in graders with only a sync `grade` never suspend: awaited in place, they skip a
    # task and a loop turn each. The rest (judges, user code) run concurrently, under the
    # deadline.
    scores: list[GraderVerdict | None] = [None] * len(attached)
    waiting = []
    for index, a in enumerate(attached):
        if _runs_inline(a.grader):
            scores[index] = await one_grader(a)
        elif deadline_s is not None and a.deadline_misses.is_open:
            scores[index] = _gave_up(a, deadline_s)
        else:
            waiting.append(index)
    if waiting:
        if deadline_s is None:
            done = await asyncio.gather(*(one_grader(attached[i]) for i in waiting))
        else:
            done = await _within_deadline(
                [attached[i] for i in waiting], one_grader, deadline_s=deadline_s
            )
        for index, score in zip(waiting, done, strict=True):
            scores[index] = score
    return [s for s in scores if s is not None]


async def _within_deadline(
    graders: Sequence[AttachedGrader],
    one_grader: Callable[[AttachedGrader], Awaitable[GraderVerdict]],
    *,
    deadline_s: float,
) -> list[GraderVerdict]:
    tasks = [asyncio.ensure_future(one_grader(a)) for a in graders]
    try:
        _, pending = await asyncio.wait(tasks, timeout=deadline_s)
    finally:
        for task in tasks:  # also when this question itself is cancelled
            if not task.done():
                task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
    out = []
    for a, task in zip(graders, tasks, strict=True):
        if task in pending:
            a.deadline_misses.failure(f"missed the grading deadline of {deadline_s:g}s")
            out.append(
                _error_verdict(
                    a,
                    f"grading did not finish within the question's grading deadline of "
                    f"{deadline_s:g}s (grading_deadline_s): abandoned",
                )
            )
        else:
            a.deadline_misses.success()
            out.append(task.result())
    return out


def _error_verdict(a: AttachedGrader, reason: str) -> GraderVerdict:
    error = a.grader.result(None, reason, True)
    binary = bool(getattr(a.grader, "binary", False))
    return aggregate_samples([error], spec=a.attachment.spec, binary=binary)


def _gave_up(a: AttachedGrader, deadline_s: float) -> GraderVerdict:
    """The error of a grader whose breaker opened: not run on this question."""
    return _error_verdict(
        a,
        f"not run: grader {a.grader.id} missed the grading deadline of {deadline_s:g}s on "
        f"{a.deadline_misses.opened_after} consecutive questions, which opened its circuit "
        "breaker; the rest of its work errors at once",
    )
