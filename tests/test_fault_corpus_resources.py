"""The fault campaign's secrets and resource cases, kept as a corpus the suite runs.

Secrets: shapes the patterns once did not know (a URL's userinfo password, an AWS secret access
key in free text, a password told in prose, a judge reply echoing one) and the values of the
process's secret-named environment variables, each through every channel of the policy (plain
text, tool arguments, span attributes, the store, the judge wire and its reply). The whole run
(every file, report, console and wire) is scanned by tests/test_redaction_e2e.py.

Hangs and unbounded resources: each case a real run or call that once never ended or grew without
bound, now cut with the reason named.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import openai_server as loopback
from tests.openai_server import Answer, gzip_bomb, huge, rate_limited
from tests.test_redaction_policy import _judge_channel, _span_channel, _store_channel
from tracegrade import JudgeRequest, ProviderError, build_provider
from tracegrade.redaction import REDACTED, RedactionPolicy

openai_server = loopback.openai_server

REPO = Path(__file__).resolve().parents[1]


# -- secrets written in clear ---------------------------------------------------------------
@dataclass(frozen=True)
class SecretCase:
    name: str
    planted: str
    secret: str
    """What must not survive in any channel."""
    kept: str
    """What must survive (the policy does not eat the text around a secret)."""
    env: tuple[tuple[str, str], ...] = ()
    """Environment variables set when the policy is built."""
    config_env: tuple[str, ...] = ()
    """The config's `redaction.env`."""


SECRET_CASES = [
    SecretCase(
        "url-userinfo-postgres",
        "connect failed: postgres://admin:Pg4dm1nUserinfo@db.internal:5432/prod (timeout)",
        "Pg4dm1nUserinfo",
        "postgres://admin:(redacted)@db.internal:5432/prod",
    ),
    SecretCase(
        "url-userinfo-empty-user",
        "cache at redis://:R3disOnlyPassw@cache.internal:6379/0",
        "R3disOnlyPassw",
        "redis://:(redacted)@cache.internal",
    ),
    SecretCase(
        "url-userinfo-at-in-password",
        "dsn=mysql://app:p@ssW0rdWithAt@db:3306/x",
        "ssW0rdWithAt",
        "@db:3306/x",
    ),
    SecretCase(
        "aws-secret-key-free-text",
        "keys AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY in the log",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "in the log",
    ),
    SecretCase(
        "aws-secret-key-csv",
        "AKIAIOSFODNN7EXAMPLE,je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
        "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
        ",",
    ),
    SecretCase(
        "prose-my-password-is",
        "Sure! By the way my password is Hunter2Prose, keep it safe.",
        "Hunter2Prose",
        "keep it safe.",
    ),
    SecretCase(
        "prose-api-key-was",
        "The API key was: ProseApiKey991 and it worked",
        "ProseApiKey991",
        "and it worked",
    ),
    SecretCase(
        "prose-secret-is-quoted",
        "the secret is 'Quoted-Secret-55'",
        "Quoted-Secret-55",
        "the secret is",
    ),
    SecretCase(
        "env-password-value",
        "logged in as ana with PlainEnvValue-1 at 10:02",
        "PlainEnvValue-1",
        "at 10:02",
        env=(("CASE_DB_PASSWORD", "PlainEnvValue-1"),),
    ),
    SecretCase(
        "env-token-value-glued",
        "header=xxPlainTokenValue2yy",
        "PlainTokenValue2",
        "header=",
        env=(("SERVICE_TOKEN", "PlainTokenValue2"),),
    ),
    SecretCase(
        "env-key-value-with-quote",
        'json {"v": "quo\\"ted-KeyValue3"}',
        'quo\\"ted-KeyValue3',
        "json",
        env=(("VENDOR_API_KEY", 'quo"ted-KeyValue3'),),
    ),
    SecretCase(
        "env-secret-value-lowercase-name",
        "signing with SigningSecretValue4",
        "SigningSecretValue4",
        "signing with",
        env=(("app_signing_secret", "SigningSecretValue4"),),
    ),
    SecretCase(
        "env-config-listed-glob",
        "vendor code CfgListedValue-5 accepted",
        "CfgListedValue-5",
        "accepted",
        env=(("ACME_VENDOR_CODE", "CfgListedValue-5"),),
        config_env=("ACME_*",),
    ),
]


