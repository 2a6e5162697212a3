"""The HTML report in a real browser (Debian's chromium through Playwright) marks each tool
call the question's world acted on (a planted fault, a fixture) apart from the agent's own
doing, and leaves the calls that met the real tool unmarked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from playwright.sync_api import expect

from tests.test_html_browser import Page, _save, browser  # noqa: F401 (the fixture)
from tests.test_world_tools import CHARGE, project

ROOT = Path(__file__).resolve().parents[1]
TRACEGRADE = Path(sys.executable).with_name("tracegrade")


def test_calls_the_world_acted_on_are_marked_on_the_page(browser, tmp_path):  # noqa: F811
    question = {**CHARGE, "tools": {**CHARGE["tools"], "send_receipt": {"returns": {"sent": 1}}}}
    path = project(tmp_path, [question])
    page_file = tmp_path / "world.html"
    done = subprocess.run(
        [str(TRACEGRADE), "run", "--config", str(path), "--quiet", "--html", str(page_file)],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONPATH": str(ROOT)},  # tests.world_agent imports from here
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = Page(browser, page_file)
    try:
        page = report.open_question("charge", target="desk")
        calls = page.locator("li.call")
        expect(calls).to_have_count(3)
        expect(calls.nth(0).locator(".badge.world")).to_have_text(
            "set by the question: fault: timeout (call 1)"
        )
        expect(calls.nth(1).locator(".badge.world")).to_have_count(0)  # the real retry
        expect(calls.nth(2).locator(".badge.world")).to_have_text(
            "set by the question: fixture (call 1)"
        )
        _save(page, "world.png", tmp_path)
        assert not report.errors
    finally:
        report.close()
