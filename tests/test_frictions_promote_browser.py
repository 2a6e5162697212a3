"""The app's Promote page in a real browser (Debian's chromium through Playwright; issue 45,
item 25): it offers the dataset file the target reads beside the store, writes the question
into that file keeping its comments, and says where it wrote; a promotion into the store says
it is the store, which a target reads as `store:NAME`."""

from __future__ import annotations

import os
import subprocess

from playwright.sync_api import expect

from tests.runs_support import write_project
from tests.serve_support import ROOT, TRACEGRADE, app_tab, serving, shot
from tests.test_frictions_promote import COMMENTED
from tracegrade import load_dataset


def test_the_promote_page_writes_into_the_targets_file_and_says_where(tmp_path):
    config = write_project(tmp_path, questions=["paris", "rome"])
    data = tmp_path / "data" / "questions.yaml"
    data.write_text(COMMENTED, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = [str(TRACEGRADE), "run", "--config", str(config), "--quiet"]
    done = subprocess.run(run, capture_output=True, text=True, timeout=240, env=env)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    (run_dir,) = (tmp_path / "runs").iterdir()
    with serving(config, TRACEGRADE_USER="ana") as (url, base), app_tab(url) as (page, errors):
        page.goto(f"{base}/runs/{run_dir.name}#q=t/rome")
        page.click("a[data-action='Promote to a dataset']")
        expect(page.locator("#p-into option[value=file]")).to_contain_text(str(data))
        page.select_option("#p-into", "file")
        page.fill("#p-as", "rome_again")
        page.click("#promote button[type=submit]")
        expect(page.locator("#flash")).to_contain_text(f"promoted into the file {data}:")
        shot(page, "promote-into-file.png")
        assert [q.id for q in load_dataset(data).questions][-1] == "rome_again"
        assert "# the one that looks the city up" in data.read_text()

        page.goto(f"{base}/promote?run={run_dir.name}&target=t&question=paris&trial=0")
        page.fill("#p-to", "weather")
        page.click("#promote button[type=submit]")
        expect(page.locator("#stored-in")).to_contain_text("dataset: store:weather")
        shot(page, "promote-into-store.png")
        assert errors == []