def _channels(policy: RedactionPolicy, text: str, tmp) -> dict[str, str]:
    return {
        "text": policy.text(text),
        "arguments": json.dumps(policy.arguments({"note": text, "nested": [{"x": text}]})),
        "span": _span_channel(text, policy=policy),
        "store": _store_channel(text, tmp, policy=policy),
        "judge": _judge_channel(text, policy=policy),
    }


@pytest.mark.parametrize("case", SECRET_CASES, ids=lambda c: c.name)
def test_secret_shape_is_redacted_in_every_channel(case, tmp_path, monkeypatch):
    for name, value in case.env:
        monkeypatch.setenv(name, value)
    policy = RedactionPolicy(env=case.config_env) if case.config_env else RedactionPolicy()
    channels = _channels(policy, case.planted, tmp_path)
    for channel, out in channels.items():
        assert case.secret not in out, (channel, out)
    assert case.kept in channels["text"] and REDACTED in channels["text"]


@pytest.mark.parametrize(
    "text",
    [
        "commit 3f786850e387550fdab836ed7e6dc881de23001b is on main",  # a git SHA: one case
        "the token is expired; the password is required",  # error messages stay readable
        "see https://example.com:8080/path?q=1 and http://host/a@b",  # no userinfo
        "TOKENIZERS_PARALLELISM is false",
    ],
)
def test_ordinary_text_like_a_new_shape_is_kept(text, monkeypatch):
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")  # short values are not masked
    monkeypatch.setenv("EMPTY_TOKEN", "")
    assert RedactionPolicy().text(text) == text


# -- hangs and unbounded resources ----------------------------------------------------------
# An agent whose one async node does what the question says, in the event loop.
HANG_AGENT = """
import asyncio
import os
import signal
import time

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition


async def agent(state):
    text = state["messages"][-1].content
    if text == "spin":  # CPU-bound, never awaits
        while True:
            pass
    if text.startswith("block "):  # a blocking call in the loop
        time.sleep(float(text.split()[1]))
    if text == "spin and swallow":  # a loop that even swallows the interruption
        while True:
            try:
                while True:
                    pass
            except BaseException:
                pass
    if text == "stop":  # the process stops, as one stuck in native code does
        os.kill(os.getpid(), signal.SIGSTOP)
    if text.startswith("big "):  # a tool call, its result, the answer: that many characters each
        call = {"name": "store", "args": {"blob": "b" * int(text.split()[1])}, "id": "c1"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}
    if state["messages"][-1].type == "tool":  # the receipt of "big N"
        return {"messages": [AIMessage(content="done " + "a" * len(text))]}
    await asyncio.sleep(0.3)
    return {"messages": [AIMessage(content="done: " + text)]}


@tool
def store(blob: str) -> str:
    "Store a blob; answers with a receipt as long."
    return "r" * len(blob)


def build_graph():
    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([store]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(name="hang")
"""

HANG_GRADERS = """
import asyncio
import time

from tracegrade.graders.code import grader


@grader(name="sleeps_sync")
def sleeps_sync(output):
    if "sleep" in output:
        time.sleep(10**6)
    return True


@grader(name="sleeps_async")
async def sleeps_async(output):
    if "sleep" in output:
        await asyncio.sleep(10**6)
    return True


@grader(name="spins_sync")
def spins_sync(output):
    if "spin-grade" in output:
        while True:
            pass
    return True
"""


