"""The run page of `tracegrade serve` streams: the summary and the first block of rows (the
worst questions, one page of the list) are drawn while the rest is still being built, and
every row arrives in the end, with the filters working over all of them. In Debian's chromium
(Playwright), against the app served for real on loopback (uvicorn in a thread), with the
rows after the first block held back until the test lets them go."""

from __future__ import annotations

import importlib.util
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.serve_support import app_tab, shot
from tracegrade.app.server import AppState, build_app
from tracegrade.reports import html
from tracegrade.reports.html import rows as html_rows
from tracegrade.rundir.kept_rows import KEPT_FILE

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = 1_200  # a first block of 100, then blocks of 500


def _bench_serve():
    """bench/serve.py: its synthetic run directory (store and trace file) is the one the
    benchmark measures."""
    spec = importlib.util.spec_from_file_location("bench_serve", ROOT / "bench" / "serve.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def big_run(tmp_path_factory) -> Path:
    runs = tmp_path_factory.mktemp("runs")
    _bench_serve().write_run(
        runs / "20260102-000000-big000",
        "20260102-000000-big000",
        "2026-01-02T00:00:00+00:00",
        QUESTIONS,
    )
    return runs


@pytest.fixture
def held(monkeypatch, big_run):
    """The blocks after the first wait for `release` (and the count of blocks sent), the run's
    rows built (none kept from an earlier page)."""
    (big_run / "20260102-000000-big000" / KEPT_FILE).unlink(missing_ok=True)
    release = threading.Event()
    sent = []
    real = html_rows.page_rows

    def page_rows(*args, **kwargs):
        for block in real(*args, **kwargs):
            if sent:
                assert release.wait(timeout=300), "the test never let the rest go"
            sent.append(len(block))
            yield block

    monkeypatch.setattr(html_rows, "page_rows", page_rows)
    return release, sent


@pytest.fixture
def app_url(big_run, tmp_path):
    import uvicorn

    state = AppState(runs_dir=big_run, store_path=tmp_path / "datasets.sqlite")
    config = uvicorn.Config(
        build_app(state), host="127.0.0.1", port=0, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the app did not start"
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    httpx.get(f"{base}/?token={state.token}", timeout=120)  # the run index read once
    yield f"{base}/runs/20260102-000000-big000", state.token
    server.should_exit = True
    thread.join(timeout=30)


def test_the_first_rows_are_drawn_before_the_rest_is_built(app_url, held):
    release, sent = held
    url, token = app_url
    with app_tab(f"{url}?token={token}", wait_until="commit") as (page, errors):
        rows = page.locator("#question-table tbody tr")
        rows.first.wait_for(timeout=180_000)
        # the first block only: one page of the list, the summary above it, the rest not sent
        assert sent == [100] and rows.count() == 100
        status = page.locator("#list-status").inner_text()
        assert status.startswith("100 of 100 questions") and f"of {QUESTIONS} read" in status
        assert page.locator("#list-root").get_attribute("aria-busy") == "true"
        assert page.locator("#list-root").get_attribute("data-loaded") is None
        assert page.locator("#summary h1").is_visible()
        # worst first: every question the synthetic run fails (one in four) before a pass
        verdicts = rows.locator("td:nth-child(3)").all_inner_texts()
        assert set(verdicts) == {"failed"}
        page.locator("#question-table").scroll_into_view_if_needed()
        shot(page, "serve-streaming-first-rows.png")

        release.set()
        page.wait_for_selector("#list-root[data-loaded=true]", timeout=300_000)
        assert sum(sent) == QUESTIONS and len(sent) == 4
        status = page.locator("#list-status").inner_text()
        assert status == f"{QUESTIONS} of {QUESTIONS} questions, showing 1–100", status
        assert page.locator("#list-root").get_attribute("aria-busy") == "false"
        # the filters see every row, the ones sent last included
        page.select_option("#f-verdict", "passed")
        passed = QUESTIONS - QUESTIONS // 4
        assert page.locator("#list-status").inner_text().startswith(f"{passed} of {QUESTIONS}")
        assert "passed (900)" in page.locator("#f-verdict").inner_text()
        page.select_option("#f-verdict", "")
        page.fill("#f-text", f"customer{QUESTIONS - 1}@")
        page.wait_for_function("document.querySelectorAll('#question-table tbody tr').length === 1")
        rows.first.locator("a.qlink").click()
        page.wait_for_selector("#question-root h2")
        assert f"q{QUESTIONS - 1:05d}" in page.locator("#question-root h2").inner_text()
        assert page.locator("#question-root li.call").count() == 4
        shot(page, "serve-streaming-all-rows.png")
        assert errors == []

    # the next look is the kept page, whole, without building a block again
    before = list(sent)
    with httpx.Client(timeout=120, follow_redirects=True) as client:
        client.get(f"{url.rsplit('/runs/', 1)[0]}/?token={token}")  # the token's cookie
        text = client.get(url).text
    assert sent == before and text.count('class="tg-rows"') == 4 and "tg-end" in text


def test_a_first_look_after_a_restart_reads_the_rows_the_run_keeps(big_run, app_url, monkeypatch):
    run_dir = big_run / "20260102-000000-big000"
    if not (run_dir / KEPT_FILE).is_file():  # the page built once (by the test above, or here)
        from tracegrade import load_outcome

        html.render_html(load_outcome(run_dir))

    def never(*args, **kwargs):
        raise AssertionError("a question built again: the kept rows were not read")

    monkeypatch.setattr(html_rows, "page_rows", never)
    url, token = app_url  # a fresh app: no page kept in memory
    with app_tab(f"{url}?token={token}", wait_until="commit") as (page, errors):
        page.wait_for_selector("#list-root[data-loaded=true]", timeout=300_000)
        rows = page.locator("#question-table tbody tr")
        status = page.locator("#list-status").inner_text()
        assert status == f"{QUESTIONS} of {QUESTIONS} questions, showing 1–100", status
        assert set(rows.locator("td:nth-child(3)").all_inner_texts()) == {"failed"}
        page.fill("#f-text", f"customer{QUESTIONS - 2}@")
        page.wait_for_function("document.querySelectorAll('#question-table tbody tr').length === 1")
        rows.first.locator("a.qlink").click()
        page.wait_for_selector("#question-root h2")
        assert f"q{QUESTIONS - 2:05d}" in page.locator("#question-root h2").inner_text()
        calls = page.locator("#question-root li.call")
        assert calls.count() == 4 and "lookup_customer" in calls.first.inner_text()
        shot(page, "serve-kept-rows-question.png")
        assert errors == []
