"""What a run is asked and what it produced: the `Selection` of questions (recorded so a resume
asks the same), each target's `TargetResult`, the `RunOutcome` the reports render and whose
`exit_code` the CLI returns (decided by `tracegrade.rundir.verdict`)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import ExitCode
from ..verdicts.gate import GateVerdict, combine_exit_codes
from ..verdicts.result import QuestionResult
from ..verdicts.scoring import GraderSummary
from .manifest import RunManifest, SelectionRecord

__all__ = ["RunOutcome", "Selection", "TargetResult", "new_run_id"]


@dataclass(frozen=True, slots=True)
class Selection:
    """Which questions a run asks (the CLI's filters), recorded so a resume asks the same."""

    targets: tuple[str, ...] = ()
    split: str | None = None
    bundles: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    limit: int | None = None
    repeats: int | None = None
    """Trials per question for every target (`--repeats`); None: each target's `repeats:`."""
    ids: tuple[str, ...] = ()
    """Question ids or glob patterns (`--id`); empty: every question."""
    shard: tuple[int, int] | None = None
    """(I, N): only the I-th of N deterministic shares of the selection (`--shard I/N`,
    `tracegrade.execution.run.shards`); None: all of it."""
    goal: str | None = None
    """`--goal TEXT`: every target is scored by the goal judge against this text alone (a
    question's own `goal` wins); None: each target's graders."""

    def record(self) -> SelectionRecord:
        """As the run's manifest records it (every filter written, unset ones empty)."""
        return SelectionRecord(
            ids=list(self.ids),
            goal=self.goal,
            targets=list(self.targets),
            split=self.split,
            bundles=list(self.bundles),
            tags=list(self.tags),
            limit=self.limit,
            repeats=self.repeats,
            shard=list(self.shard) if self.shard else None,
        )

    @classmethod
    def from_record(cls, record: SelectionRecord) -> Selection:
        """The selection a run's manifest recorded (a filter it did not record: unset)."""
        return cls(
            targets=tuple(record.targets),
            split=record.split,
            bundles=tuple(record.bundles),
            tags=tuple(record.tags),
            limit=record.limit,
            repeats=record.repeats,
            ids=tuple(record.ids),
            shard=(record.shard[0], record.shard[1]) if record.shard else None,
            goal=record.goal,
        )


@dataclass(slots=True)
class TargetResult:
    """One target's questions, grader summaries, advisories and gate verdict."""

    target: str
    mode: str
    dataset: str
    questions: list[QuestionResult]
    verdict: GateVerdict
    graders: list[GraderSummary]
    advisories: list[str] = field(default_factory=list)
    """What the run says about its graders ("Text only", graders that skipped everything)."""
    plan: dict[str, Any] | None = None
    """The target's check plan as the run recorded it (`tracegrade.verdicts.plan`); None for a
    run from before check plans."""
    digest: Any = None
    """A streamed target's reports' fold (`decide_run`'s `digest`): what the console shows of
    its questions, folded as the verdict was; None when `questions` holds them all."""


@dataclass(slots=True)
class RunOutcome:
    """What `tracegrade run`/`grade` produced."""

    run_id: str
    run_dir: Path
    targets: list[TargetResult]
    manifest: RunManifest | None
    """The run's manifest (`identity.json`) as the run recorded it; None for an outcome made
    without a run directory."""
    grading_id: int
    notes: list[str] = field(default_factory=list)
    """Operator notes: export failures, resumed questions, changed datasets..."""
    lost_spans: int = 0
    """Spans that could not be written to the run's trace file: their records are lost on
    disk, so the run is incomplete (exit 3) however its gates came out."""
    comparison: Any = None
    """With `run --baseline`: the `tracegrade.comparison.compare.Comparison` against the baseline,
    whose regression verdict joins the gate."""
    extra_exit_codes: list[int] = field(default_factory=list)
    """Codes of what went wrong beside the gate (a refused baseline comparison: 4)."""
    monitor: dict[str, Any] | None = None
    """A monitor run's (`tracegrade receive`) rollups per hour, as its store keeps them."""
    nothing_to_run: str | None = None
    """Why there was nothing to gate (a `receive` window no trace arrived in): the run's exit
    code is then 5 and every report says so, never a failed gate."""

    @property
    def exit_code(self) -> int:
        """The run's own verdict first: a failed gate or an incomplete run is never hidden
        behind a problem of the baseline comparison (a regression, a refusal)."""
        if self.nothing_to_run:
            return int(ExitCode.NOTHING_TO_RUN)
        codes = [t.verdict.exit_code for t in self.targets]
        if self.lost_spans:
            codes.append(int(ExitCode.INCOMPLETE))
        own = combine_exit_codes(codes)
        if own != ExitCode.OK:
            return own
        baseline = list(self.extra_exit_codes)
        if self.comparison is not None:
            baseline.append(self.comparison.exit_code)
        return combine_exit_codes(baseline)


def new_run_id() -> str:
    """`YYYYmmdd-HHMMSS-xxxxxx`: sortable by start time, unique across machines."""
    return f"{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
