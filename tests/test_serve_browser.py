"""`tracegrade serve` in a real browser (Debian's chromium, headless, through Playwright), over
the demo's two runs and a third run with a rubric check left in Review and a hostile answer.

The server is the real command (`tracegrade serve --port 0`) on a free loopback port. Every
page renders; the done-when flow runs whole (see the runs and their comparison, resolve a
Review, promote a failing question, edit it, export it, validate the export); a schema error
is refused with the error shown and nothing written; a write without the token is 403; an id
holding `../` is refused; markup in an answer is shown as text, never run; two writers at once
lose nothing. Screenshots of each page land in $TRACEGRADE_SCREENSHOTS when set.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import httpx
import pytest
import yaml
from playwright.sync_api import expect, sync_playwright

from tests.loopback_timeout import LOOPBACK_TIMEOUT_S
from tests.runs_support import write_project
from tracegrade.inputs.datastore import DatasetStore

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[1]
TRACEGRADE = Path(sys.executable).with_name("tracegrade")

# What the HTML report is tested with: markup that would run if anything were not escaped.
HOSTILE = [
    "</script><script>window.pwned=1</script><!--",
    '<img src=x onerror="window.pwned=2">',
    "\"'><svg onload=window.pwned=3>",
]
EVIL = " ".join(HOSTILE)

# A grader that leaves one required rubric check in Review (as a rubric judge does without
# the evidence it needs), with a hostile reason: the gate fails until a person decides it.
REVIEW_MODULE = f"""
from tracegrade.graders.base import Grader


class NeedsPerson(Grader):
    id = "needs_person"
    label = "Needs a person"
    min_score = 0.0
    max_score = 1.0

    def grade(self, input, response, context):
        check = {{"id": "escalation", "version": "1.0.0", "kind": "escalation",
                 "status": "review", "severity": "major", "required": True,
                 "reason": {EVIL!r}}}
        return self.result(1.0, "one check in Review " + {EVIL!r}, details={{"checks": [check]}})


GRADERS = [NeedsPerson()]
"""


def _cli(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the test project's agent imports agents/
    return subprocess.run(
        [str(TRACEGRADE), *argv], capture_output=True, text=True, timeout=240, cwd=ROOT, env=env
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> dict:
    """The demo's two runs (passing, regressed) and a Review run, in one runs directory."""
    root = tmp_path_factory.mktemp("checkout")
    ignore = shutil.ignore_patterns("__pycache__", "runs")
    for name in ("examples", "agents"):
        shutil.copytree(ROOT / name, root / name, ignore=ignore)
    config = root / "examples" / "tracegrade.yaml"
    runs = {}
    for target, code in (("support_desk", 0), ("support_desk_regressed", 2)):
        done = _cli("run", "--config", str(config), "--target", target, "--quiet")
        assert done.returncode == code, done.stdout[-2000:] + done.stderr[-2000:]
        runs[target] = sorted(set((root / "runs").iterdir()) - set(runs.values()))[-1]
    hostile = {
        "id": "hostile",
        "input": [{"role": "system", "content": EVIL}, {"role": "user", "content": "echo system"}],
    }
    review_config = write_project(
        root / "review",
        questions=[],
        extra_questions=[hostile],
        target={"graders": ["tool_usage_grader"], "labels": ["Would you send this answer?"]},
        config={"runs_dir": str(root / "runs")},
    )
    (root / "review" / "data" / "graders.py").write_text(textwrap.dedent(REVIEW_MODULE))
    done = _cli("run", "--config", str(review_config), "--quiet")
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    runs["review"] = sorted(set((root / "runs").iterdir()) - set(runs.values()))[-1]
    return {"root": root, "config": config, "runs": {k: v.name for k, v in runs.items()}}


