"""The run manifest (`identity.json`) as typed pydantic models: what produced a run's scores.

Every reader gets a `RunManifest` (`RunDirectory.manifest()`, `read_manifest`), never the file's
dict; old shapes are migrated on read (`migrate`). A manifest is serialized by `to_json`, which
writes the keys that were set (read from the file or given by the writer) and no others: a
manifest read and written again is the same file, and a field added here does not appear as
`null` in the manifests of runs that never had it. Each model only gains fields within a
version; a removed or renamed field is a new version.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "MANIFEST_VERSION",
    "DatasetRef",
    "GraderRecord",
    "GradingModuleRef",
    "MergedShard",
    "RubricFile",
    "RunManifest",
    "RunSource",
    "SelectionRecord",
    "TargetManifest",
    "VariantRef",
    "migrate",
]

MANIFEST_VERSION = 1
"""Version of `identity.json`. A manifest without the key was written by the first release
and reads as version 1 (the shape has only gained keys since)."""


class _Model(BaseModel):
    # extra="allow": a key a later release of the same version adds survives a read and write
    model_config = ConfigDict(
        extra="allow",
        use_attribute_docstrings=True,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )

    def to_json(self) -> dict[str, Any]:
        """The JSON form: the keys that were set, in field order (then any extra keys)."""
        return self.model_dump(mode="json", exclude_unset=True)


class DatasetRef(_Model):
    path: str
    """The dataset file the run read."""
    sha256: str
    """sha256 of the file's bytes when the run started."""
    name: str | None = None
    """The dataset's name."""


class GradingModuleRef(_Model):
    path: str
    """The user grading module the config named (absolute)."""
    sha256: str
    """sha256 of the module's bytes when the run started."""
    copy_path: str | None = Field(default=None, alias="copy")
    """(`copy` in the file) Its copy inside the run directory (`graders/<target>/<file>`), relative to it: what
    `tracegrade grade` loads."""


class VariantRef(_Model):
    of: str | None = None
    """The target the variant was made from (`variants:`)."""
    name: str | None = None
    """The variant's name."""
    args: dict[str, Any] = Field(default_factory=dict)
    """The factory arguments the variant passed."""


class RubricFile(_Model):
    path: str
    """The rubric file a `rubric_ref` resolved to."""
    sha256: str
    """Its sha256 when the run started: an edit in place under the same version is refused."""


class GraderRecord(_Model):
    """One grader attached to a target, as the run recorded it: what `tracegrade grade`
    rebuilds the grader from and what tells a changed grader apart."""

    id: str
    """The grader's id."""
    source: str
    """`registry` (a built-in or plugin grader, by id) or `module` (the grading module's)."""
    module: str | None = None
    """For a module grader: the run's copy of its grading module, relative to the run dir."""
    options: dict[str, Any] = Field(default_factory=dict)
    """The options it was built with (a registry grader's config entry)."""
    weight: float = 1.0
    """Its weight in the composite."""
    must_pass: bool = False
    """A gate: when it fails, the question fails."""
    threshold: float = 0.0
    """Its passing bar on its own scale."""
    samples: int = 1
    """How many times it graded each question (the verdicts' median)."""
    min_score: float | None = None
    """The low end of its declared scale."""
    max_score: float | None = None
    """The high end of its declared scale."""
    binary: bool = False
    """It passes only at its max."""
    llm: bool = False
    """It calls a judge model."""
    observes_actions: bool = False
    """It reads what the agent did (tool calls, state), not only its text."""
    sees_tool_calls: bool = False
    """It receives the tool-call record."""
    code_sha256: str | None = None
    """sha256 of its code (`tracegrade.rundir.identity.grader_code_hash`); None when its
    source could not be read."""


class SelectionRecord(_Model):
    """The CLI's filters as the run recorded them (`tracegrade.rundir.outcome.Selection`), so a
    resume asks the same questions."""

    ids: list[str] = Field(default_factory=list)
    """Question ids or glob patterns (`--id`); empty: every question."""
    goal: str | None = None
    """`--goal TEXT`; None: each target's graders."""
    targets: list[str] = Field(default_factory=list)
    """The targets named (`--target`); empty: every target."""
    split: str | None = None
    """`--split`."""
    bundles: list[str] = Field(default_factory=list)
    """`--bundle`s."""
    tags: list[str] = Field(default_factory=list)
    """`--tag`s."""
    limit: int | None = None
    """`--limit`: at most this many questions per target."""
    repeats: int | None = None
    """`--repeats`: trials per question for every target; None: each target's `repeats:`."""
    shard: list[int] | None = None
    """`[I, N]` for `--shard I/N`; None: the whole selection."""


