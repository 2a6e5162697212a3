"""The HTML report in a real browser (Debian's chromium through Playwright) shows the path
through the graph above a question's tool calls, each call with the node it ran in, and the
nodes_grader's failure with the path the run took."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from playwright.sync_api import expect

from tests.test_html_browser import Page, _save, browser  # noqa: F401 (the fixture)
from tests.test_record_checks import _project

TRACEGRADE = Path(sys.executable).with_name("tracegrade")
ROOT = Path(__file__).resolve().parents[1]


def test_the_path_through_the_graph_on_the_question_page(browser, tmp_path):  # noqa: F811
    config = _project(tmp_path / "proj")
    page_file = tmp_path / "desk.html"
    done = subprocess.run(
        [str(TRACEGRADE), "run", "--config", str(config), "--quiet", "--html", str(page_file)],
        capture_output=True,
        text=True,
        timeout=180,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    report = Page(browser, page_file)
    try:
        page = report.open_question("route", target="t")
        path = page.locator("#graph-path")
        expect(path).to_contain_text("Path through the graph:")
        expect(path).to_contain_text("router -> ticket_agent -> ticket_agent:model")
        call = page.locator("#timeline li.call").first
        expect(call.locator(".node")).to_have_text("node ticket_agent:tools")
        verdict = page.locator('#graders tr[data-grader="nodes_grader"]')
        expect(verdict).to_contain_text("expected but did not run: refund_agent")
        _save(page, "nodes.png", tmp_path)
        assert not report.errors
    finally:
        report.close()
