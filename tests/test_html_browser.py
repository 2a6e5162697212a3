"""The HTML report in a real browser: Debian's chromium, headless, driven by Playwright's API.

Asserts on the rendered DOM of the demo's regressed run: every question listed, the four planted
mistakes visible on their questions' views, filters and search narrowing the list, sub-agent
calls nested, the summary readable with scripts off, and no network request of any kind.
Screenshots of the summary and of the `cancel_booking` view land in the test's output folder
(and in $TRACEGRADE_SCREENSHOTS when set, for a person to look at).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

CHROMIUM = Path(os.environ.get("TRACEGRADE_CHROMIUM", "/usr/bin/chromium"))  # scripts/test.sh
ROOT = Path(__file__).resolve().parents[1]
TRACEGRADE = Path(sys.executable).with_name("tracegrade")
TARGET = "support_desk_regressed"


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    """The regressed support desk and content agent runs, each written as an HTML page."""
    root = tmp_path_factory.mktemp("checkout")
    ignore = shutil.ignore_patterns("__pycache__", "runs")
    for name in ("examples", "agents"):
        shutil.copytree(ROOT / name, root / name, ignore=ignore)
    out = {}
    for target in (TARGET, "content_agent_regressed"):
        page = root / "reports" / f"{target}.html"
        config = root / "examples" / "tracegrade.yaml"
        argv = ["run", "--config", str(config), "--target", target, "--quiet", "--html", str(page)]
        done = subprocess.run(
            [str(TRACEGRADE), *argv],
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
        out[target] = page
    return out


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.fail(
            "the HTML report is tested in Debian's chromium: apt-get install -y chromium "
            "(./scripts/test.sh installs it)"
        )
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield b
        b.close()


class Page:
    """A page opened from disk, with every request and script error it causes recorded."""

    def __init__(self, browser, path: Path, *, scripts: bool = True) -> None:
        self.context = browser.new_context(
            java_script_enabled=scripts, viewport={"width": 1280, "height": 900}
        )
        self.page = self.context.new_page()
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.url = path.resolve().as_uri()
        self.page.goto(self.url)

    def open_question(self, qid: str, target: str = TARGET):
        self.page.goto(f"{self.url}#q={target}/{qid}")
        expect(self.page.locator("#question-h")).to_contain_text(qid)
        return self.page

    def listed(self) -> list[str]:
        return self.page.eval_on_selector_all(
            "#question-table tbody tr", "rows => rows.map(r => r.dataset.q)"
        )

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def report(browser, pages):
    page = Page(browser, pages[TARGET])
    yield page
    page.close()


def _save(page, name: str, tmp_path: Path) -> Path:
    shot = tmp_path / name
    page.screenshot(path=str(shot), full_page=True)
    extra = os.environ.get("TRACEGRADE_SCREENSHOTS")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(extra) / name)
    return shot


def test_every_question_is_listed_and_the_summary_names_the_gate(report, tmp_path):
    page = report.page
    assert sorted(report.listed()) == sorted(
        [
            "book_consultation",
            "book_without_check",
            "cancel_booking",
            "refund_over_limit",
            "small_refund",
            "availability_check",
            "multi_turn_booking",
            "bookings_as_json",
            "unknown_customer",
        ]
    )
    assert page.inner_text("#list-status").startswith("9 of 9 questions")
    verdict = page.inner_text("header .verdict")
    assert "gate failed" in verdict and "exit code 2" in verdict
    assert "must-pass failure" in page.inner_text("section.target .reasons")
    # Worst first by default: the four planted mistakes lead the list.
    assert set(report.listed()[:4]) == {
        "book_consultation",
        "book_without_check",
        "cancel_booking",
        "refund_over_limit",
    }
    # the composite histogram, the pass rates and the per-tool latency chart
    assert page.locator("svg.chart").count() == 3
    shot = _save(page, "summary.png", tmp_path)
    assert shot.stat().st_size > 10_000
    assert report.errors == []


def _call(page, tool: str):
    return page.locator(f"#timeline li.call[data-tool='{tool}']")


def test_the_wrong_argument_is_marked_on_its_call(report):
    page = report.open_question("book_consultation")
    booked = _call(page, "book_appointment")
    assert booked.count() == 1
    text = booked.inner_text()
    assert "breaks expected_tools[2]" in text
    assert "date: expected '2026-12-03', got '2026-12-04'" in text
    assert "broken" in booked.get_attribute("class")
    # The two right calls are marked as meeting theirs.
    assert "meets expected_tools[0]" in _call(page, "lookup_customer").inner_text()
    assert "meets expected_tools[1]" in _call(page, "check_availability").inner_text()
    assert "2026-12-04" in page.inner_text("#graders [data-grader='state_grader']")


def test_the_skipped_step_is_an_unmet_expectation_beside_the_timeline(report):
    page = report.open_question("book_without_check")
    assert _call(page, "check_availability").count() == 0
    unmet = page.inner_text("#expectations li.unmet")
    assert "check_availability" in unmet and "never called" in unmet
    assert "1 of 3" in page.inner_text("#graders [data-grader='tool_usage_grader']")


def test_the_claimed_but_not_done_cancel_is_visible(report, tmp_path):
    page = report.open_question("cancel_booking")
    assert "cancelled booking B100" in page.inner_text("#answer")
    # What it did: looked the customer up, and nothing else.
    assert page.locator("#timeline li.call").count() == 1
    assert _call(page, "lookup_customer").count() == 1
    assert _call(page, "cancel_booking").count() == 0
    unmet = page.inner_text("#expectations li.unmet")
    assert "support_desk:cancel_booking" in unmet and "never called" in unmet
    claims = page.inner_text("#graders [data-grader='claims_match_record']")
    assert "failed" in claims and "no cancel_booking call" in claims
    assert "actual 'confirmed'" in page.inner_text("#graders [data-grader='state_grader']")
    # Input, rubric checks and a copyable trace id (no trace_url configured).
    assert "Please cancel booking B100" in page.inner_text("section[aria-labelledby=qs-input]")
    assert page.locator("table.checks tr.check").count() >= 1
    trace = page.locator("#trace-id")
    assert len(trace.input_value()) == 32
    _save(page, "cancel_booking.png", tmp_path)
    assert report.errors == []


def test_the_forbidden_refund_is_marked_on_its_call(report):
    page = report.open_question("refund_over_limit")
    refund = _call(page, "issue_refund")
    assert refund.count() == 1
    text = refund.inner_text()
    assert "breaks expected_tools[2]" in text and "expected not to run" in text
    assert "amount" in text and "450" in text
    unmet = page.locator("#expectations li.unmet").all_inner_texts()
    assert any("escalate_to_human" in u for u in unmet)


def test_filters_and_search_narrow_the_list(report):
    page = report.page
    page.select_option("#f-verdict", "failed")
    assert sorted(report.listed()) == [
        "book_consultation",
        "book_without_check",
        "cancel_booking",
        "refund_over_limit",
    ]
    page.select_option("#f-bundle", "refunds")
    assert report.listed() == ["refund_over_limit"]
    page.select_option("#f-verdict", "")
    page.select_option("#f-bundle", "")
    page.select_option("#f-split", "validation")
    assert sorted(report.listed()) == ["availability_check", "bookings_as_json"]
    page.select_option("#f-split", "")
    page.select_option("#f-tag", "refund")
    assert sorted(report.listed()) == ["refund_over_limit", "small_refund"]
    page.select_option("#f-tag", "")
    page.fill("#f-text", "dan@example")  # text of the input messages
    assert report.listed() == ["book_without_check"]
    page.fill("#f-text", "no cancel_booking call")  # text of a grader's reason
    assert report.listed() == ["cancel_booking"]
    page.fill("#f-text", "")
    page.select_option("#f-sort", "composite-desc")
    assert report.listed()[-1] == "cancel_booking"
    assert page.inner_text("#list-status").startswith("9 of 9")


def test_keyboard_reaches_a_question_and_back(report):
    page = report.page
    page.keyboard.press("/")
    expect(page.locator("#f-text")).to_be_focused()
    links = page.locator("#question-table a.qlink")
    links.first.focus()
    page.keyboard.press("ArrowDown")
    second = report.listed()[1]
    expect(links.nth(1)).to_be_focused()
    expect(links.nth(1)).to_have_text(second)
    page.keyboard.press("Enter")
    heading = page.locator("#question-h")
    expect(heading).to_be_focused()  # the view says where the reader is
    expect(heading).to_contain_text(second)
    page.keyboard.press("Escape")
    expect(page.locator("#question")).to_be_hidden()
    expect(page.locator("#question-table")).to_be_visible()


def test_sub_agent_calls_nest_under_the_call_that_delegated(browser, pages):
    report = Page(browser, pages["content_agent_regressed"])
    try:
        page = report.open_question("summarize_subgraphs", "content_agent_regressed")
        nested = page.locator("#timeline > li.call[data-tool='research'] ol.calls li.call")
        assert nested.count() >= 2
        assert "agent researcher" in nested.first.inner_text()
        assert report.errors == []
    finally:
        report.close()


def test_the_page_makes_no_network_request(report):
    for qid in ("cancel_booking", "refund_over_limit"):
        report.open_question(qid)
    report.page.click("text=Copy trace id")
    file_url = report.url
    assert report.requests and all(url == file_url for url in report.requests), report.requests


def test_the_summary_is_readable_with_scripts_off(browser, pages):
    report = Page(browser, pages[TARGET], scripts=False)
    try:
        page = report.page
        assert "gate failed" in page.inner_text("header .verdict")
        table = page.inner_text("section.target table.grid")
        assert "tool_usage_grader" in table and "5/9" in table
        worst = page.inner_text("ul.worst")
        assert "cancel_booking" in worst and "never called" in worst
        assert page.locator("svg.chart").count() == 3  # drawn without scripts
        assert "cost $" in page.inner_text("ul.cost")
    finally:
        report.close()
