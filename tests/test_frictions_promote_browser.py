"""The app's Promote page in a real browser (Debian's chromium through Playwright; issue 45,
item 25): it offers the dataset file the target reads beside the store, writes the question
into that file keeping its comments, and says where it wrote; a promotion into the store says
it is the store, which a target reads as `store:NAME`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from tests.runs_support import write_project
from tests.test_frictions_promote import COMMENTED
from tracegrade.inputs.dataset import load_dataset

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[1]
TRACEGRADE = Path(sys.executable).with_name("tracegrade")


def test_the_promote_page_writes_into_the_targets_file_and_says_where(tmp_path):
    config = write_project(tmp_path, questions=["paris", "rome"])
    data = tmp_path / "data" / "questions.yaml"
    data.write_text(COMMENTED, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRACEGRADE_USER": "ana"}
    run = [str(TRACEGRADE), "run", "--config", str(config), "--quiet"]
    done = subprocess.run(run, capture_output=True, text=True, timeout=240, env=env)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    (run_dir,) = (tmp_path / "runs").iterdir()
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
    base = url.split("/?", 1)[0]
    if not CHROMIUM.exists():
        pytest.fail("the app is tested in Debian's chromium: apt-get install -y chromium")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(url)
            page.goto(f"{base}/runs/{run_dir.name}#q=t/rome")
            page.click("a[data-action='Promote to a dataset']")
            into = page.locator("#p-into option[value=file]")
            expect(into).to_contain_text(str(data))
            page.select_option("#p-into", "file")
            page.fill("#p-as", "rome_again")
            page.click("#promote button[type=submit]")
            expect(page.locator("#flash")).to_contain_text(f"promoted into the file {data}:")
            _shot(page, "promote-into-file.png")
            assert [q.id for q in load_dataset(data).questions][-1] == "rome_again"
            assert "# the one that looks the city up" in data.read_text()

            page.goto(f"{base}/promote?run={run_dir.name}&target=t&question=paris&trial=0")
            page.fill("#p-to", "weather")
            page.click("#promote button[type=submit]")
            expect(page.locator("#stored-in")).to_contain_text("dataset: store:weather")
            _shot(page, "promote-into-store.png")
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
