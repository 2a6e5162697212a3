"""Grading by hand, end to end with the real CLI: `tracegrade label RUN` through an answers file
and through a scripted terminal session (a pty), annotations stored beside the scores and shown
in every report, a Review check resolved by a label changing the gate's exit code, re-grading
keeping annotations, a label on a changed answer flagged stale, `compare --label`, and the
store's schema migration."""

from __future__ import annotations

import json
import os
import pty
import select
import sqlite3
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

from tests.runs_support import REVIEW_MODULE, write_project
from tracegrade.cli import main
from tracegrade.rundir.store import SCHEMA_VERSION, ResultStore

ROOT = Path(__file__).resolve().parent.parent


LABELS = ["Would you send this answer?", {"id": "polite", "question": "Is it polite?"}]


def project(tmp_path: Path, questions=("paris",)) -> Path:
    config = write_project(
        tmp_path,
        questions=list(questions),
        target={"graders": ["tool_usage_grader"], "labels": LABELS},
    )
    (tmp_path / "data" / "graders.py").write_text(textwrap.dedent(REVIEW_MODULE))
    return config


def run(config: Path, capsys) -> str:
    assert main(["run", "--config", str(config), "--quiet"]) == 2  # the check left in Review
    out = capsys.readouterr().out
    assert "left in Review" in out
    return out.split("run ", 1)[1].split(" ", 1)[0]


def answers(tmp_path: Path, rows: list[dict], by: str | None = "ana") -> Path:
    path = tmp_path / "answers.yaml"
    path.write_text(yaml.safe_dump({**({"by": by} if by else {}), "answers": rows}))
    return path


def show_json(config: Path, run_id: str, tmp_path: Path, *extra: str) -> tuple[int, dict]:
    out = tmp_path / "show.json"
    code = main(["show", run_id, "--config", str(config), "--json", str(out), *extra])
    return code, json.loads(out.read_text())


def test_answers_file_resolves_review_changes_the_gate_and_shows_everywhere(tmp_path, capsys):
    config = project(tmp_path)
    run_id = run(config, capsys)
    rows = [
        {"question": "paris", "review": "escalation", "answer": "pass", "note": "policy allows"},
        {"question": "paris", "label": "polite", "answer": "yes", "note": "friendly"},
        {"question": "paris", "label": "would_you_send_this_answer", "answer": "no"},
    ]
    assert (
        main(["label", run_id, "--config", str(config), "--answers", str(answers(tmp_path, rows))])
        == 0
    )
    assert "3 answer(s) by ana" in capsys.readouterr().out

    # The gate now uses the person's decision: exit 0 instead of 2.
    markdown, junit = tmp_path / "r.md", tmp_path / "r.xml"
    code, report = show_json(
        config, run_id, tmp_path, "--markdown", str(markdown), "--junit", str(junit)
    )
    console = capsys.readouterr().out
    assert code == 0
    (question,) = report["questions"]
    (check,) = question["checks"]
    assert check["status"] == "pass" and check["decided_by"] == "ana"
    assert check["judged_status"] == "review" and check["decision_note"] == "policy allows"
    labels = {a["label"]: a for a in question["annotations"]}
    assert labels["polite"]["answer"] is True and labels["polite"]["note"] == "friendly"
    assert labels["polite"]["by"] == "ana" and labels["polite"]["created"]
    assert labels["would_you_send_this_answer"]["answer"] is False
    assert not any(a["stale"] for a in question["annotations"])
    assert "labels (answered by people):" in console
    assert "paris: polite = yes by ana" in console
    assert "escalation = pass by ana" in console
    assert "Labels (answered by people)" in markdown.read_text()
    props = {p.get("name"): p.get("value") for p in ET.parse(junit).getroot().iter("property")}
    assert props["label:polite"] == "yes by ana: friendly"

    # Re-grading keeps the annotations (they belong to the question, not to a grading).
    regraded = tmp_path / "regraded.json"
    assert main(["grade", run_id, "--config", str(config), "--json", str(regraded), "--quiet"]) == 0
    again = json.loads(regraded.read_text())["questions"][0]
    assert len(again["annotations"]) == 3 and again["checks"][0]["decided_by"] == "ana"

    # A later decision wins: failing the check fails the gate again (exit 2).
    fail = [{"question": "paris", "review": "escalation", "answer": "fail"}]
    assert (
        main(
            [
                "label",
                run_id,
                "--config",
                str(config),
                "--answers",
                str(answers(tmp_path, fail, "bo")),
            ]
        )
        == 0
    )
    code, report = show_json(config, run_id, tmp_path)
    assert code == 2
    assert report["questions"][0]["checks"][0]["decided_by"] == "bo"


