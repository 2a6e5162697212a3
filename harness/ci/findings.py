"""What a CI provider points at: one finding per failing, errored or degraded question, at its
line in the dataset file, and one per run-level warning (unpriced models, advisories).

GitHub's annotations, GitLab's Code Quality entries and the pull-request comment's list of
failing questions are all projections of `findings(outcome)`, so they always agree.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..inputs.sourceparse import load_document
from ..reports.common import question_label, question_reasons
from ..reports.costs import totals_of
from ..rundir.manifest import RunManifest
from ..rundir.outcome import RunOutcome
from ..verdicts.scoring import question_passed

__all__ = ["Finding", "QuestionLocator", "findings"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a provider shows at a place."""

    level: str
    """`error` (a question failed or its agent errored: the gate's business), `warning` (the
    evaluation itself failed on it, or a run-level note), `notice`."""
    title: str
    """One line: target and question, and what happened."""
    message: str
    """The reasons, one per line, as every report words them."""
    target: str | None = None
    question_id: str | None = None
    file: str | None = None
    """The dataset file, relative to the workspace (the repository root) when inside it."""
    line: int | None = None
    """The question's first line in that file."""


class QuestionLocator:
    """Where each question of a run stands in its dataset file: (file, line), read from the
    files the run's manifest names. A dataset that is not a file (the store), or a file that
    cannot be read any more, locates nothing: its findings carry no place."""

    def __init__(self, manifest: RunManifest | None, *, workspace: Path | None = None) -> None:
        self._targets = manifest.targets if manifest is not None else {}
        self._workspace = (workspace or Path.cwd()).resolve()
        self._lines: dict[str, dict[str, int]] = {}

    def dataset_file(self, target: str) -> str | None:
        """The target's dataset file, relative to the workspace; None when not a file."""
        path = self._path(target)
        return self._relative(Path(path)) if path else None

    def locate(self, target: str, question_id: str) -> tuple[str | None, int | None]:
        path = self._path(target)
        if path is None:
            return None, None
        lines = self._lines.get(path)
        if lines is None:
            lines = self._lines[path] = _question_lines(Path(path))
        return self._relative(Path(path)), lines.get(question_id)

    def _path(self, target: str) -> str | None:
        stored = self._targets.get(target)
        path = stored.dataset.path if stored is not None else None
        return path if path and Path(path).is_file() else None

    def _relative(self, path: Path) -> str:
        resolved = path.resolve()
        try:
            return resolved.relative_to(self._workspace).as_posix()
        except ValueError:
            return path.as_posix()


def _question_lines(path: Path) -> dict[str, int]:
    """question id -> the line its entry starts on; {} for a file that is gone or unreadable
    (the run still reports, its findings without a line)."""
    if not path.is_file():
        return {}
    try:
        doc = load_document(path)
    except InputError:
        return {}
    if doc.format == "jsonl":
        doc = doc.wrapped("questions")
    rows = doc.data.get("questions") if isinstance(doc.data, dict) else None
    found: dict[str, int] = {}
    for index, row in enumerate(rows if isinstance(rows, list) else []):
        if isinstance(row, dict) and isinstance(row.get("id"), str | int):
            line = doc.line_of(f"/questions/{index}")
            if line is not None:
                found.setdefault(str(row["id"]), line)
    return found


def workspace() -> Path:
    """The repository root a provider's paths are relative to."""
    return Path(os.environ.get("GITHUB_WORKSPACE") or os.environ.get("CI_PROJECT_DIR") or ".")


def findings(outcome: RunOutcome, *, locator: QuestionLocator | None = None) -> list[Finding]:
    """Every finding of a run, in report order: per target, its failing questions (one per
    question, its trials folded), then its advisories and unpriced models."""
    locator = locator or QuestionLocator(outcome.manifest, workspace=workspace())
    found: list[Finding] = []
    for t in outcome.targets:
        seen: set[str] = set()
        for q in t.questions:
            verdict = question_passed(q)
            if verdict is True or q.id in seen:
                continue
            if verdict is None and not q.degraded:
                continue  # unscored: a run-level note (every report names it), no failure
            seen.add(q.id)
            file, line = locator.locate(t.target, q.id)
            what = "errored" if q.errored else "failed" if verdict is False else "degraded"
            found.append(
                Finding(
                    level="error" if verdict is False else "warning",
                    title=f"tracegrade {t.target}: {question_label(q)} {what}",
                    message="\n".join(question_reasons(q)) or what,
                    target=t.target,
                    question_id=q.id,
                    file=file,
                    line=line,
                )
            )
        # run-level warnings stand at the dataset file (GitLab drops an entry without a path)
        dataset = locator.dataset_file(t.target)
        for advisory in t.advisories:
            found.append(
                Finding(
                    "warning", f"tracegrade {t.target}: advisory", advisory, t.target, None, dataset
                )
            )
        unpriced = sorted(totals_of(t.questions).agent.unpriced)
        if unpriced:
            found.append(
                Finding(
                    "warning",
                    f"tracegrade {t.target}: unpriced models",
                    "no price for " + ", ".join(unpriced) + ": their cost is unknown, not zero "
                    "(give it under `pricing:`)",
                    t.target,
                    None,
                    dataset,
                )
            )
    return found
