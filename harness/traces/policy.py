"""A trace policy: what every agent trace must respect whether or not a dataset question says
what it should have done. It grades the traces that pair with no question of the target's
dataset (production traffic nobody wrote a question for), with the graders that need no
expectation:

- `forbid`, `only`, `count`, `max_calls`: the trajectory vocabulary's constraints that name no
  expected call (`trajectory_grader`, must pass);
- `goal`: what a good run achieves (`goal_judge`, on the config's judge);
- `checks`: the record checks that need no expectation (`record_checks`, must pass: schema,
  offered, repeats, cycles, unhandled errors, calls after the answer, `max_steps`);
- `claims`: RE2 pattern -> tool, each claim of action backed by a call (`claims_grader`, must
  pass);
- `nodes`: the path through the graph (`nodes_grader`, must pass).

`checks` and `claims` attach their graders to the target, so they hold on the traces paired
with a question too.

It comes from a target's `trace_policy:` block (its `file:` naming a YAML or JSON file of the
same keys), then `--policy FILE`, then `--forbid`, `--max-calls` and `--goal` on the command line,
each adding to or replacing what came before (forbidden tools add up). Each unmatched trace
becomes its own question, `trace-<trace id>`, whose input is the trace's first user message:
stored with its run like any question, so `show`, `label` and `dataset promote` work on it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputError
from ..inputs.blocks.checks import checks_problems, claims_problems, nodes_problems
from ..inputs.blocks.trajectory import trajectory_problems
from ..inputs.config import Config, GraderEntry
from ..records import GraderSpec
from .dialects import AgentTrace

__all__ = ["POLICY_KEYS", "TracePolicy", "trace_policy", "with_policy"]

CONSTRAINTS = ("forbid", "only", "count", "max_calls")
EXTRAS = ("checks", "claims", "nodes")
POLICY_KEYS = (*CONSTRAINTS, "goal", *EXTRAS, "conversation", "file")
TRAJECTORY = "trajectory_grader"
GOAL = "goal_judge"
EXTRA_GRADERS = {"checks": "record_checks", "claims": "claims_grader", "nodes": "nodes_grader"}
_EXTRA_PROBLEMS = {"checks": checks_problems, "claims": claims_problems, "nodes": nodes_problems}
PREFIX = "trace-"
CONVERSATION_JUDGES = ("conversation_goal_judge", "repetition_judge", "escalation_judge")
"""`conversation: true` attaches all three (`tracegrade.graders.judges.conversation`)."""


@dataclass(frozen=True, slots=True)
class TracePolicy:
    trajectory: Mapping[str, Any] = field(default_factory=dict)
    goal: str | None = None
    sources: tuple[str, ...] = ()
    extras: Mapping[str, Any] = field(default_factory=dict)
    """`checks`, `claims`, `nodes` as the policy states them."""
    conversation: tuple[str, ...] = ()
    """The conversation judges attached (must pass) for the conversations graded."""

    def __bool__(self) -> bool:
        return (
            bool(self.trajectory)
            or self.goal is not None
            or bool(self.extras)
            or bool(self.conversation)
        )

    def question(self, trace: AgentTrace) -> Any:
        """The question an unmatched trace is graded as."""
        from ..inputs.dataset import Question

        text = (trace.user_message or "").strip() or f"(trace {trace.trace_id}: no user message)"
        return Question(
            id=f"{PREFIX}{trace.trace_id}",
            input=text,
            trajectory=dict(self.trajectory) or None,
            goal=self.goal,
            **{k: v for k, v in self.extras.items() if k != "claims"},
            tags=["trace-policy"],
        )

    def graders(self, present: Sequence[GraderEntry]) -> list[GraderEntry]:
        """The graders the policy needs that the target does not attach already."""
        ids = {g.id for g in present}
        out = []
        if self.trajectory and TRAJECTORY not in ids:
            out.append(GraderEntry(id=TRAJECTORY, spec=GraderSpec(must_pass=True)))
        if self.goal is not None and GOAL not in ids:
            out.append(GraderEntry(id=GOAL))
        for key, grader_id in EXTRA_GRADERS.items():
            if key in self.extras and grader_id not in ids:
                out.append(GraderEntry(id=grader_id, spec=GraderSpec(must_pass=True)))
        out.extend(
            GraderEntry(id=judge, spec=GraderSpec(must_pass=True))
            for judge in self.conversation
            if judge not in ids
        )
        return out

    def options(self) -> dict[str, dict[str, Any]]:
        """The options of the graders the policy attaches, by grader id."""
        out: dict[str, dict[str, Any]] = {}
        if self.goal is not None:
            out[GOAL] = {"goal": self.goal}
        checks = self.extras.get("checks")
        if isinstance(checks, Mapping):
            out["record_checks"] = dict(checks)
        if "claims" in self.extras:
            out["claims_grader"] = {"claims": dict(self.extras["claims"])}
        return out

    def note(self) -> str:
        parts = [f"{k} {v}" for k, v in self.trajectory.items()]
        if self.goal is not None:
            parts.append("a goal")
        parts += [f"{k} {v}" for k, v in self.extras.items()]
        if self.conversation:
            parts.append(f"conversations judged by {', '.join(self.conversation)}")
        return (
            f"trace policy ({', '.join(self.sources)}): {'; '.join(parts)}; traces that match "
            "no question are graded by it as questions trace-<trace id>"
        )


def _read_file(path: Path, key: str) -> dict[str, Any]:
    from ..inputs.sourcefile import load_document

    if not path.is_file():
        raise InputError("no such policy file", file=str(path), key=key)
    data = load_document(path).data
    if not isinstance(data, dict):
        raise InputError("a policy file is a mapping (forbid, max_calls, goal...)", file=str(path))
    return data


def _merge(into: dict[str, Any], raw: Mapping[str, Any], *, file: str, key: str) -> None:
    for name, value in raw.items():
        if name not in POLICY_KEYS or (name == "file" and key != "trace_policy"):
            raise InputError(
                f"unknown trace policy key {name!r}",
                file=file,
                key=f"{key}/{name}",
                hint=f"a trace policy has {', '.join(k for k in POLICY_KEYS if k != 'file')}",
            )
        if name == "forbid" and isinstance(value, list) and isinstance(into.get("forbid"), list):
            into["forbid"] = [*into["forbid"], *(v for v in value if v not in into["forbid"])]
        elif name in ("checks", "claims") and isinstance(value, Mapping):
            before = into.get(name)
            into[name] = {**(before if isinstance(before, Mapping) else {}), **value}
        elif name != "file":
            into[name] = value


def trace_policy(
    config: Config,
    target: str,
    *,
    policy_file: Path | None = None,
    forbid: Sequence[str] = (),
    max_calls: int | None = None,
    goal: str | None = None,
    checks: Mapping[str, Any] | bool | None = None,
    claims: Mapping[str, Any] | None = None,
) -> TracePolicy:
    """The target's trace policy with the command line's on top; exit 4 naming the file and
    key of a malformed one."""
    tc = config.select_targets([target])[0]
    merged: dict[str, Any] = {}
    sources = []
    block = tc.raw.get("trace_policy")
    where = f"/targets/{target}/trace_policy"
    if block:
        if not isinstance(block, dict):
            raise ConfigError("trace_policy must be a mapping", **tc.where("trace_policy"))
        if "file" in block:
            path = Path(str(block["file"]))
            path = path if path.is_absolute() else tc.base_dir / path
            _merge(merged, _read_file(path, f"{where}/file"), file=str(path), key="")
            sources.append(str(path))
        _merge(merged, block, file=str(config.path), key="trace_policy")
        sources.append(f"{config.path.name}: targets.{target}.trace_policy")
    if policy_file is not None:
        _merge(merged, _read_file(policy_file, "--policy"), file=str(policy_file), key="")
        sources.append(str(policy_file))
    flags: dict[str, Any] = {}
    if forbid:
        flags["forbid"] = list(forbid)
    if max_calls is not None:
        flags["max_calls"] = max_calls
    if goal is not None:
        flags["goal"] = goal
    if checks is not None and checks is not False:
        flags["checks"] = checks
    if claims:
        flags["claims"] = dict(claims)
    if flags:
        _merge(merged, flags, file="", key="")
        sources.append("the command line")
    goal_text = merged.pop("goal", None)
    if goal_text is not None and not (isinstance(goal_text, str) and goal_text.strip()):
        raise InputError("the trace policy's goal must be text", key="goal")
    extras = {k: merged[k] for k in EXTRAS if k in merged}
    for key, value in extras.items():
        problems = _EXTRA_PROBLEMS[key](value)
        if problems:
            pointer, message = problems[0]
            raise InputError(
                f"trace policy: {message}",
                file=sources[-1] if sources else None,
                key=f"trace_policy/{key}{pointer}",
            )
    trajectory = {k: merged[k] for k in CONSTRAINTS if k in merged}
    if trajectory:
        problems = trajectory_problems(trajectory)
        if problems:
            pointer, message = problems[0]
            raise InputError(
                f"trace policy: {message}",
                file=sources[-1] if sources else None,
                key=f"trace_policy{pointer}",
            )
    conversation = _conversation_judges(merged.get("conversation"), sources)
    return TracePolicy(trajectory, goal_text, tuple(sources), extras, conversation)


def _conversation_judges(value: Any, sources: list[str]) -> tuple[str, ...]:
    """`conversation:` as the judges it attaches: true for all of them, or a list of ids."""
    if value is None or value is False:
        return ()
    if value is True:
        return CONVERSATION_JUDGES
    unknown = (
        [v for v in value if v not in CONVERSATION_JUDGES]
        if isinstance(value, list) and value
        else [value]
    )
    if unknown:
        raise InputError(
            f"trace policy: conversation is true or a list of {', '.join(CONVERSATION_JUDGES)}"
            f" (got {unknown[0]!r})",
            file=sources[-1] if sources else None,
            key="trace_policy/conversation",
        )
    return tuple(dict.fromkeys(value))


def with_policy(config: Config, target: str, policy: TracePolicy) -> Config:
    """`config` with `target` also attaching the graders `policy` needs (the config file
    is untouched; the run's manifest records what was attached)."""
    if not policy:
        return config
    tc = config.select_targets([target])[0]
    extra = policy.graders(tc.graders)
    if not extra:
        return config
    options = policy.options()
    extra = [dataclasses.replace(g, options=options.get(g.id, g.options)) for g in extra]
    changed = dataclasses.replace(tc, graders=[*tc.graders, *extra])
    return dataclasses.replace(config, targets={**config.targets, target: changed})