class TargetManifest(_Model):
    mode: str
    """`agent` (a LangGraph graph) or `chat` (a bare chat model)."""
    config: dict[str, Any] = Field(default_factory=dict)
    """The target's config block as authored (values that look like secrets redacted)."""
    dataset: DatasetRef
    """Which dataset, and its hash."""
    grading_module: GradingModuleRef | None = None
    """The user grading module and its copy inside the run dir, if any."""
    graders: list[GraderRecord] = Field(default_factory=list)
    """Each attached grader, in attachment order."""
    repeats: int = 1
    """How many trials each question ran."""
    variant: VariantRef | None = None
    """The variant this target is (`variants:`); None for a plain target."""
    plan: dict[str, Any] | None = None
    """The target's check plan (`tracegrade.verdicts.plan.CheckPlan.as_dict`); None for a
    run from before check plans."""
    rubrics: dict[str, RubricFile] = Field(default_factory=dict)
    """Each rubric file the questions named, by `rubric_ref`."""
    selected: int | None = None
    """How many questions the selection held (this shard's, for a shard; what the traces
    covered, for `grade-traces`): fewer rows later means an interrupted run. None for a run
    from before the count."""
    selected_total: int | None = None
    """For a shard run: how many questions the whole selection held (what `merge` checks and
    counts the merged run by); None otherwise."""


class RunSource(_Model):
    """Where a run's answers came from when not from running the agent."""

    kind: str
    """`traces` (`tracegrade grade-traces`) or `receive` (a monitor run of `tracegrade receive`)."""
    target: str | None = None
    """A monitor run's one target."""
    paths: list[str] = Field(default_factory=list)
    """The trace files or folders graded (`traces`)."""
    pairing: dict[str, int] = Field(default_factory=dict)
    """How the traces were paired to questions, counted by how (`traces`)."""
    unmatched: int = 0
    """Agent traces that matched no question (`traces`)."""
    ambiguous: int = 0
    """Agent traces whose input matched more than one question (`traces`)."""


class MergedShard(_Model):
    run_id: str
    """The shard run's id."""
    shard: str
    """`I/N`: which shard it was."""
    run_dir: str
    """Its run directory when it was merged."""


class RunManifest(_Model):
    """What produced a run's scores (`identity.json`)."""

    version: int = MANIFEST_VERSION
    """Format version of this manifest."""
    run_id: str
    """`YYYYmmdd-HHMMSS-xxxxxx`, sortable by start time."""
    created: str
    """When the run started (ISO 8601, UTC)."""
    config_path: str | None = None
    """The config file the run read."""
    config_sha256: str | None = None
    """sha256 of the config's content when the run started: what a resume pins (the file may
    be restored or moved). None for a run from before the pin (held to its path)."""
    selection: SelectionRecord = Field(default_factory=SelectionRecord)
    """The CLI's filters, so a resume asks the same."""
    judge: dict[str, Any] | None = None
    """Judge provider identity and pinned knobs; None without a judge."""
    pricing: dict[str, Any] | None = None
    """The price table the run's costs were priced with: `version` (the bundled table's,
    with `+config-<hash>` when the config's `pricing:` overrode it), `currency`, `models`;
    None for a run written by an older release."""
    packages: dict[str, str] = Field(default_factory=dict)
    """Versions of Python and the packages that decide a run's behaviour."""
    git_commit: str | None = None
    """HEAD of the repository holding the config (with `-dirty`), or None."""
    targets: dict[str, TargetManifest] = Field(default_factory=dict)
    """Each target the run asked, by name."""
    source: RunSource | None = None
    """Where the answers came from when not from running the agent (`grade-traces`,
    `receive`); None for a run of the agent."""
    merged_from: list[MergedShard] | None = None
    """The shard runs `tracegrade merge` made this run of, by shard; None for a run that was
    not merged."""

    @property
    def shard(self) -> tuple[int, int] | None:
        """(I, N) for a shard run (`run --shard I/N`); None otherwise."""
        shard = self.selection.shard
        return (shard[0], shard[1]) if shard else None

    def target(self, name: str) -> TargetManifest | None:
        """The manifest of target `name`; None when the run did not ask it."""
        return self.targets.get(name)

    def grader_specs(self) -> list[dict[str, Any]]:
        """Every target's graders as recorded, each with its `target`: what a grading of the
        run stores."""
        return [
            {"target": name, **g.to_json()} for name, t in self.targets.items() for g in t.graders
        ]


_FIRST_RELEASE_RUN: dict[str, Any] = {
    "config_path": None,
    "selection": {},
    "judge": None,
    "pricing": None,
    "packages": {},
    "git_commit": None,
    "targets": {},
}
_FIRST_RELEASE_TARGET: dict[str, Any] = {
    "config": {},
    "grading_module": None,
    "graders": [],
    "repeats": 1,
}


def migrate(data: Any) -> Any:
    """An older manifest in today's shape (anything but a mapping is returned as it is, for
    validation to refuse). The first release wrote no `version`, no `pricing` and no target
    `repeats`: they read as version 1, no price table and one trial, written out so the
    manifest serializes as a current one does."""
    if not isinstance(data, Mapping):
        return data
    out = {"version": 1, **_FIRST_RELEASE_RUN, **data}
    targets = out.get("targets")
    if isinstance(targets, Mapping):
        out["targets"] = {
            name: _migrate_target(t) if isinstance(t, Mapping) else t for name, t in targets.items()
        }
    return out


def _migrate_target(data: Mapping[str, Any]) -> dict[str, Any]:
    out = {**_FIRST_RELEASE_TARGET, **data}
    if isinstance(out.get("dataset"), Mapping):
        out["dataset"] = {"name": None, **out["dataset"]}
    return out
