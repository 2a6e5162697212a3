"""The HTML question view in a real browser (Debian's chromium through Playwright) shows the
run's interrupts (issue 45, item 20): the pause in the tool-call timeline where it fell, its
payload and the answer given, or that nobody answered; and a declined approval is drawn as
declined (item 19), not as a red error."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from playwright.sync_api import expect

from tests.test_frictions_declined import DECLINED
from tests.test_html_browser import Page, _save, browser  # noqa: F401 (the fixture)
from tests.test_interrupts_run import APPROVED, project
from tracegrade import load_config, start_run
from tracegrade.reports.html import write_html

UNANSWERED = {"id": "no_answer", "input": "Please refund order A-17."}


def test_the_question_view_shows_each_pause_its_payload_and_answer(browser, tmp_path):  # noqa: F811
    path = project(tmp_path, [APPROVED, DECLINED, UNANSWERED])
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API holds this thread's loop
        outcome = pool.submit(start_run, load_config(path)).result()
    page_file = write_html(outcome, tmp_path / "refunds.html")
    report = Page(browser, page_file)
    try:
        page = report.open_question("refund_approved", target="refunds")
        items = page.locator("#timeline > li")
        # lookup, then the pause, then the refund it allowed: in the order they happened
        expect(items).to_have_count(3)
        assert items.nth(0).get_attribute("data-tool") == "lookup_order"
        pause = items.nth(1)
        assert pause.get_attribute("data-pause") == "approval"
        expect(pause).to_contain_text("paused: interrupt()")
        expect(pause).to_contain_text("asked by approval")
        expect(pause.locator("dl").first).to_contain_text("Approve a refund of $40.00")
        expect(pause.locator("dl").first).to_contain_text("issue_refund")
        expect(pause).to_contain_text("answered")
        expect(pause.locator("dl").nth(1)).to_contain_text("approve")
        expect(pause.locator("dl").nth(1)).to_contain_text("true")
        assert items.nth(2).get_attribute("data-tool") == "issue_refund"
        _save(page, "pause_approved.png", tmp_path)

        page = report.open_question("declined", target="refunds")
        refund = page.locator("#timeline > li[data-tool=issue_refund]")
        assert refund.get_attribute("data-outcome") == "declined"
        badge = refund.locator(".badge").first
        expect(badge).to_have_text("declined")
        red = page.evaluate("getComputedStyle(document.body).getPropertyValue('--fail')").strip()
        colour = badge.evaluate("e => getComputedStyle(e).backgroundColor")
        assert colour != page.evaluate(
            "c => { const d = document.createElement('i'); d.style.color = c; "
            "document.body.append(d); const v = getComputedStyle(d).color; d.remove(); "
            "return v; }",
            red,
        )
        expect(page.locator("li[data-pause]")).to_contain_text("false")
        _save(page, "pause_declined.png", tmp_path)

        page = report.open_question("no_answer", target="refunds")
        expect(page.locator("li[data-pause]")).to_contain_text(
            "not answered: the question ended waiting on it"
        )
        _save(page, "pause_unanswered.png", tmp_path)
        assert not report.errors
        assert all(url.startswith("file://") for url in report.requests)
    finally:
        report.close()