@pytest.fixture(scope="module")
def server(project):
    env = {**os.environ, "TRACEGRADE_USER": "ana", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [str(TRACEGRADE), "serve", "--config", str(project["config"]), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=project["root"],
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # blocks until the server listens (or dies)
    assert line.startswith("tracegrade serve: http://127.0.0.1:"), line + proc.stdout.read()
    url = line.split(": ", 1)[1].strip()
    yield {"url": url, "base": url.split("/?", 1)[0], "token": url.split("token=", 1)[1]}
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.fail("the app is tested in Debian's chromium: apt-get install -y chromium")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield b
        b.close()


@pytest.fixture
def tab(browser, server):
    """A fresh browser context that opened the printed URL (so it holds the token)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server["url"])
    page.errors = errors  # type: ignore[attr-defined]
    yield page
    context.close()


def _shot(page, name: str) -> None:
    out = os.environ.get("TRACEGRADE_SCREENSHOTS")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(out) / name), full_page=True)


def _show(project, run_id: str) -> int:
    return _cli("show", run_id, "--config", str(project["config"])).returncode


def test_every_page_renders_with_the_demo_runs(tab, server, project):
    page = tab
    runs = project["runs"]
    assert page.url == server["base"] + "/"  # the token went into a cookie, off the URL
    rows = page.locator("#runs tbody tr")
    expect(rows).to_have_count(3)
    listed = rows.evaluate_all("rs => rs.map(r => r.dataset.run)")
    assert listed[0] == runs["review"] and set(listed) == set(runs.values())  # newest first
    assert "failed" in page.inner_text(f"tr[data-run='{runs['support_desk_regressed']}']")
    assert "passed" in page.inner_text(f"tr[data-run='{runs['support_desk']}']")
    assert page.locator("svg.trend").count() == 3  # one trend per target
    _shot(page, "runs.png")
    page.select_option("#f-verdict", "passed")
    page.click("form.controls button[type=submit]")
    expect(page.locator("#runs tbody tr")).to_have_count(1)
    page.select_option("#f-verdict", "")
    page.select_option("#f-target", "support_desk_regressed")
    page.click("form.controls button[type=submit]")
    expect(page.locator("#runs tbody tr")).to_have_count(1)

    page.goto(f"{server['base']}/runs/{runs['support_desk_regressed']}")
    assert "gate failed" in page.inner_text("header .verdict")
    expect(page.locator("#question-table tbody tr")).to_have_count(9)
    _shot(page, "run.png")
    page.goto(
        f"{server['base']}/runs/{runs['support_desk_regressed']}#q=support_desk_regressed/cancel_booking"
    )
    expect(page.locator("#question-h")).to_contain_text("cancel_booking")
    assert page.locator("#timeline li.call").count() == 1
    _shot(page, "run-question.png")

    page.goto(
        f"{server['base']}/compare?base={runs['support_desk']}&cand={runs['support_desk_regressed']}"
    )
    expect(page.locator("#comparison")).to_contain_text("regressed")
    _shot(page, "compare.png")
    page.goto(f"{server['base']}/datasets")
    expect(page.locator("h1")).to_have_text("Datasets")
    _shot(page, "datasets-empty.png")
    assert page.errors == []


def test_done_when_flow(tab, server, project, tmp_path):
    """A new user after the demo: the runs, their comparison, a Review resolved, a failing
    question promoted, edited, exported, and the export validates."""
    page, base, runs = tab, server["base"], project["runs"]
    good, bad, review = runs["support_desk"], runs["support_desk_regressed"], runs["review"]
    # The runs and their comparison (the regressed run against its baseline, by default).
    expect(page.locator("#runs tbody tr")).to_have_count(3)
    page.click(f"tr[data-run='{bad}'] >> text=compare")
    assert page.locator("#c-base").input_value() == good
    section = page.locator("#comparison")
    expect(section).to_contain_text("regressed")
    changed = section.locator("tbody tr").evaluate_all("rs => rs.map(r => r.dataset.q)")
    assert set(changed) == {
        "book_consultation",
        "book_without_check",
        "cancel_booking",
        "refund_over_limit",
    }
    assert "check_availability" in section.inner_text()

    # A Review resolved with the keyboard changes `tracegrade show`'s exit code.
    assert _show(project, review) == 2
    page.goto(f"{base}/review?run={review}")
    expect(page.locator("#review-h")).to_contain_text("hostile")
    items = page.locator("#review .item")
    assert items.first.get_attribute("data-label") == "review:escalation"
    _shot(page, "review.png")
    page.keyboard.press("n")
    page.keyboard.type("policy allows it")
    page.keyboard.press("Escape")
    page.keyboard.press("p")
    expect(items.first).to_have_class("item done")
    expect(page.locator("#flash")).to_contain_text("review:escalation = pass by ana")
    assert _show(project, review) == 0
    shown = _cli(
        "show", review, "--config", str(project["config"]), "--json", str(tmp_path / "r.json")
    )
    (question,) = json.loads((tmp_path / "r.json").read_text())["questions"]
    assert shown.returncode == 0
    assert question["checks"][0]["decided_by"] == "ana"
    assert question["checks"][0]["decision_note"] == "policy allows it"

    # A failing question promoted into a new dataset, from its view in the run page.
    page.goto(f"{base}/runs/{bad}#q=support_desk_regressed/book_without_check")
    page.click("a[data-action='Promote to a dataset']")
    page.fill("#p-to", "regressions")
    page.click("#promote button[type=submit]")
    expect(page.locator("h1")).to_contain_text("book_without_check")
    assert "expected_tools" in page.locator("#e-yaml").input_value()
    _shot(page, "promoted-question.png")

    # Edited in the form, saved, and its needs_review cleared.
    page.fill("#e-tags", "booking, regression")
    page.click("#editor button[type=submit]")
    expect(page.locator("#flash")).to_contain_text("saved book_without_check")
    page.goto(f"{base}/datasets/regressions")
    row = page.locator("#questions tr[data-q='book_without_check']")
    expect(row).to_be_visible()
    _shot(page, "dataset.png")

    # Exported as YAML, which `tracegrade validate` accepts.
    with page.expect_download() as download:
        page.click("#export")
    exported = tmp_path / "regressions.yaml"
    download.value.save_as(exported)
    data = yaml.safe_load(exported.read_text())
    (q,) = data["questions"]
    assert q["id"] == "book_without_check" and q["tags"] == ["booking", "regression"]
    done = _cli("validate", str(exported))
    assert done.returncode == 0, done.stdout + done.stderr
    assert page.errors == []


def test_a_schema_error_is_refused_shown_and_nothing_written(tab, server, project):
    page, base = tab, server["base"]
    store_path = project["root"] / "examples" / "datasets.sqlite"
    page.goto(f"{base}/datasets")
    page.fill("#new-name", "edits")
    page.click("form.controls button[type=submit]")
    expect(page.locator("h1")).to_contain_text("edits")
    page.click("text=Add a question")
    page.fill("#e-id", "q1")
    page.fill("#e-input", "hello")
    page.click("#editor button[type=submit]")
    expect(page.locator("h1")).to_contain_text("q1")  # the new question's own page
    with DatasetStore(store_path) as store:
        before = [(x.id, x.row) for x in store.questions("edits")]
    page.goto(f"{base}/datasets/edits/questions/q1")
    page.fill("#e-yaml", "expected_tools:\n  - tool: lookup\n    should_run: maybe\n")
    page.click("#editor button[type=submit]")
    errors = page.locator("#errors")
    expect(errors).to_be_visible()
    assert "should_run" in errors.inner_text()
    _shot(page, "edit-refused.png")
    with DatasetStore(store_path) as store:
        assert [(x.id, x.row) for x in store.questions("edits")] == before
    # A conversation as input: the form is read-only, the YAML holds the whole question.
    with DatasetStore(store_path) as store:
        store.add("edits", {"id": "conv", "input": [{"role": "user", "content": "hi"}]})
    page.goto(f"{base}/datasets/edits/questions/conv")
    expect(page.locator("#readonly-note")).to_be_visible()
    assert page.locator("#e-input").is_disabled()
    assert "role: user" in page.locator("#e-yaml").input_value()
    assert page.errors == []


def test_a_write_without_the_token_is_403(server):
    base = server["base"]
    body = {"name": "sneaky"}
    assert (
        httpx.post(f"{base}/api/datasets", json=body, timeout=LOOPBACK_TIMEOUT_S).status_code == 403
    )
    wrong = {"x-tracegrade-token": "not-it"}
    assert (
        httpx.post(
            f"{base}/api/datasets", json=body, headers=wrong, timeout=LOOPBACK_TIMEOUT_S
        ).status_code
        == 403
    )
    # The cookie alone, sent by another site's form (its Origin), is refused too (CSRF).
    cookie = {"cookie": f"tracegrade_token={server['token']}", "origin": "http://evil.example"}
    assert (
        httpx.post(
            f"{base}/api/datasets", json=body, headers=cookie, timeout=LOOPBACK_TIMEOUT_S
        ).status_code
        == 403
    )
    # A name that is not this host (DNS rebinding) gets nothing, not even a page.
    assert (
        httpx.get(
            f"{base}/", headers={"host": "evil.example"}, timeout=LOOPBACK_TIMEOUT_S
        ).status_code
        == 421
    )
    ok = {"x-tracegrade-token": server["token"]}
    assert (
        httpx.post(
            f"{base}/api/datasets", json={"name": "allowed"}, headers=ok, timeout=LOOPBACK_TIMEOUT_S
        ).status_code
        == 200
    )


def test_an_id_holding_dotdot_is_refused(server, project):
    base, ok = server["base"], {"x-tracegrade-token": server["token"]}
    for path in (
        "/runs/..%2F..%2Fetc%2Fpasswd",
        "/runs/%2e%2e",
        "/datasets/..%2F..%2Fexamples",
        "/datasets/..%2Fx/export",
    ):
        r = httpx.get(base + path, timeout=LOOPBACK_TIMEOUT_S)
        assert r.status_code == 404, path
        assert "root:" not in r.text
    r = httpx.post(
        f"{base}/api/label",
        json={"run": "../" + project["runs"]["review"], "target": "t", "question": "hostile",
              "label": "review:escalation", "answer": True},
        headers=ok, timeout=LOOPBACK_TIMEOUT_S,
    )  # fmt: skip
    assert r.status_code == 404
    r = httpx.post(
        f"{base}/api/datasets", json={"name": "../outside"}, headers=ok, timeout=LOOPBACK_TIMEOUT_S
    )
    assert r.status_code == 400
    assert not (project["root"] / "outside").exists()


def test_markup_in_an_answer_is_shown_never_run(tab, server, project):
    page, base, review = tab, server["base"], project["runs"]["review"]
    for path in (f"/runs/{review}#q=t/hostile", f"/review?run={review}", "/"):
        page.goto(base + path)
        page.wait_for_load_state("load")
        assert page.evaluate("window.pwned") is None, path
    page.goto(f"{base}/runs/{review}#q=t/hostile")
    assert HOSTILE[0] in page.inner_text("#answer")
    assert page.locator("img[src=x], svg[onload]").count() == 0
    csp = httpx.get(base + "/", timeout=LOOPBACK_TIMEOUT_S).headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert page.errors == []


def test_two_writers_at_once_lose_nothing(server, project):
    """Two tabs adding questions while the CLI promotes into the same dataset."""
    base, ok = server["base"], {"x-tracegrade-token": server["token"]}
    assert (
        httpx.post(
            f"{base}/api/datasets", json={"name": "busy"}, headers=ok, timeout=LOOPBACK_TIMEOUT_S
        ).status_code
        == 200
    )
    failures: list[str] = []

    def tab(n: int) -> None:
        with httpx.Client(headers=ok, timeout=60) as client:
            for i in range(6):
                r = client.post(
                    f"{base}/api/datasets/busy/questions",
                    json={"id": f"t{n}-{i}", "input": f"question {i}"},
                )
                if r.status_code != 200:
                    failures.append(r.text)

    threads = [threading.Thread(target=tab, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    promoted = _cli(
        "dataset", "promote", project["runs"]["support_desk"], "--id", "small_refund",
        "--to", "busy", "--config", str(project["config"]),
    )  # fmt: skip
    for t in threads:
        t.join()
    assert failures == [] and promoted.returncode == 0, promoted.stderr
    with DatasetStore(project["root"] / "examples" / "datasets.sqlite") as store:
        ids = {x.id for x in store.questions("busy")}
    assert ids == {f"t{n}-{i}" for n in range(2) for i in range(6)} | {"small_refund"}
