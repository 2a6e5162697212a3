"""GitLab CI: a Code Quality report (the merge request's widget and the diff view show each
entry at its line) with one entry per failing question at its dataset line.

The shape is GitLab's documented subset of the Code Climate format: a JSON array of objects
with `description`, `check_name`, `fingerprint`, `severity` (info, minor, major, critical,
blocker) and `location.path` + `location.lines.begin`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .findings import Finding

__all__ = ["code_quality", "write_code_quality"]

_SEVERITY = {"error": "major", "warning": "minor", "notice": "info"}


def code_quality(found: list[Finding]) -> list[dict[str, Any]]:
    """One entry per finding with a place in the repository (GitLab drops entries without a
    path); run-level warnings point at the dataset file's first line when there is none."""
    entries = []
    for f in found:
        path = f.file or ""
        identity = "\0".join((f.level, f.target or "", f.question_id or "", f.title, path))
        entries.append(
            {
                "description": f"{f.title}: {f.message}".replace("\n", "; "),
                "check_name": f"tracegrade/{f.level}",
                # stable across runs for the same question, so GitLab tracks it as one issue
                "fingerprint": hashlib.sha256(identity.encode()).hexdigest(),
                "severity": _SEVERITY.get(f.level, "info"),
                "location": {"path": path or ".", "lines": {"begin": f.line or 1}},
            }
        )
    return entries


def write_code_quality(found: list[Finding], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(code_quality(found), indent=2) + "\n", encoding="utf-8")
    return path


def merge_request(env: Mapping[str, str] = os.environ) -> tuple[str, str, str] | None:
    """(API base, project id, merge request iid) of a merge-request pipeline, else None."""
    api, project, iid = (
        env.get("CI_API_V4_URL"),
        env.get("CI_PROJECT_ID"),
        env.get("CI_MERGE_REQUEST_IID"),
    )
    return (api.rstrip("/"), project, iid) if api and project and iid else None