def hang_project(root: Path, questions: list[str], **target: Any) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "agent.py").write_text(HANG_AGENT, encoding="utf-8")
    data = root / "data"
    data.mkdir(exist_ok=True)
    rows = [
        {"id": f"q{i}", "input": text, "expected": {"keyword": "done"}}
        for i, text in enumerate(questions)
    ]
    (data / "questions.yaml").write_text(yaml.safe_dump({"questions": rows}), encoding="utf-8")
    (data / "graders.py").write_text(HANG_GRADERS, encoding="utf-8")
    spec = {
        "agent": "agent.py:build_graph",
        "dataset": "data/questions.yaml",
        "timeout_s": 5,
        "concurrency": 4,
        "graders": [{"id": "contains", "match_on": ["expected", "keyword"]}],
        **target,
    }
    config = {"version": 1, "runs_dir": "runs", "targets": {"t": spec}}
    path = root / "tracegrade.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def run_cli(config: Path, *args: str, limit_s: float = 240) -> tuple[int, str, float, Path]:
    """The real command in its own process: (exit code, console, seconds to exit, report).
    A run that hangs is killed at `limit_s` and fails the test."""
    report = config.parent / "report.json"
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tracegrade",
            "run",
            "--config",
            str(config),
            "--json",
            str(report),
            *args,
        ],
        cwd=REPO,
        env={
            **os.environ,
            "PYTHONPATH": str(REPO),
        },  # the reference agents; tracegrade is installed
        capture_output=True,
        text=True,
        timeout=limit_s,
    )
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started, report


def errors_by_question(report: Path) -> dict[str, str | None]:
    data = json.loads(report.read_text(encoding="utf-8"))
    return {q["id"]: q.get("error") for q in data["questions"]}


@dataclass(frozen=True)
class HangCase:
    name: str
    questions: list[str]
    target: dict[str, Any]
    args: tuple[str, ...]
    code: int
    errored: dict[str, str]
    """Question id -> a fragment its error must hold; every other question has no error."""
    console: str = ""
    """A fragment the console must hold (the run that cannot go on names the question)."""
    bound_s: float = 90
    """Seconds to exit, generous for a loaded machine (each hung for ever before)."""


HANG_CASES = [
    HangCase(
        "busy-loop-in-process",
        ["spin", "fine", "fine too"],
        {},
        (),
        3,
        {"q0": "held the event loop"},
    ),
    HangCase(
        "busy-loop-1-worker",
        ["spin", "fine", "fine too"],
        {},
        ("--workers", "1"),
        3,
        {"q0": "held the event loop"},
    ),
    HangCase(
        "busy-loop-2-workers",
        ["spin", "fine", "fine too", "fine again"],
        {},
        ("--workers", "2"),
        3,
        {"q0": "held the event loop"},
    ),
    HangCase(
        "blocked-loop-is-not-the-waiters-fault",
        ["block 8", "fine", "fine too", "fine again"],
        {},
        (),
        3,
        {"q0": "held the event loop"},
        console="question 'q0' held the event loop for",
    ),
    HangCase(
        "loop-held-for-good-ends-the-run",
        ["spin and swallow", "fine"],
        {},
        (),
        3,
        {},
        console="question 'q0' has held the event loop",
    ),
    HangCase(
        "sigstopped-worker",
        ["stop", "fine", "fine too", "fine again"],
        # two workers of one question each (with concurrency 1 the run has no worker process,
        # and a stopped run process can do nothing)
        {"concurrency": 2, "grading_deadline_s": 5},
        ("--workers", "2"),
        3,
        {"q0": "stopped answering"},
        bound_s=150,
    ),
    HangCase(
        "sync-grader-sleeps-forever",
        ["sleep", "fine"],
        {"grading_deadline_s": 3},
        (),
        3,
        {},
        console="grading deadline",
    ),
    HangCase(
        "async-grader-sleeps-forever",
        ["sleep", "fine"],
        {"grading_deadline_s": 3},
        (),
        3,
        {},
        console="grading deadline",
    ),
    HangCase(
        "sync-grader-spins",
        ["spin-grade", "fine"],
        {"grading_deadline_s": 3},
        (),
        3,
        {},
        console="grading deadline",
    ),
]


_BASELINES: dict[tuple[str, ...], float] = {}


