"""Inputs that changed since a run started: a resume or a re-grade against them would grade
with expectations the run never had (an edited dataset turning a failing question into a
passing one, a rubric edited in place under the same version dropping a critical check).
Each is refused (exit 4) naming the file whose hash changed."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import InputError
from ...inputs.files import not_a_file
from ...rundir.identity import sha256_file
from ...rundir.manifest import RunManifest
from .prepared import RunSettings

if TYPE_CHECKING:
    from ...graders.rubrics import RubricStore

__all__ = ["changed_file_error", "refuse_changed_rubrics", "refuse_other_config", "rubric_files"]

HINT = "start a new run to grade the changed inputs; this run keeps what it started with"


def rubric_files(rubrics: RubricStore | None, refs: Iterable[str]) -> dict[str, dict[str, str]]:
    """`rubric_ref -> {"path", "sha256"}` of each rubric file the questions name (recorded in
    the run's identity, so a later re-grade can tell an edit in place)."""
    out: dict[str, dict[str, str]] = {}
    if rubrics is None:
        return out
    for ref in sorted(set(refs)):
        try:
            path = rubrics.file_of(rubrics.resolve(ref))
        except Exception:  # an unresolved ref is refused elsewhere, with its location
            continue
        out[ref] = {"path": str(path), "sha256": sha256_file(path)}
    return out


def changed_file_error(path: str | Path, before: str, *, key: str, what: str) -> InputError | None:
    """The refusal when the file at `path` no longer has the hash `before`; None when it does."""
    problem = not_a_file(path)
    now = None if problem else sha256_file(path)
    if now == before:
        return None
    change = problem or f"sha256 {before[:12]} -> {now[:12] if now else '?'}"
    return InputError(
        f"the {what} changed since the run started ({change})", file=str(path), key=key, hint=HINT
    )


def refuse_changed_rubrics(manifest: RunManifest) -> None:
    """Raise for the first rubric file of the run whose content changed since it started."""
    for target in manifest.targets.values():
        for ref, entry in target.rubrics.items():
            error = changed_file_error(entry.path, entry.sha256, key=ref, what="rubric file")
            if error is not None:
                raise error


def refuse_other_config(manifest: RunManifest, settings: RunSettings) -> None:
    """A resume reads the config the run started with, pinned by its content
    (`Config.content_sha256`): the same content at another path (a restored CI cache, a
    moved checkout) is that config, with any comments or layout; other content is refused
    wherever it is. A run from before the pin (no `config_sha256`) is held to its path."""
    run_id = manifest.run_id
    before = manifest.config_sha256
    if before:
        now = settings.config_sha256
        if now != before:
            raise InputError(
                f"the config changed since the run started (content sha256 {before[:12]} -> "
                f"{now[:12]}): run {run_id} resumes only with the config it started with",
                file=str(settings.config_path),
                key="--config",
                hint=f"restore the config it started with ({manifest.config_path}), "
                "or start a new run with this one",
            )
        return
    stored = manifest.config_path
    if stored and Path(stored) != settings.config_path.resolve():
        raise InputError(
            f"run {run_id} was started with the config {stored}: a resume reads the config "
            "the run started with",
            file=str(settings.config_path),
            key="--config",
            hint=f"pass --config {stored}",
        )
