"""The Review queue in `tracegrade serve`, in a real browser (Debian's chromium through
Playwright; issue 45, item 22): a "failing first" order puts the questions that failed ahead
of the file order and keeps it from one question to the next, and the run page's links to the
queue land on the question being viewed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from tests.runs_support import QUESTIONS, write_project

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[1]
TRACEGRADE = Path(sys.executable).with_name("tracegrade")


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
    proc = subprocess.Popen(
        [str(TRACEGRADE), "serve", "--config", str(config), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**env, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("tracegrade serve: http://127.0.0.1:"), line + proc.stdout.read()
    url = line.split(": ", 1)[1].strip()
    if not CHROMIUM.exists():
        pytest.fail("the app is tested in Debian's chromium: apt-get install -y chromium")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(url)  # the printed URL: the token goes into a cookie
            yield {"page": page, "base": url.split("/?", 1)[0], "run": run_dir.name}
            assert errors == []
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _shot(page, name: str) -> None:
    out = os.environ.get("TRACEGRADE_SCREENSHOTS")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(out) / name), full_page=True)


def test_the_queue_walks_failing_questions_first_when_asked(served):
    page, base, run = served["page"], served["base"], served["run"]
    page.goto(f"{base}/review?run={run}")
    expect(page.locator("#review-h")).to_contain_text("paris")  # file order by default
    page.click("#order a[data-order=failing]")
    expect(page.locator("#review-h")).to_contain_text("rome")
    expect(page.locator("#review-h .badge")).to_have_text("failing")
    expect(page.locator("#order [aria-current]")).to_have_text("failing first")
    _shot(page, "review-failing-first.png")
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
    _shot(page, "review-landed.png")
    page.goto(f"{base}/review?run={run}&target=t&question=nowhere&trial=0")
    expect(page.locator("#not-waiting")).to_contain_text("nowhere")
