"""`tracegrade serve` started for real on a free loopback port (`--port 0`), for the browser
tests of the app: the URL it printed (with the write token) and its base."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TRACEGRADE = Path(sys.executable).with_name("tracegrade")
ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def serving(config: Path, **env: str) -> Iterator[tuple[str, str]]:
    """(the printed URL, its base) while `tracegrade serve --config CONFIG` runs."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", **env}
    proc = subprocess.Popen(
        [str(TRACEGRADE), "serve", "--config", str(config), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=environ,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # blocks until the server listens (or dies)
        assert line.startswith("tracegrade serve: http://127.0.0.1:"), line + proc.stdout.read()
        url = line.split(": ", 1)[1].strip()
        yield url, url.split("/?", 1)[0]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


CHROMIUM = Path("/usr/bin/chromium")


@contextmanager
def app_tab(url: str, *, wait_until: str = "load") -> Iterator[tuple[object, list[str]]]:
    """A headless chromium page (Debian's, through Playwright) that opened the printed `url`
    (so it holds the write token), and the script errors it records; `wait_until="commit"`
    returns as soon as the page starts to arrive (a streamed page)."""
    import pytest
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        pytest.fail("the app is tested in Debian's chromium: apt-get install -y chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(url, wait_until=wait_until, timeout=180_000)
        try:
            yield page, errors
        finally:
            browser.close()


def shot(page, name: str) -> None:
    """A full-page screenshot into $TRACEGRADE_SCREENSHOTS, when set."""
    out = os.environ.get("TRACEGRADE_SCREENSHOTS")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(out) / name), full_page=True)