def test_a_label_on_a_changed_answer_is_stale_and_not_applied(tmp_path, capsys):
    config = project(tmp_path)
    run_id = run(config, capsys)
    rows = [{"question": "paris", "review": "escalation", "answer": "pass"}]
    assert (
        main(["label", run_id, "--config", str(config), "--answers", str(answers(tmp_path, rows))])
        == 0
    )
    assert show_json(config, run_id, tmp_path)[0] == 0
    # The question's stored answer changes (as when a resumed or re-run question replaces it).
    store = tmp_path / "runs" / run_id / "results.sqlite"
    with sqlite3.connect(store) as db:
        db.execute("UPDATE questions SET response = 'It rains in Paris.'")
    capsys.readouterr()
    code, report = show_json(config, run_id, tmp_path)
    assert code == 2  # the decision was about another answer: Review stands
    (annotation,) = report["questions"][0]["annotations"]
    assert annotation["stale"] is True
    assert report["questions"][0]["checks"][0]["status"] == "review"
    assert "STALE" in capsys.readouterr().out


def test_a_bad_answers_file_is_exit_4_naming_line_and_key_and_writes_nothing(tmp_path, capsys):
    config = project(tmp_path)
    run_id = run(config, capsys)
    rows = [
        {"question": "paris", "label": "polite", "answer": "yes"},
        {"question": "pariss", "label": "polite", "answer": "yes"},
        {"question": "paris", "label": "tone", "answer": "yes"},
        {"question": "paris", "label": "polite", "answer": "maybe"},
        {"question": "paris", "review": "nope", "answer": "pass"},
    ]
    path = answers(tmp_path, rows)
    assert main(["label", run_id, "--config", str(config), "--answers", str(path)]) == 4
    err = capsys.readouterr().err
    assert "no question 'pariss'" in err and "no checklist item 'tone'" in err
    assert "answer must be yes/no" in err and "no rubric check 'nope' in Review" in err
    assert f"{path}:" in err and "/answers/1/question" in err
    with ResultStore.open_readonly(tmp_path / "runs" / run_id) as store:
        assert store.load_annotations() == []  # checked whole: nothing written


def _talk(argv: list[str], script: list[tuple[str, str]], cwd: Path) -> tuple[int, str]:
    """Run `argv` on a pty; for each (prompt, reply) wait for the prompt, then type the reply."""
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRACEGRADE_USER": "carol"}
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env)
    os.close(slave)
    seen = b""
    everything = []

    def read_until(text: str, timeout: float = 60.0) -> None:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while text.encode() not in seen:
            assert time.monotonic() < deadline, f"waited for {text!r}; got:\n{seen.decode()}"
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    seen += os.read(master, 4096)
                except OSError:
                    break

    for prompt, reply in script:
        read_until(prompt)
        everything.append(seen)
        seen = b""  # the next prompt must come after this reply
        os.write(master, reply.encode() + b"\n")
    code = proc.wait(timeout=60)
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 0.2)
            if not ready:
                break
            chunk = os.read(master, 4096)
            if not chunk:
                break
            seen += chunk
    except OSError:
        pass
    os.close(master)
    return code, b"".join([*everything, seen]).decode(errors="replace")


