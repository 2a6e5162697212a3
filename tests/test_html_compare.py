"""`run --baseline --html`: the comparison with the baseline in the HTML report, read in a real
browser (Debian's chromium, headless): the four regressed questions of the demo pair, each with
its tool-call difference, and the verdict; no network request."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from tests.test_html_browser import CHROMIUM

ROOT = Path(__file__).resolve().parents[1]
TRACEGRADE = Path(sys.executable).with_name("tracegrade")


@pytest.fixture(scope="module")
def page_file(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("checkout")
    ignore = shutil.ignore_patterns("__pycache__", "runs")
    for name in ("examples", "agents"):
        shutil.copytree(ROOT / name, root / name, ignore=ignore)
    config = root / "examples" / "tracegrade.yaml"
    base = root / "base.json"
    page = root / "regressed.html"

    def run(*argv: str) -> int:
        done = subprocess.run(
            [str(TRACEGRADE), "run", "--config", str(config), "--quiet", *argv],
            capture_output=True,
            text=True,
            timeout=180,
        )
        return done.returncode

    assert run("--target", "support_desk", "--json", str(base)) == 0
    assert (
        run("--target", "support_desk_regressed", "--baseline", str(base), "--html", str(page)) == 2
    )
    return page


def test_the_comparison_section_names_the_regressed_questions_and_their_calls(page_file):
    if not CHROMIUM.exists():
        pytest.fail(
            "the HTML report is tested in Debian's chromium (./scripts/test.sh installs it)"
        )
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        context = browser.new_context()
        page = context.new_page()
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_file.resolve().as_uri())
        section = page.locator("#comparison")
        expect(section.locator("#comparison-h")).to_contain_text("regressed")
        rows = section.locator("table.compare tbody tr")
        newly = {
            rows.nth(i).get_attribute("data-q")
            for i in range(rows.count())
            if "newly failing" in rows.nth(i).inner_text()
        }
        assert newly == {
            "book_consultation",
            "book_without_check",
            "cancel_booking",
            "refund_over_limit",
        }
        refund = section.locator('tr[data-q="refund_over_limit"]')
        expect(refund).to_contain_text("issue_refund")
        expect(refund).to_contain_text("(appeared)")
        expect(refund).to_contain_text("escalate_to_human")
        expect(section.locator('tr[data-q="book_consultation"]')).to_contain_text(
            '"2026-12-03" -> "2026-12-04"'
        )
        expect(section).to_contain_text("exact McNemar p = 0.125")
        expect(section.locator("ul.reasons li").first).to_contain_text("newly fail the gate")
        assert [u for u in requests if not u.startswith("file:")] == []
        context.close()
        browser.close()
