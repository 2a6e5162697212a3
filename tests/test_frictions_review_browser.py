"""The Review queue in `tracegrade serve`, in a real browser (Debian's chromium through
Playwright; issue 45, item 22): a "failing first" order puts the questions that failed ahead
of the file order and keeps it from one question to the next, and the run page's links to the
queue land on the question being viewed."""

from __future__ import annotations

import os
import subprocess

import pytest
from playwright.sync_api import expect

from tests.runs_support import QUESTIONS, write_project
from tests.serve_support import ROOT, TRACEGRADE, app_tab, serving, shot


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("review")
    # every question has a checklist item open; only "rome" fails (it never looked it up)
    rows = [{**QUESTIONS["paris"], "id": "paris_2"}]
    config = write_project(
        root,
        questions=["paris", "rome"],
        extra_questions=rows,
        target={"graders": ["tool_usage_grader"], "labels": ["Would you send this answer?"]},
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRACEGRADE_USER": "ana"}
    done = subprocess.run(
        [str(TRACEGRADE), "run", "--config", str(config), "--quiet"],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    (run_dir,) = (root / "runs").iterdir()
    with serving(config, TRACEGRADE_USER="ana") as (url, base), app_tab(url) as (page, errors):
        yield {"page": page, "base": base, "run": run_dir.name}
        assert errors == []


def test_the_queue_walks_failing_questions_first_when_asked(served):
    page, base, run = served["page"], served["base"], served["run"]
    page.goto(f"{base}/review?run={run}")
    expect(page.locator("#review-h")).to_contain_text("paris")  # file order by default
    page.click("#order a[data-order=failing]")
    expect(page.locator("#review-h")).to_contain_text("rome")
    expect(page.locator("#review-h .badge")).to_have_text("failing")
    expect(page.locator("#order [aria-current]")).to_have_text("failing first")
    shot(page, "review-failing-first.png")
    page.keyboard.press("j")  # the next question, in the same order
    expect(page.locator("#review-h")).to_contain_text("paris")
    assert "order=failing" in page.url


def test_the_run_pages_links_land_on_the_question_viewed(served):
    page, base, run = served["page"], served["base"], served["run"]
    page.goto(f"{base}/runs/{run}#q=t/rome")
    expect(page.locator("#question-h")).to_contain_text("rome")
    page.click("a[data-review-link]")
    expect(page.locator("#review-h")).to_contain_text("rome")
    page.goto(f"{base}/runs/{run}#q=t/paris_2")
    page.click("a[data-action='Review this question']")
    expect(page.locator("#review-h")).to_contain_text("paris_2")
    shot(page, "review-landed.png")
    page.goto(f"{base}/review?run={run}&target=t&question=nowhere&trial=0")
    expect(page.locator("#not-waiting")).to_contain_text("nowhere")
