"""The sticky pull-request comment (GitHub) or merge-request note (GitLab): created once,
found again by a hidden marker and updated on every push, so a pull request carries one
tracegrade comment however many times it runs.

The body is the Markdown report (gate, graders, the comparison with the base branch and its
cost deltas) under the failing questions, each linked to its dataset line, and a link to the
workflow run's page where the HTML report is an artifact. The clients only send and classify:
any failure (403 from a fork's read-only token, a hang, a 5xx) is one warning line and never
changes the run's exit code; the token goes in a header and is never printed or written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx

from ..reports.escaping import md_code, md_text
from ..reports.markdown import render_markdown
from .findings import Finding

__all__ = ["StickyTarget", "comment_body", "github_comments", "gitlab_notes", "post_sticky"]

_BODY_LIMIT = 60_000  # GitHub refuses a comment over 65,536 characters
_PAGES = 20


def marker(key: str) -> str:
    return f"<!-- tracegrade-comment:{key} -->"


def comment_body(
    outcome: Any,
    found: list[Finding],
    *,
    key: str,
    link: Any = None,
    report_url: str | None = None,
) -> str:
    """The comment's Markdown. `link(file, line)` makes a dataset line's URL (None: no link)."""
    lines = [marker(key)]
    failing = [f for f in found if f.question_id is not None]
    if failing:
        lines += ["", f"**{len(failing)} question(s) to look at**", ""]
        for f in failing[:50]:
            name = md_code(f"{f.target}: {f.question_id}")
            url = link(f.file, f.line) if (link and f.file) else None
            where = f"[{name}]({url})" if url else name
            first = f.message.split("\n", 1)[0]
            lines.append(f"- {where} ({f.level}): {md_text(first)}")
        if len(failing) > 50:
            lines.append(f"- … and {len(failing) - 50} more (see the report)")
    lines += ["", render_markdown(outcome).rstrip("\n")]
    if report_url:
        lines += ["", f"[HTML report and artifacts]({report_url})"]
    body = "\n".join(lines) + "\n"
    if len(body) > _BODY_LIMIT:
        cut = "\n\n… (cut: the whole report is in the step summary and the artifacts)\n"
        body = body[: _BODY_LIMIT - len(cut)] + cut
    return body


@dataclass(frozen=True, slots=True)
class StickyTarget:
    """Where a sticky comment lives and how to reach it."""

    list_url: str
    """GET: the comments, paged with `per_page`/`page`; POST here creates one."""
    item_url: str
    """`{id}` filled in: PATCH/PUT here updates one."""
    update_method: str
    headers: dict[str, str]


def github_comments(*, api_url: str, repository: str, number: int, token: str) -> StickyTarget:
    base = f"{api_url.rstrip('/')}/repos/{repository}"
    return StickyTarget(
        list_url=f"{base}/issues/{number}/comments",
        item_url=base + "/issues/comments/{id}",
        update_method="PATCH",
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
        },
    )


def gitlab_notes(*, api_url: str, project: str, iid: str, token: str) -> StickyTarget:
    base = f"{api_url.rstrip('/')}/projects/{project}/merge_requests/{iid}/notes"
    return StickyTarget(
        list_url=base,
        item_url=base + "/{id}",
        update_method="PUT",
        headers={"PRIVATE-TOKEN": token},
    )


def post_sticky(
    target: StickyTarget, body: str, *, key: str, bound_s: float = 30.0
) -> tuple[str | None, str | None]:
    """Create or update the comment carrying `key`'s marker, all within `bound_s` seconds.
    Returns (`created` | `updated`, None) or (None, why it was not posted)."""
    deadline = time.monotonic() + bound_s
    wanted = marker(key)

    def remaining() -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise httpx.TimeoutException(f"gave up after {bound_s:g} s")
        return left

    try:
        with httpx.Client(headers=target.headers, follow_redirects=False) as client:
            existing = None
            for page in range(1, _PAGES + 1):
                reply = client.get(
                    target.list_url,
                    params={"per_page": 100, "page": page},
                    timeout=remaining(),
                )
                problem = _problem("list comments", reply)
                if problem:
                    return None, problem
                items = reply.json()
                if not isinstance(items, list):
                    return None, "list comments: the answer is not a list"
                existing = next(
                    (c for c in items if isinstance(c, dict) and wanted in str(c.get("body"))),
                    None,
                )
                if existing is not None or len(items) < 100:
                    break
            if existing is not None:
                reply = client.request(
                    target.update_method,
                    target.item_url.format(id=existing.get("id")),
                    json={"body": body},
                    timeout=remaining(),
                )
                problem = _problem("update the comment", reply)
                return (None, problem) if problem else ("updated", None)
            reply = client.post(target.list_url, json={"body": body}, timeout=remaining())
            problem = _problem("create the comment", reply)
            return (None, problem) if problem else ("created", None)
    except httpx.TimeoutException as exc:
        return None, f"timed out ({exc or 'no answer'})"
    except (httpx.HTTPError, ValueError) as exc:
        # the one isolation point: a comment is a courtesy, the run's verdict stands
        return None, f"{type(exc).__name__}: {exc}"


def _problem(what: str, reply: httpx.Response) -> str | None:
    if reply.status_code < 400:
        return None
    hint = ""
    if reply.status_code in (401, 403, 404):
        hint = (
            " (the token cannot write comments here: a pull request from a fork gets a "
            "read-only token; give the job `permissions: pull-requests: write`)"
        )
    return f"{what}: HTTP {reply.status_code}{hint}"
