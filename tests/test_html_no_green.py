"""No green beside a failure, checked in Debian's chromium: a grader's badge is green only when
it met a pass bar it could have missed (a bar any score meets reads "scored"), a question row
is green only when the question passed, and the target's and the page's verdicts are green only
when the gate passed. On the demo's regressed run, and on the README's minimal config over a
user's broken shop agent (where a grader used to show a green "passed" at 0 of 5)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from tests.shop_agent import DATASET
from tests.test_html_browser import (
    TARGET,
    TRACEGRADE,
    Page,
    _save,
    browser,  # noqa: F401 (a fixture)
)
from tests.test_safe_defaults import BROKEN_SHOP, project

ROOT = Path(__file__).resolve().parent.parent


def _green_beside_a_failure(page: Page, report: dict) -> list[str]:
    """Every green badge the page shows that the results do not back, question by question."""
    wrong = []
    passed = {(q["target"], q["id"]): q["passed"] for q in report["questions"]}
    graders = {
        (q["target"], q["id"]): {g["id"]: g for g in q["graders"]} for q in report["questions"]
    }
    gate_passed = report["gate"]["exit_code"] == 0
    if page.page.locator("header .verdict .v-passed").count() and not gate_passed:
        wrong.append("the page header")
    for name, verdict in report["gate"]["targets"].items():
        section = page.page.locator("section.target", has_text=name).first
        if section.locator("h2 .v-passed").count() and not verdict["passed"]:
            wrong.append(f"target {name}")
    rows = page.page.eval_on_selector_all(
        "#question-table tbody tr",
        "rows => rows.map(r => [r.cells[1].innerText, r.dataset.q, "
        "!!r.querySelector('.v-passed')])",
    )
    for target, qid, green in rows:
        if green and passed[(target, qid)] is not True:
            wrong.append(f"question row {qid}")
        view = page.open_question(qid, target)
        for grader_id in view.eval_on_selector_all(
            "#graders tr[data-grader]:has(.v-passed)", "rows => rows.map(r => r.dataset.grader)"
        ):
            g = graders[(target, qid)][grader_id]
            if g["passed"] is not True or g["pass_bar"].endswith("(any score)"):
                wrong.append(f"{qid}: {grader_id} {g['score']} / {g['max']} ({g['pass_bar']})")
    return wrong


def _run(argv: list[str], html: Path, results: Path) -> dict:
    done = subprocess.run(
        [str(TRACEGRADE), "run", *argv, "--quiet", "--html", str(html), "--json", str(results)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        # the README layout's agent file imports the shop agent from this checkout's tests/
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        },
    )
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(results.read_text())


def test_the_regressed_demo_run_shows_no_green_beside_a_failure(browser, tmp_path):  # noqa: F811
    for name in ("examples", "agents"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("runs"))
    html, results = tmp_path / "regressed.html", tmp_path / "regressed.json"
    config = tmp_path / "examples" / "tracegrade.yaml"
    report = _run(["--config", str(config), "--target", TARGET], html, results)
    page = Page(browser, html)
    try:
        assert _green_beside_a_failure(page, report) == []
        view = page.open_question("cancel_booking")
        row = view.locator("#graders tr[data-grader='format_grader']")
        assert row.locator(".badge").inner_text() == "scored"  # 5 / 5 against "any score"
        assert ">= 0 (any score)" in row.inner_text()
        _save(view, "cancel_booking_graders.png", tmp_path)
        assert page.errors == []
    finally:
        page.close()


def test_the_readme_config_page_marks_a_wrong_action_red(browser, tmp_path):  # noqa: F811
    path = project(tmp_path / "shop", BROKEN_SHOP, DATASET)
    html, results = tmp_path / "shop.html", tmp_path / "shop.json"
    report = _run(["--config", str(path)], html, results)
    page = Page(browser, html)
    try:
        assert _green_beside_a_failure(page, report) == []
        view = page.open_question("cancel_order", "support_desk")
        badge = view.locator("#graders tr[data-grader='tool_usage_grader'] .badge")
        assert badge.inner_text() == "failed"
        _save(view, "shop_cancel_order.png", tmp_path)
    finally:
        page.close()
