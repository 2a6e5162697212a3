"""The examples a user copies from: every example dataset and config validates, every target's
factories load and build a named graph, the scripts cover the datasets, the examples exercise
every deterministic grader and dataset feature, and (end to end, through `tracegrade run` and
the demo script) the passing target exits 0 while the regressed one exits 2 with each planted
mistake named in its report."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from tracegrade import load_config, load_dataset
from tracegrade.graders import load_grading_module, load_registry

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DATASETS = sorted((EXAMPLES / "datasets").glob("*.yaml"))
CONFIGS = [EXAMPLES / "tracegrade.yaml", EXAMPLES / "tracegrade.judges.yaml"]
AGENT_OF_DATASET = {
    "support_desk": "agents.support_desk",
    "content_agent": "agents.content_agent",
    "refund_desk": "agents.refund_desk",
}


def all_targets():
    return [t for path in CONFIGS for t in load_config(path).targets.values()]


@pytest.mark.parametrize("path", DATASETS, ids=lambda p: p.name)
def test_example_dataset_validates(path):
    dataset = load_dataset(path)
    assert dataset.questions


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_example_config_validates(path):
    config = load_config(path)
    assert config.targets


@pytest.mark.parametrize("target", all_targets(), ids=lambda t: t.name)
def test_every_target_builds_a_named_graph_on_a_fresh_environment(target):
    factory, make_environment = target.load_factory(), target.load_environment_factory()
    environment = make_environment()
    try:
        graph = factory(environment=environment)
        assert graph.name == target.dataset.stem  # support_desk / content_agent
        for question in load_dataset(target.dataset).questions:
            assert question.id  # the dataset the target names loads
    finally:
        environment.close()


@pytest.mark.parametrize("path", DATASETS, ids=lambda p: p.name)
def test_scripts_cover_every_question_of_their_dataset(path):
    """The scripted model answers by the first user message: a question the script does not
    know would get the model's fallback answer instead of the scripted behaviour."""
    agent = importlib.import_module(AGENT_OF_DATASET[path.stem])
    firsts = [
        next(m["content"] for m in q.input_messages() if m["role"] == "user")
        for q in load_dataset(path).questions
    ]
    assert sorted(firsts) == sorted(agent.QUESTIONS)
    for script in ("good", "regressed"):
        assert set(agent.QUESTIONS) <= set(agent.SCRIPTS[script])


def test_the_examples_exercise_every_deterministic_grader():
    registry = load_registry()
    deterministic = {i for i in registry.ids() if not registry.get(i).llm}
    attached = {g.id for t in all_targets() for g in t.graders}
    module_graders = load_grading_module(EXAMPLES / "datasets" / "graders.py")
    assert module_graders, "examples/datasets/graders.py defines no @grader function"
    assert deterministic <= attached, f"no example attaches {sorted(deterministic - attached)}"


def test_the_example_datasets_exercise_every_dataset_feature():
    questions = [q.row() for path in DATASETS for q in load_dataset(path).questions]
    expectations = [e for q in questions for e in q.get("expected_tools", [])]
    state = [
        a for q in questions for a in q.get("metadata", {}).get("state", {}).get("assertions", [])
    ]
    features = {
        "args": any("args" in e for e in expectations),
        "after": any("after" in e for e in expectations),
        "should_run false": any(e["should_run"] is False for e in expectations),
        "qualified id": any(":" in e["tool"] for e in expectations),
        "sub-agent tool": any(e["tool"].startswith("researcher:") for e in expectations),
        "multi-turn": any(isinstance(q.get("input"), list) for q in questions),
        "turns": any("turns" in q for q in questions),
        "resume": any("resume" in q for q in questions),
        "expected_interrupts": any("expected_interrupts" in q for q in questions),
        "explicit split": any("split" in q for q in questions),
        "bundle": all("bundle" in q for q in questions),
        "tags": all(q.get("tags") for q in questions),
        "rubric_ref": any("rubric_ref" in q for q in questions),
        "trajectory": any("trajectory" in q for q in questions),
        "expected.format json": any(
            q.get("expected", {}).get("format") == "json" for q in questions
        ),
    }
    for kind, checks in (
        ("sql", ("equals", "rows", "count")),
        ("key", ("equals", "exists", "absent")),
    ):
        for check in checks:
            features[f"state {kind} {check}"] = any(a["kind"] == kind and check in a for a in state)
    raw = [p.read_text() for p in DATASETS]
    features["splits rule"] = any("rule: hash" in text for text in raw)
    features["disabled"] = any("disabled: true" in text for text in raw)
    missing = [name for name, present in features.items() if not present]
    assert not missing, f"the example datasets do not exercise: {missing}"