def baseline_s(root: Path, args: tuple[str, ...]) -> float:
    """Seconds a run of one fine question takes with `args`, measured once per module on this
    machine now: start-up (and worker processes) stretch with the machine's load."""
    if args not in _BASELINES:
        config = hang_project(root / ("baseline" + "-".join(args)), ["fine"])
        code, console, elapsed, _ = run_cli(config, *args)
        assert code == 0, console
        _BASELINES[args] = elapsed
    return _BASELINES[args]


@pytest.mark.parametrize("case", HANG_CASES, ids=lambda c: c.name)
def test_a_former_hang_ends_with_its_reason(case, tmp_path):
    config = hang_project(tmp_path, case.questions, **case.target)
    code, console, elapsed, report = run_cli(config, *case.args)
    assert code == case.code, console
    # Relative to a fine run measured alike: the hang's own seconds plus room for the load.
    bound = case.bound_s + 3 * baseline_s(tmp_path, case.args)
    assert elapsed < bound, (elapsed, bound, console)
    if case.console:
        assert case.console in console, console
    if report.is_file():
        errors = errors_by_question(report)
        for qid in errors:
            if qid in case.errored:
                assert case.errored[qid] in (errors[qid] or ""), (qid, errors)
            else:  # waiting behind a held loop is not a question's fault
                assert errors[qid] is None, (qid, errors)
    else:
        assert case.console, console  # only a run that cannot go on ends without its report


def test_the_page_of_a_run_with_10_mb_answers_opens_with_the_cuts_noted(tmp_path):
    """Three questions whose tool argument, tool result and answer are 10 MB each: the page
    embeds each cut with a note (the store keeps the whole answer) and opens in chromium."""
    from playwright.sync_api import expect, sync_playwright

    from tests.test_html_browser import CHROMIUM
    from tracegrade.rundir.store import ResultStore

    size = 10_000_000
    # the agent's own timeout generous: this test is about the page, and under stress --cpu 6
    # (load 15) each question of 10 MB took past the default 5 s of its own time
    config = hang_project(tmp_path, [f"big {size}"] * 3 + ["fine"], timeout_s=600)
    page_file = tmp_path / "page.html"
    code, console, _, _ = run_cli(config, "--html", str(page_file), limit_s=900)
    assert code == 0, console
    assert page_file.stat().st_size < 2_000_000
    (run_dir,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    store = ResultStore.open_readonly(run_dir)
    try:
        answers = [q.answer.response for q in store.load_runs()]
    finally:
        store.close()
    longest = max(len(a) for a in answers)
    assert longest == size + len("done ")  # the store keeps the whole answer
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(180_000)  # a loaded machine: generous, it only must open
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_file.resolve().as_uri())
            rows = page.eval_on_selector_all(
                "#question-table tbody tr", "rows => rows.map(r => r.dataset.q)"
            )
            assert sorted(rows) == ["q0", "q1", "q2", "q3"]
            page.goto(f"{page_file.resolve().as_uri()}#q=t/q0")
            expect(page.locator("#question-h")).to_contain_text("q0", timeout=180_000)
            body = page.inner_text("body")
            assert f"[cut: {longest:,} characters in all; the run's store" in body
            assert "the run's trace file keeps it whole" in body
            page.screenshot(path=str(tmp_path / "big-answers.png"), full_page=False)
            assert errors == []
        finally:
            browser.close()


# -- judges that answer too much or make the run wait -----------------------------------------
REQUEST = JudgeRequest(messages=({"role": "user", "content": "grade this"},))


@dataclass(frozen=True)
class JudgeCase:
    name: str
    answer: Callable[[], Answer]
    settings: dict[str, Any]
    error: str
    """A fragment of the call's error."""
    peak_mb: float = 60
    """Peak memory (Python allocations) the call may reach."""


