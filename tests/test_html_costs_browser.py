"""The HTML report's cost and latency, in Debian's chromium (headless, Playwright's API): the
tokens, cost and latency columns, sortable from their headers and the Sort control, with an
unknown or unpriced cost sorted last (never as 0); the per-tool latency chart; "unpriced" on
the page of a model no price covers. Screenshots land in the test's output folder (and in
$TRACEGRADE_SCREENSHOTS when set, for a person to look at)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from tests.runs_support import write_project
from tracegrade.cli import main

CHROMIUM = Path(os.environ.get("TRACEGRADE_CHROMIUM", "/usr/bin/chromium"))
ROOT = Path(__file__).resolve().parents[1]
TOOLS = {"lookup_customer", "check_availability", "book_appointment", "cancel_booking"}


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("checkout")
    for name in ("examples", "agents"):
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("runs"))
    priced = root / "reports" / "expensive.html"
    config = root / "examples" / "tracegrade.yaml"
    argv = ["run", "--config", str(config), "--target", "support_desk_expensive", "--quiet"]
    assert main([*argv, "--html", str(priced)]) == 0
    unpriced = root / "reports" / "unpriced.html"
    project = write_project(root / "project", questions=["paris", "rome"])  # model "scripted"
    main(["run", "--config", str(project), "--quiet", "--html", str(unpriced)])
    return {"priced": priced, "unpriced": unpriced}


@pytest.fixture(scope="module")
def browser(pages):  # after the runs: Playwright's sync API holds an event loop in this thread
    if not CHROMIUM.exists():
        pytest.fail("the HTML report is tested in Debian's chromium: apt-get install -y chromium")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield b
        b.close()


def _open(browser, path: Path):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    seen: dict[str, list[str]] = {"requests": [], "errors": []}
    page.on("request", lambda r: seen["requests"].append(r.url))
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.goto(path.resolve().as_uri())
    return context, page, seen


def _column(page, name: str) -> list[str]:
    index = page.eval_on_selector_all(
        "#question-table thead th", f"ths => ths.findIndex(th => th.dataset.col === {name!r})"
    )
    return page.eval_on_selector_all(
        "#question-table tbody tr", f"rows => rows.map(r => r.children[{index}].textContent)"
    )


def _save(page, locator: str | None, name: str, tmp_path: Path) -> Path:
    shot = tmp_path / name
    if locator:
        page.locator(locator).screenshot(path=str(shot))
    else:
        page.screenshot(path=str(shot), full_page=True)
    extra = os.environ.get("TRACEGRADE_SCREENSHOTS")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(extra) / name)
    return shot


def test_cost_and_latency_columns_sort_from_their_headers(browser, pages, tmp_path):
    context, page, seen = _open(browser, pages["priced"])
    try:
        costs = _column(page, "cost")
        assert len(costs) == 9 and all(c.startswith("$") for c in costs), costs
        assert all(t.replace(",", "").isdigit() for t in _column(page, "tokens"))
        page.click("#question-table th[data-col=cost] button")
        values = [float(c.lstrip("$")) for c in _column(page, "cost")]
        assert values == sorted(values, reverse=True) and values[0] > values[-1]
        assert page.input_value("#f-sort") == "cost"  # the Sort control follows the header
        page.click("#question-table th[data-col=latency] button")
        seconds = [float(c.split()[0]) for c in _column(page, "latency")]
        assert seconds == sorted(seconds, reverse=True)
        page.select_option("#f-sort", "cost")
        assert [float(c.lstrip("$")) for c in _column(page, "cost")] == values
        assert _save(page, "#question-table", "cost-columns.png", tmp_path).stat().st_size > 5_000
        assert seen["errors"] == []
        assert all(url == pages["priced"].resolve().as_uri() for url in seen["requests"])
    finally:
        context.close()


def test_the_tool_latency_chart_has_a_bar_per_tool(browser, pages, tmp_path):
    context, page, seen = _open(browser, pages["priced"])
    try:
        chart = page.locator("svg.tool-latency")
        assert chart.count() == 1
        tools = set(
            chart.locator("rect[data-tool]").evaluate_all("rs => rs.map(r => r.dataset.tool)")
        )
        assert tools >= TOOLS
        assert "Tool call latency per tool" in chart.locator("title").first.text_content()
        desc = chart.locator("desc").text_content()
        assert "lookup_customer: 8 call(s), p50" in desc and "max" in desc
        widths = chart.locator("rect[data-tool]").evaluate_all(
            "rs => rs.map(r => r.getBoundingClientRect().width)"
        )
        assert max(widths) > 50  # drawn to scale, the slowest tool's p95 bar visible
        assert "cost $" in page.inner_text("ul.cost")
        shot = _save(page, "svg.tool-latency", "tool-latency.png", tmp_path)
        assert shot.stat().st_size > 2_000
        assert seen["errors"] == []
    finally:
        context.close()


def test_an_unpriced_model_shows_unpriced_never_a_price(browser, pages, tmp_path):
    context, page, seen = _open(browser, pages["unpriced"])
    try:
        assert _column(page, "cost") == ["unpriced", "unpriced"]
        lines = page.inner_text("ul.cost")
        assert "cost unpriced" in lines and "unpriced model(s): scripted" in lines
        page.click("#question-table th[data-col=cost] button")  # sorts without a number
        assert sorted(_column(page, "cost")) == ["unpriced", "unpriced"]
        _save(page, None, "unpriced.png", tmp_path)
        assert seen["errors"] == []
    finally:
        context.close()