def test_disabled_questions_are_not_run_and_need_no_script():
    dataset = load_dataset(EXAMPLES / "datasets" / "support_desk.yaml")
    assert "reschedule_retired" not in [q.id for q in dataset.questions]


def test_the_judged_target_attaches_judges_and_a_provider():
    config = load_config(EXAMPLES / "tracegrade.judges.yaml")
    (target,) = config.targets.values()
    registry = load_registry()
    assert any(registry.get(g.id).llm for g in target.graders)
    assert config.judge["base_url"].startswith("http://127.0.0.1")


def test_one_environment_per_question_in_the_example_config():
    """The factories the config names give a fresh database each call."""
    (target, *_) = load_config(CONFIGS[0]).targets.values()
    make_environment = target.load_environment_factory()
    first, second = make_environment(), make_environment()
    graph = target.load_factory()(environment=first)
    graph.invoke(
        {"messages": [HumanMessage("Please cancel booking B100. My email is ben@example.com.")]}
    )
    assert first.query("SELECT status FROM bookings WHERE id = 'B100'") == [("cancelled",)]
    assert second.query("SELECT status FROM bookings WHERE id = 'B100'") == [("confirmed",)]


# -- end to end: the demo and `tracegrade run` ---------------------------------------------------
TRACEGRADE = Path(sys.executable).with_name("tracegrade")


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """A copy of the examples and agents, so runs and reports land in a temp dir, not the repo."""
    root = tmp_path_factory.mktemp("checkout")
    ignore = shutil.ignore_patterns("__pycache__", "runs")
    for name in ("examples", "agents"):
        shutil.copytree(ROOT / name, root / name, ignore=ignore)
    return root


def failing(report: dict) -> dict[str, dict[str, str]]:
    """question id -> {grader id: reason} of every grader that did not pass."""
    return {
        q["id"]: {g["id"]: g["reason"] for g in q["graders"] if g["passed"] is False}
        for q in report["questions"]
        if any(g["passed"] is False for g in q["graders"])
    }


