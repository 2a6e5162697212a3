"""GitHub Actions: workflow commands (`::error file=…,line=…,title=…::`), the step summary,
and where a run stands (the pull request it is for, the page of the workflow run).

Workflow commands are escaped as the runner reads them: in the message `%`, CR and LF; in a
property also `:` and `,`. A question id or a reason written by the dataset's author can then
neither end the command early nor start another (`::add-mask::`, `::stop-commands::`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..reports.escaping import printable
from ..reports.markdown import render_markdown
from .findings import Finding

__all__ = [
    "escape_data",
    "escape_property",
    "pull_request_number",
    "run_page_url",
    "workflow_command",
    "workflow_commands",
    "write_step_summary",
]

# GitHub shows at most 10 error and 10 warning annotations per step; the rest still print.
_MESSAGE_LIMIT = 4000


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(finding: Finding) -> str:
    props = []
    if finding.file:
        props.append(f"file={escape_property(finding.file)}")
        if finding.line is not None:
            props.append(f"line={finding.line}")
    props.append(f"title={escape_property(printable(finding.title))}")
    message = printable(finding.message)
    if len(message) > _MESSAGE_LIMIT:
        message = message[:_MESSAGE_LIMIT] + " …"
    return f"::{finding.level} {','.join(props)}::{escape_data(message)}"


def workflow_commands(found: list[Finding]) -> list[str]:
    return [workflow_command(f) for f in found]


def write_step_summary(outcome: Any, *, env: Mapping[str, str] = os.environ) -> Path | None:
    """Append the Markdown report to `$GITHUB_STEP_SUMMARY` (the job page shows it); None when
    the variable is not set (not on a runner)."""
    target = env.get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    path = Path(target)
    with path.open("a", encoding="utf-8") as out:
        out.write(render_markdown(outcome) + "\n")
    return path


def pull_request_number(env: Mapping[str, str] = os.environ) -> int | None:
    """The pull request this workflow run is for, from the event file: `pull_request` and
    `pull_request_target` events, and a comment on a pull request; None otherwise."""
    event_path = env.get("GITHUB_EVENT_PATH")
    if not event_path:
        return None
    try:
        event = json.loads(Path(event_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(event, dict):
        return None
    pr = event.get("pull_request")
    if isinstance(pr, dict) and isinstance(pr.get("number"), int):
        return int(pr["number"])
    issue = event.get("issue")
    if (
        isinstance(issue, dict)
        and issue.get("pull_request")
        and isinstance(issue.get("number"), int)
    ):
        return int(issue["number"])
    return None


def run_page_url(env: Mapping[str, str] = os.environ) -> str | None:
    """The workflow run's page (its artifacts, the HTML report among them)."""
    server, repo, run_id = (
        env.get("GITHUB_SERVER_URL"),
        env.get("GITHUB_REPOSITORY"),
        env.get("GITHUB_RUN_ID"),
    )
    if server and repo and run_id:
        return f"{server.rstrip('/')}/{repo}/actions/runs/{run_id}"
    return None


def blob_url(file: str, line: int | None, env: Mapping[str, str] = os.environ) -> str | None:
    """A link to a dataset line at the commit being tested."""
    server, repo = env.get("GITHUB_SERVER_URL"), env.get("GITHUB_REPOSITORY")
    sha = env.get("GITHUB_SHA")
    if not (server and repo and sha):
        return None
    anchor = f"#L{line}" if line is not None else ""
    return f"{server.rstrip('/')}/{repo}/blob/{sha}/{file}{anchor}"