JUDGE_CASES = [
    JudgeCase("response-50mb-declared", lambda: huge(50_000_000), {}, "max_response_bytes"),
    JudgeCase(
        "response-50mb-undeclared",
        lambda: huge(50_000_000, declared=False),
        {},
        "after decompression",
    ),
    JudgeCase("gzip-bomb-200mb", lambda: gzip_bomb(200_000_000), {}, "after decompression"),
    JudgeCase(
        "response-over-a-configured-cap",
        lambda: huge(5_000),
        {"max_response_bytes": 2_000},
        "2,000 bytes",
    ),
    JudgeCase(
        "429-retry-after-100000",
        lambda: rate_limited(100_000),
        {"max_attempts": 4},
        "treated as an outage",
    ),
    JudgeCase(
        "429-total-wait-bounded",
        lambda: rate_limited(0.4),
        {"max_attempts": 20, "circuit_breaker_failures": 1000, "max_total_wait_s": 1},
        "max_total_wait_s",
    ),
]


@pytest.mark.parametrize("case", JUDGE_CASES, ids=lambda c: c.name)
def test_a_judge_answer_that_would_exhaust_the_run_fails_that_call(case, openai_server):
    openai_server.default = case.answer()
    provider = build_provider(
        {"base_url": openai_server.base_url, "model": "m", "max_attempts": 1, **case.settings}
    )
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(ProviderError) as raised:
            asyncio.run(provider.acomplete(REQUEST))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert case.error in str(raised.value)
    assert peak < case.peak_mb * 1e6, peak
    assert time.monotonic() - started < 30  # each once waited minutes, or for ever


def test_a_judge_answering_429_on_every_request_opens_the_breaker(openai_server):
    openai_server.default = rate_limited(0.01)
    provider = build_provider(
        {"base_url": openai_server.base_url, "model": "m", "circuit_breaker_failures": 3}
    )
    with pytest.raises(ProviderError):
        asyncio.run(provider.acomplete(REQUEST))
    assert provider.breaker.is_open
    sent = len(openai_server.requests)
    with pytest.raises(ProviderError, match="circuit breaker"):
        asyncio.run(provider.acomplete(REQUEST))
    assert len(openai_server.requests) == sent  # not attempted


def test_a_run_whose_judge_answers_429_retry_after_100000_ends_soon(tmp_path, openai_server):
    openai_server.default = rate_limited(100_000)
    config = hang_project(tmp_path, [f"fine {i}" for i in range(12)])
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["judge"] = {
        "provider": "openai-compatible",
        "base_url": openai_server.base_url,
        "model": "m",
    }
    data["targets"]["t"]["graders"].append("relevance_grader")
    data["targets"]["t"]["grading_module"] = False
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    code, console, elapsed, _ = run_cli(config)
    assert code == 3, console
    assert "HTTP 429" in console or "circuit breaker" in console, console
    assert elapsed < 90, elapsed  # 902 s before, for 24 questions


def test_a_code_grader_that_never_returns_gets_the_judges_breaker(tmp_path):
    """A grader that sleeps for ever costs its whole grading deadline on the first questions
    only: after the judges' breaker count of consecutive misses, the rest of its work is an
    error at once, naming why (1,000 such questions once took about 10 hours to exit 3)."""
    from tracegrade.judging.breaker import DEFAULT_BREAKER_FAILURES

    questions = 3 + DEFAULT_BREAKER_FAILURES
    config = hang_project(
        tmp_path, ["sleep"] * questions, grading_deadline_s=1, concurrency=1, timeout_s=30
    )
    code, console, _elapsed, report = run_cli(config)
    assert code == 3, console
    reasons = [
        g["reason"]
        for q in json.loads(report.read_text())["questions"]
        for g in q["graders"]
        if g["id"] == "sleeps_sync"
    ]
    assert len(reasons) == questions
    abandoned = [r for r in reasons if "abandoned" in r]
    refused = [r for r in reasons if "opened its circuit breaker" in r]
    assert len(abandoned) == DEFAULT_BREAKER_FAILURES and len(refused) == 3, reasons
    assert f"on {DEFAULT_BREAKER_FAILURES} consecutive questions" in refused[0]
