"""The HTML report in a real browser (Debian's chromium through Playwright) shows a question
that ended waiting on an interrupt as failed, with the named outcome on its view, and a
conversation's turns in its input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml
from playwright.sync_api import expect

from tests.test_html_browser import Page, _save, browser  # noqa: F401 (the fixture)

ROOT = Path(__file__).resolve().parents[1]
AGENT = ROOT / "agents" / "refund_desk.py"
TRACEGRADE = Path(sys.executable).with_name("tracegrade")


def test_an_interrupted_question_and_its_turns_on_the_page(browser, tmp_path):  # noqa: F811
    questions = [
        {"id": "no_answer", "input": "Please refund order A-17."},
        {
            "id": "two_turns",
            "turns": ["I'd like a refund for my order.", "Order A-17."],
            "resume": [{"approve": True}],
            "expected_interrupts": {"count": 1},
        },
    ]
    (tmp_path / "data.yaml").write_text(yaml.safe_dump({"questions": questions}))
    config = {
        "version": 1,
        "runs_dir": "runs",
        "targets": {
            "refunds": {
                "agent": f"{AGENT}:build_graph",
                "environment": f"{AGENT}:make_environment",
                "dataset": "data.yaml",
                "graders": [{"id": "interrupt_grader", "must_pass": True}],
            }
        },
    }
    (tmp_path / "tracegrade.yaml").write_text(yaml.safe_dump(config))
    page_file = tmp_path / "refunds.html"
    argv = ["run", "--config", str(tmp_path / "tracegrade.yaml"), "--quiet", "--html"]
    done = subprocess.run(
        [str(TRACEGRADE), *argv, str(page_file)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    report = Page(browser, page_file)
    try:
        rows = report.page.locator("#question-table tbody tr[data-q]")
        expect(rows).to_have_count(2)
        page = report.open_question("no_answer", target="refunds")
        expect(page.locator("#outcome")).to_contain_text("Ended interrupted: waiting on interrupt")
        expect(page.locator("#outcome")).to_contain_text("Approve a refund of $40.00")
        _save(page, "interrupted.png", tmp_path)
        page = report.open_question("two_turns", target="refunds")
        expect(page.locator("#outcome")).to_have_count(0)
        said = page.locator("section[aria-labelledby=qs-input] .msg pre").all_inner_texts()
        assert said[:3] == [
            "I'd like a refund for my order.",
            "Sure. Which order is it?",
            "Order A-17.",
        ]
        _save(page, "two_turns.png", tmp_path)
        assert not report.errors
        assert all(url.startswith("file://") for url in report.requests)
    finally:
        report.close()