@pytest.fixture(scope="module")
def demo(checkout) -> subprocess.CompletedProcess:
    out = checkout / "reports"
    env = {**os.environ, "TRACEGRADE_BIN": str(TRACEGRADE), "TRACEGRADE_DEMO_OUT": str(out)}
    env.pop("TRACEGRADE_DEMO_LATENCY", None)
    return subprocess.run(
        ["bash", str(checkout / "examples" / "demo.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_demo_exits_0_after_a_passing_and_a_regressed_run(demo):
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "support_desk            exited 0" in demo.stdout
    assert "support_desk_regressed  exited 2" in demo.stdout
    assert "refund_desk             exited 0" in demo.stdout
    assert "refund_desk_regressed   exited 2" in demo.stdout
    assert "support_desk_expensive  exited 0" in demo.stdout
    assert "compare --fail-on cost  exited 2 (the candidate costs more)" in demo.stdout


def test_the_demo_reports_each_questions_cost_and_fails_the_dearer_variant(demo, checkout):
    summary = (checkout / "reports" / "support_desk.md").read_text()
    assert "| `book_consultation` |" in summary and " in / " in summary and "| $0.0" in summary
    verdict = demo.stdout[demo.stdout.index("--fail-on cost:+20%") :]
    assert "allowed cost:+20%" in verdict and "book_consultation" in verdict
    compared = json.loads((checkout / "reports" / "compare_cost.json").read_text())
    assert compared["exit_code"] == 2 and compared["costs"]["cost"]["relative"] > 0.2


def test_the_demo_catches_a_refund_issued_without_asking(demo, checkout):
    report = json.loads((checkout / "reports" / "refund_desk_regressed.json").read_text())
    failures = failing(report)
    assert set(failures) == {"refund_with_approval", "refund_two_turns"}
    for reasons in failures.values():
        assert (
            "calls[1] interrupt: expected the run to stop and ask, it never did"
            in (reasons["trajectory_grader"])
        )
        assert "the run paused on 0 interrupts" in reasons["interrupt_grader"]
    assert "turn 2: " in failures["refund_two_turns"]["trajectory_grader"]
    passing = json.loads((checkout / "reports" / "refund_desk.json").read_text())
    assert all(q["passed"] for q in passing["questions"])


def test_the_demo_compare_names_exactly_the_four_regressed_questions(demo, checkout):
    reports = checkout / "reports"
    assert "compare                 exited 2" in demo.stdout
    data = json.loads((reports / "compare.json").read_text())
    assert data["exit_code"] == 2 and data["regressed"]
    newly = {q["id"]: q for q in data["questions"] if q["status"] == "newly_failing"}
    assert set(newly) == {
        "book_consultation",
        "book_without_check",
        "cancel_booking",
        "refund_over_limit",
    }
    assert all(q["status"] == "still_passing" for q in data["questions"] if q["id"] not in newly)
    changes = {
        qid: {(t["kind"], t["name"]): t["changed"] for t in q["tool_changes"]}
        for qid, q in newly.items()
    }
    assert changes["book_consultation"] == {
        ("changed", "book_appointment"): {"date": ["2026-12-03", "2026-12-04"]}
    }
    assert changes["book_without_check"] == {("disappeared", "check_availability"): {}}
    assert changes["cancel_booking"] == {("disappeared", "cancel_booking"): {}}
    assert changes["refund_over_limit"] == {
        ("disappeared", "escalate_to_human"): {},
        ("appeared", "issue_refund"): {},
    }
    assert data["mcnemar"]["pass_to_fail"] == 4 and data["mcnemar"]["fail_to_pass"] == 0
    assert data["composite_delta"]["high"] < 0
    assert "(disappeared)" in demo.stdout and "exact McNemar p = 0.125" in demo.stdout


def test_the_demo_run_compared_with_itself_exits_0(demo, checkout):
    report = checkout / "reports" / "support_desk.json"
    done = subprocess.run(
        [str(TRACEGRADE), "compare", str(report), str(report)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "9 question(s) compared" in done.stdout
    assert "newly failing" not in done.stdout
    assert "verdict: no regression" in done.stdout


def test_the_passing_target_passes_every_grader(demo, checkout):
    report = json.loads((checkout / "reports" / "support_desk.json").read_text())
    assert report["gate"]["exit_code"] == 0
    assert failing(report) == {}
    assert len(report["questions"]) == 9


def test_the_regressed_report_names_each_planted_mistake(demo, checkout):
    reports = checkout / "reports"
    report = json.loads((reports / "support_desk_regressed.json").read_text())
    assert report["gate"]["exit_code"] == 2
    failures = failing(report)
    # Exactly the four questions with planted mistakes fail; the other five are untouched.
    assert set(failures) == {
        "book_consultation",
        "book_without_check",
        "cancel_booking",
        "refund_over_limit",
    }
    # Wrong argument: the executed call's wrong date is named, and the row it left.
    assert "date='2026-12-04'" in failures["book_consultation"]["tool_usage_grader"]
    assert "2026-12-04" in failures["book_consultation"]["state_grader"]
    # Missing step: the check that never ran.
    assert "check_availability" in failures["book_without_check"]["tool_usage_grader"]
    # Claimed but not done: the missing call, the unchanged row, the unbacked claim.
    assert "cancel_booking" in failures["cancel_booking"]["tool_usage_grader"]
    assert "'confirmed'" in failures["cancel_booking"]["state_grader"]
    assert "cancelled" in failures["cancel_booking"]["claims_match_record"]
    # Forbidden tool: the call that must not run, and the refund it left behind.
    assert "issue_refund" in failures["refund_over_limit"]["tool_usage_grader"]
    assert "refund:B101" in failures["refund_over_limit"]["state_grader"]
    # The trajectories: the argument that differed, and the forbidden tool that started.
    assert (
        "date expected '2026-12-03', got '2026-12-04'"
        in (failures["book_consultation"]["trajectory_grader"])
    )
    assert (
        "`issue_refund`: forbidden, started 1 time"
        in (failures["refund_over_limit"]["trajectory_grader"])
    )

    markdown = (reports / "support_desk_regressed.md").read_text()
    junit = ET.parse(reports / "support_desk_regressed.junit.xml").getroot()
    failed_cases = {
        case.get("name") for case in junit.iter("testcase") if case.find("failure") is not None
    }
    for question in failures:
        assert question in markdown
        assert any(question in name for name in failed_cases), (question, failed_cases)


def test_the_demo_writes_an_html_page_beside_the_other_reports(demo, checkout):
    for target in ("support_desk", "support_desk_regressed"):
        page = (checkout / "reports" / f"{target}.html").read_text(encoding="utf-8")
        assert page.startswith("<!doctype html>")
        assert '<script type="application/json" id="tg-data">' in page
        assert "cancel_booking" in page
    assert f"{'reports'}/support_desk_regressed.html" in demo.stdout


def test_the_demo_speaks_to_a_first_time_user(demo, checkout):
    out = demo.stdout
    assert "\x1b" not in out + demo.stderr  # not a terminal: no raw colour codes
    # The Markdown reports are files; the console report was printed once, by the runs.
    assert "## tracegrade run" not in out and (checkout / "reports" / "support_desk.md").is_file()
    regressed = json.loads((checkout / "reports" / "support_desk_regressed.json").read_text())
    tail = out.rstrip().splitlines()[-6:]
    assert tail[0] == "==> what to run next"
    text = "\n".join(tail)
    assert "/support_desk_regressed.html" in text
    assert f"show --config examples/tracegrade.yaml {regressed['run_id']}" in text
    assert "run --config examples/tracegrade.yaml --target support_desk" in text
    assert "docs/running.md#reading-the-console" in text


@pytest.mark.parametrize(("no_color", "escapes"), [(None, True), ("1", False)])
def test_the_demo_colours_a_terminal_unless_no_color(no_color, escapes):
    import pty

    # The demo's heading helper, run on a real terminal (a pseudo-terminal).
    script = (EXAMPLES / "demo.sh").read_text()
    start, end = script.index("if [ -t 1 ]"), script.index("step() {")
    helper = script[start : script.index("\n", end)] + "\nstep hello\n"
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    if no_color is not None:
        env["NO_COLOR"] = no_color
    leader, follower = pty.openpty()
    done = subprocess.run(["bash", "-c", helper], stdout=follower, env=env, timeout=30)
    os.close(follower)
    printed = os.read(leader, 4096).decode()
    os.close(leader)
    assert done.returncode == 0 and "==> hello" in printed
    assert ("\x1b[1m" in printed) is escapes


def test_the_console_terms_are_explained(tmp_path):
    # Every term the console report uses is in the glossary of docs/running.md, and the
    # run command's --help explains the ones a first run shows.
    docs = (ROOT / "docs" / "running.md").read_text()
    glossary = docs[docs.index("### Reading the console") :]
    glossary = glossary[: glossary.index("\n- **Console** (always)")]
    for term in ("grading N", "pass bar", "must pass", "scored / skipped / errors / passed",
                 "composite", "objective", "errored", "degraded", "error budget",
                 "critical failures", "rule:", "worst questions", "trace", "notice:"):  # fmt: skip
        assert term in glossary, term
    done = subprocess.run(
        [str(TRACEGRADE), "run", "--help"], capture_output=True, text=True, timeout=60
    )
    for term in ("grading N", "composite", "objective", "degraded", "errored", "pass bar"):
        assert term in done.stdout, term


def test_the_content_agent_targets_catch_sub_agent_and_claim_mistakes(checkout, tmp_path):
    config = checkout / "examples" / "tracegrade.yaml"

    def run(target: str) -> tuple[int, dict]:
        report = tmp_path / f"{target}.json"
        done = subprocess.run(
            [
                str(TRACEGRADE),
                "run",
                "--config",
                str(config),
                "--target",
                target,
                "--quiet",
                "--json",
                str(report),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert report.exists(), done.stdout[-2000:] + done.stderr[-2000:]
        return done.returncode, json.loads(report.read_text())

    code, report = run("content_agent")
    assert (code, failing(report)) == (0, {})
    code, report = run("content_agent_regressed")
    failures = failing(report)
    assert code == 2
    assert set(failures) == {"draft_checkpointing", "publish_intro", "archive_old_news"}
    assert "researcher:search_docs" in failures["draft_checkpointing"]["tool_usage_grader"]
    assert "publish_article" in failures["publish_intro"]["tool_usage_grader"]
    assert "published" in failures["publish_intro"]["claims_match_record"]
    assert "delete_article" in failures["archive_old_news"]["tool_usage_grader"]


def test_the_judged_target_without_a_provider_is_incomplete_never_passed(checkout, tmp_path):
    """With no judge server listening, the judged target exits 3 and names the outage."""
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    source = (checkout / "examples" / "tracegrade.judges.yaml").read_text()
    config = checkout / "examples" / "judges_offline.yaml"
    # One attempt: the retries' backoff would only slow the test down.
    offline = source.replace("127.0.0.1:8080", f"127.0.0.1:{port}")
    config.write_text(offline.replace("max_attempts: 4", "max_attempts: 1"))
    report = tmp_path / "judged.json"
    done = subprocess.run(
        [
            str(TRACEGRADE),
            "run",
            "--config",
            str(config),
            "--limit",
            "1",
            "--quiet",
            "--json",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stdout[-2000:] + done.stderr[-2000:]
    (question,) = json.loads(report.read_text())["questions"]
    errored = {g["id"]: g["reason"] for g in question["graders"] if g["error"]}
    assert {"accuracy_grader", "groundedness_grader"} <= set(errored)
    assert all(f"127.0.0.1:{port}" in reason for reason in errored.values())
