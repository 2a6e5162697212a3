"""The notice a run ends with when the safe defaults decided its verdict for a config that
knew the old ones: a grader that observes actions, unsaid in the config, became must-pass at
its full score, and the gate's `min_pass_rate` became 1 (docs/running.md, "Safe defaults").
A config that never ran under the old defaults gets no notice: its failure is a failure."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ...errors import InputError
from ...graders.base import gates_by_default
from ...records import GraderSpec
from ...rundir.manifest import RunManifest

if TYPE_CHECKING:
    from ...graders.registry import GraderRegistry
    from ...inputs.config import TargetConfig
    from ...rundir.outcome import TargetResult
    from ...verdicts.scoring import GraderVerdict

__all__ = ["changed_defaults_notice"]


def changed_defaults_notice(
    target: TargetConfig,
    result: TargetResult,
    *,
    registry: GraderRegistry | None = None,
    earlier: Callable[[], Iterable[RunManifest]] = tuple,
) -> str | None:
    """One line when the safe defaults decided this target's verdict: it failed, it leaves to
    a default what changed (a grader that observes actions became must-pass at its full score;
    the gate's `min_pass_rate` became 1), this config ran under the old defaults before (one
    of the `earlier()` run manifests recorded such a grader of this target, unsaid in its
    config, as not must-pass), and under the old defaults it would have passed. Names what it
    relies on and how to choose; None otherwise: a verdict they did not change, or a config
    that never knew the old defaults (a new user's copy of the README's), needs no notice.
    `result` is the target's `TargetResult`."""
    from dataclasses import replace

    from ...verdicts.gate import evaluate_gate

    if result.verdict.exit_code != 2:
        return None
    if registry is None:
        from ...graders.registry import load_registry

        registry = load_registry()
    relied = []
    for entry in target.graders:
        try:
            cls = registry.get(entry.id)
        except InputError:  # an unknown id is the pre-flight's error to report, not ours
            continue
        written = entry.spec.model_fields_set
        if "must_pass" not in written and gates_by_default(cls):
            relied.append((entry.id, "threshold" not in written))
    pass_rate_default = "min_pass_rate" not in (target.raw.get("gate") or {})
    if not relied and not pass_rate_default:
        return None
    by_id = dict(relied)

    def old_spec(g: GraderVerdict) -> GraderVerdict:
        values = {**g.spec.model_dump(), "must_pass": False}
        if by_id[g.grader_id]:
            values["threshold"] = 0.0
        return g.model_copy(update={"spec": GraderSpec(**values)})

    old_questions = [
        q.model_copy(
            update={"graders": [old_spec(g) if g.grader_id in by_id else g for g in q.graders]}
        )
        for q in result.questions
    ]
    old_gate = replace(target.gate, min_pass_rate=None) if pass_rate_default else target.gate
    must_pass = sorted({g.grader_id for q in old_questions for g in q.graders if g.must_pass})
    if evaluate_gate(old_questions, old_gate, must_pass=must_pass).exit_code != 0:
        return None
    if not _ran_under_old_defaults(target.name, set(by_id), earlier()):
        return None
    parts = []
    if relied:
        names = " and ".join(gid for gid, _ in relied)
        parts.append(f"{names} must pass at full score (they observe actions)")
    if pass_rate_default:
        parts.append("the gate fails on any failing question (min_pass_rate 1)")
    return (
        f"notice: target {target.name} failed under the safe defaults, which its config leaves "
        f"unsaid and which it would have passed before: {'; '.join(parts)}. Write must_pass, "
        "threshold or gate.min_pass_rate to choose (docs/running.md, Safe defaults)."
    )


def _ran_under_old_defaults(
    target: str, relied: set[str], manifests: Iterable[RunManifest]
) -> bool:
    """Whether one of the earlier runs graded `target` with a grader it leaves to the default
    (`relied`) recorded as not must-pass: the old default, which this config then knew."""
    for manifest in manifests:
        recorded = manifest.targets[target].graders if target in manifest.targets else ()
        for spec in recorded:
            if spec.id in relied and spec.observes_actions and not spec.must_pass:
                return True
    return False