def test_interactive_label_in_a_terminal(tmp_path, capsys):
    config = project(tmp_path)
    run_id = run(config, capsys)
    entry = "import sys; from tracegrade.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = [sys.executable, "-c", entry, "label", run_id, "--config", str(config)]
    code, transcript = _talk(
        argv,
        [
            ("Would you send this answer? [y/n/s=skip/q=quit]", "x"),  # not an answer: asked again
            ("answer y, n, s or q", "y"),
            ("note (enter for none):", "short and right"),
            ("Is it polite? [y/n/s=skip/q=quit]", "s"),
            ("rubric check escalation is in Review", "p"),
            ("note (enter for none):", ""),
        ],
        tmp_path,
    )
    assert code == 0, transcript
    # What a person needs to judge the question was shown first.
    assert "=== [1/1] t / paris ===" in transcript
    assert "It is sunny in Paris." in transcript
    assert "#1 lookup(" in transcript and "-> ok" in transcript
    assert "tool_usage_grader: pass" in transcript
    assert "2 answer(s) stored" in transcript
    code, report = show_json(config, run_id, tmp_path)
    assert code == 0
    labels = {a["label"]: a for a in report["questions"][0]["annotations"]}
    assert set(labels) == {"would_you_send_this_answer", "review:escalation"}
    assert labels["would_you_send_this_answer"]["by"] == "carol"
    assert labels["would_you_send_this_answer"]["note"] == "short and right"


def test_compare_uses_a_label_as_the_pass_fail_signal(tmp_path, capsys):
    config = project(tmp_path)
    base = run(config, capsys)
    cand = run(config, capsys)
    for run_id, answer in ((base, "yes"), (cand, "no")):
        rows = [{"question": "paris", "label": "polite", "answer": answer}]
        path = answers(tmp_path, rows)
        assert main(["label", run_id, "--config", str(config), "--answers", str(path)]) == 0
    capsys.readouterr()
    # Without the label the two runs are the same; with it the candidate regressed.
    assert main(["compare", base, cand, "--config", str(config)]) == 0
    out = tmp_path / "cmp.json"
    code = main(
        ["compare", base, cand, "--config", str(config), "--label", "polite", "--json", str(out)]
    )
    assert code == 2
    assert "label:polite" in capsys.readouterr().out


def test_store_schema_1_migrates_to_2_keeping_its_rows(tmp_path, capsys):
    config = project(tmp_path)
    run_id = run(config, capsys)
    path = tmp_path / "runs" / run_id / "results.sqlite"
    with sqlite3.connect(path) as db:  # as a release before annotations wrote it
        db.execute("DROP TABLE annotations")
        db.execute("PRAGMA user_version = 1")
    # Reading never changes the file; opening for writing migrates it.
    with ResultStore.open_readonly(path.parent) as store:
        assert store.load_annotations() == [] and len(store.load_scores()) == 1
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 1
    with ResultStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION >= 2
        store.add_annotation(
            target="t", question_id="paris", label="polite", answer=True, author="x"
        )
        assert [a.label for a in store.load_annotations()] == ["polite"]


def test_labels_and_the_person_who_decided_show_on_the_html_page(tmp_path, capsys):
    from playwright.sync_api import expect, sync_playwright

    from tests.test_html_browser import CHROMIUM as chromium

    assert chromium.exists(), "apt-get install -y chromium (./scripts/test.sh installs it)"
    config = project(tmp_path)
    run_id = run(config, capsys)
    rows = [
        {"question": "paris", "review": "escalation", "answer": "pass", "note": "allowed"},
        {"question": "paris", "label": "polite", "answer": "no", "note": "curt"},
    ]
    assert (
        main(["label", run_id, "--config", str(config), "--answers", str(answers(tmp_path, rows))])
        == 0
    )
    page_file = tmp_path / "report.html"
    assert main(["show", run_id, "--config", str(config), "--html", str(page_file)]) == 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium), headless=True)
        try:
            page = browser.new_page()
            page.goto(f"{page_file.resolve().as_uri()}#q=t/paris")
            expect(page.locator("#question-h")).to_contain_text("paris")
            labels = page.locator("#labels tbody tr")
            expect(labels).to_have_count(2)
            text = page.inner_text("#labels")
            assert "polite" in text and "no" in text and "ana" in text and "curt" in text
            assert "review:escalation" in text and "pass" in text
            check = page.inner_text("table.checks tr.check")
            assert "resolved by a person (ana)" in check
        finally:
            browser.close()
