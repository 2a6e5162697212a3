"""The CI flags of `run`, `grade`, `show`, `merge`, `grade-traces` and `receive`, and
`report_outcome`: the console and report files (`reports.flags.write_reports`), then what the
CI provider shows.

`--ci auto` (the default) is `github` when `GITHUB_ACTIONS=true`, `gitlab` when
`GITLAB_CI=true`, else nothing: on GitHub the Markdown report goes to the step summary and each
failing question becomes an annotation at its dataset line. `--pr-comment` posts or updates the
sticky comment; `--codequality FILE` writes GitLab's Code Quality report (an explicit flag: the
format never depends on where it runs).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["add_ci_flags", "ci_provider", "publish_ci", "report_outcome"]


def add_ci_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("CI providers")
    group.add_argument(
        "--ci",
        choices=("auto", "github", "gitlab", "none"),
        default="auto",
        help="speak a CI provider's language (default auto: github when GITHUB_ACTIONS=true, "
        "gitlab when GITLAB_CI=true): on GitHub the Markdown report is appended to "
        "$GITHUB_STEP_SUMMARY and each failing question is an ::error annotation at its "
        "dataset line (::warning for advisories and unpriced models)",
    )
    group.add_argument(
        "--pr-comment",
        action="store_true",
        help="create or update one sticky comment on the pull request (GitHub: GITHUB_TOKEN "
        "with pull-requests: write) or merge request (GitLab: GITLAB_TOKEN): the gate, the "
        "failing questions linked to their dataset lines, the comparison with the baseline; "
        "an API error is a warning, never the job's exit code",
    )
    group.add_argument(
        "--comment-key",
        default="default",
        metavar="KEY",
        help="which sticky comment to update when one pull request runs several evaluations",
    )
    group.add_argument(
        "--comment-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="give up posting the comment after this long, all requests together (default 30)",
    )
    group.add_argument(
        "--report-url",
        default=None,
        metavar="URL",
        help="link the comment to this page (default on GitHub: the workflow run's page, "
        "where the HTML report is an artifact)",
    )
    group.add_argument(
        "--codequality",
        type=Path,
        default=None,
        metavar="FILE",
        help="write a GitLab Code Quality report: one entry per failing question at its "
        "dataset line",
    )


def ci_provider(choice: str, env: Mapping[str, str] = os.environ) -> str | None:
    if choice == "auto":
        if env.get("GITHUB_ACTIONS") == "true":
            return "github"
        if env.get("GITLAB_CI") == "true":
            return "gitlab"
        return None
    return None if choice == "none" else choice


def report_outcome(args: argparse.Namespace, outcome: Any, *, config: Any = None) -> None:
    """What every command that reports a run does: the reports, then the CI provider's."""
    from ..reports.flags import write_reports

    grouped = ci_provider(getattr(args, "ci", "none") or "none") == "github"
    if grouped:  # the long console report folds under one line that carries the verdict
        print(f"::group::tracegrade {outcome.run_id}: exit {outcome.exit_code} (the whole report)")
    try:
        write_reports(args, outcome, config=config)
    finally:
        if grouped:
            sys.stdout.flush()
            print("::endgroup::")
    publish_ci(args, outcome)


def publish_ci(
    args: argparse.Namespace, outcome: Any, *, env: Mapping[str, str] = os.environ
) -> None:
    provider = ci_provider(getattr(args, "ci", "none") or "none", env)
    codequality = getattr(args, "codequality", None)
    comment = bool(getattr(args, "pr_comment", False))
    if provider is None and codequality is None and not comment:
        return
    # imported here: `--help` and a run off CI load none of this (nor httpx)
    from . import github, gitlab
    from .findings import findings

    found = findings(outcome)
    if codequality is not None:
        gitlab.write_code_quality(found, codequality)
    if provider == "github":
        sys.stdout.flush()
        for command in github.workflow_commands(found):
            print(command)
        github.write_step_summary(outcome, env=env)
    if comment:
        _comment(args, outcome, found, provider or "github", env)


def _comment(args: Any, outcome: Any, found: list, provider: str, env: Mapping[str, str]) -> None:
    from . import github, gitlab
    from .comment import comment_body, github_comments, gitlab_notes, post_sticky

    key = args.comment_key
    if provider == "gitlab":
        where = gitlab.merge_request(env)
        token = env.get("GITLAB_TOKEN")
        if where is None or not token:
            _warn(provider, "no merge request or no GITLAB_TOKEN: no note posted")
            return
        api, project, iid = where
        target = gitlab_notes(api_url=api, project=project, iid=iid, token=token)
        link = None
        report_url = args.report_url or env.get("CI_JOB_URL")
    else:
        number = github.pull_request_number(env)
        token = env.get("GITHUB_TOKEN")
        repository = env.get("GITHUB_REPOSITORY")
        if number is None or not token or not repository:
            _warn(provider, "not a pull request, or no GITHUB_TOKEN: no comment posted")
            return
        api = env.get("GITHUB_API_URL") or "https://api.github.com"
        target = github_comments(api_url=api, repository=repository, number=number, token=token)

        def link(file: str, line: int | None) -> str | None:
            return github.blob_url(file, line, env)

        report_url = args.report_url or github.run_page_url(env)
    body = comment_body(outcome, found, key=key, link=link, report_url=report_url)
    done, problem = post_sticky(target, body, key=key, bound_s=args.comment_timeout)
    if problem:
        _warn(provider, f"the pull-request comment was not posted: {problem}")
    else:
        print(f"tracegrade: pull-request comment {done}", file=sys.stderr)


def _warn(provider: str, text: str) -> None:
    if provider == "github":
        from .github import escape_data

        print(f"::warning title=tracegrade::{escape_data(text)}")
    else:
        print(f"tracegrade: warning: {text}", file=sys.stderr)
