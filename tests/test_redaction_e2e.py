"""No planted secret leaves a run in clear.

Every secret kind is planted in every channel an agent run has (tool arguments, tool results,
answers, exception messages of the agent, a tool and a grader, the question's input, the
target's policy and the question's context, what a judge answers). Then the real CLI runs and
re-grades with OTLP export to a loopback receiver and LLM judges against a loopback
OpenAI-compatible server, and every byte that left is read: every file under the runs
directory (results store, trace file, identity, judge cache), every report, the console, what
the OTLP receiver received and what the judge server received. Zero hits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

from tests import openai_server as loopback
from tests import otlp_receiver as otlp
from tests.openai_server import reply, score

ROOT = Path(__file__).resolve().parent.parent
openai_server = loopback.openai_server
otlp_receiver = otlp.otlp_receiver

PEM_LINES = ("MIIEpAIBAAKCAQEA7pemBodyLineOne", "QmFzZTY0UGVtQm9keUxpbmVUd28")
# The secret kinds as planted (free text), and the part of each that must never be seen.
PLANTED: dict[str, tuple[str, str]] = {
    "openai": (
        "sk-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2W3x4",
        "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0",
    ),
    "openai_project": (
        "sk-proj-Zx9_Yw8-Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe9Dc8Ba7",
        "Zx9_Yw8-Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe9Dc8Ba7",
    ),
    "aws": ("AKIAQWERTYUIOPASDFGH", "AKIAQWERTYUIOPASDFGH"),
    "github": ("ghp_abcdEFGHijklMNOPqrstUVWXyz0123456789", "abcdEFGHijklMNOPqrstUVWXyz01234"),
    "bearer": ("Authorization: Bearer bt0k3n.Abc-Def_Ghi~Jkl+Mno", "bt0k3n.Abc-Def_Ghi~Jkl+Mno"),
    "bearer_glued": ("xBearer gluedT0kenValue12345678", "gluedT0kenValue12345678"),
    "jwt": (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbmEifQ.c2lnbmF0dXJlLXZhbHVl",
        "eyJzdWIiOiJhbmEifQ.c2lnbmF0dXJlLXZhbHVl",
    ),
    "pem": (
        "-----BEGIN RSA PRIVATE KEY-----\n"
        + "\n".join(PEM_LINES)
        + "\n-----END RSA PRIVATE KEY-----",
        PEM_LINES[0],
    ),
    "pem_line_2": (PEM_LINES[1], PEM_LINES[1]),  # checked, not planted alone
    "password": ("password=Hunter2Plaintext", "Hunter2Plaintext"),
    "token": ("token=TokValuePlain77", "TokValuePlain77"),
    "secret": ("the secret: SecValuePlain88", "SecValuePlain88"),
    "url": ("https://api.test/login?user=ana&password=UrlPassw0rdValue", "UrlPassw0rdValue"),
    # A connection string's password (userinfo), an AWS secret access key in free text, a
    # password told in prose, and the values of secret-named environment variables of the run's
    # process (no pattern knows them: they are masked as exact values).
    "url_userinfo": (
        "postgres://admin:Pg4dm1nUserinfoPw@db.internal:5432/prod",
        "Pg4dm1nUserinfoPw",
    ),
    "aws_secret": (
        "aws creds AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    "prose": ("by the way my password is ProsePassw0rd77 ok", "ProsePassw0rd77"),
    "env_password": ("connected with EnvPlainValue-7731x", "EnvPlainValue-7731x"),
    "env_configured": ("the vendor code is CfgListedValue-5521", "CfgListedValue-5521"),
}
# The run's environment: a secret-named variable, and one only the config's `redaction.env`
# names.
ENVIRONMENT = {
    "LEAKY_DB_PASSWORD": "EnvPlainValue-7731x",
    "LEAKY_VENDOR_CODE": "CfgListedValue-5521",
}
NAMED = {"api_key": "NamedArgValue42", "db_password": "NamedArgValue43"}


def blob(channel: str) -> str:
    kinds = [k for k in PLANTED if k != "pem_line_2"]
    return f"[{channel}] " + " | ".join(PLANTED[k][0] for k in kinds)


def needles() -> dict[str, str]:
    out = {kind: core for kind, (_, core) in PLANTED.items()}
    out.update({f"argument {k}": v for k, v in NAMED.items()})
    return out


AGENT = """
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from agents.scripted import ScriptedChatModel, call, say

BLOBS = BLOBS_REPR
INPUTS = INPUTS_REPR
NAMED = NAMED_REPR


def _crash(messages):
    raise RuntimeError("model failed: " + BLOBS["agent_exception"])


SCRIPT = {
    INPUTS["tools"]: [
        call(("lookup", {"query": BLOBS["tool_arguments"], "api_key": NAMED["api_key"]})),
        say("Answer: " + BLOBS["answer"]),
    ],
    INPUTS["toolcrash"]: [
        call(("explode", {"db_password": NAMED["db_password"], "note": BLOBS["tool_arguments"]})),
        say("Answer after the failure: " + BLOBS["answer"]),
    ],
    INPUTS["crash"]: [_crash],
}


@tool
def lookup(query: str, api_key: str = "") -> str:
    \"\"\"Look something up.\"\"\"
    return "found: " + BLOBS["tool_result"]


@tool
def explode(db_password: str = "", note: str = "") -> str:
    \"\"\"Always fails.\"\"\"
    raise ValueError("tool failed: " + BLOBS["tool_exception"])


def build_graph():
    tools = [lookup, explode]
    model = ScriptedChatModel(script=SCRIPT).bind_tools(tools)

    async def agent(state):
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(name="leaky")
"""

# The grading module is copied into the run directory (re-grading uses the copy), so the secret
# it raises with is read at grading time, not written in its source.
GRADING_MODULE = """
from pathlib import Path

from tracegrade.graders.code import grader

BLOB = Path(SECRET_FILE_REPR).read_text(encoding="utf-8")


@grader(name="leaky_grader")
def leaky_grader(output):
    raise RuntimeError("grader failed: " + BLOB)


@grader(name="goal_judged")
async def goal_judged(output, judge):
    return await judge(goal="Answer without leaking " + BLOB)
"""

RUBRIC = {
    "id": "leak",
    "version": "1.0.0",
    "checks": [
        {
            "id": "follows-policy",
            "kind": "policy-compliance",
            "severity": "major",
            "description": "The reply follows the policy.",
        },
        {
            "id": "grounded",
            "kind": "claim-support",
            "severity": "major",
            "description": "Facts are in the context.",
        },
        {
            "id": "lookup-claim",
            "kind": "tool-claim",
            "severity": "major",
            "description": "A claimed lookup is backed by a lookup call.",
            "params": {"toolName": "lookup", "action": "looking it up"},
        },
    ],
}


def write_project(root: Path, server, receiver) -> Path:
    inputs = {q: f"question {q}: {blob('input')}" for q in ("tools", "toolcrash", "crash")}
    blobs = {
        c: blob(c)
        for c in (
            "tool_arguments",
            "tool_result",
            "answer",
            "agent_exception",
            "tool_exception",
        )
    }
    agent = (
        textwrap.dedent(AGENT)
        .replace("BLOBS_REPR", repr(blobs))
        .replace("INPUTS_REPR", repr(inputs))
        .replace("NAMED_REPR", repr(NAMED))
    )
    (root / "agent.py").write_text(agent, encoding="utf-8")
    data = root / "data"
    data.mkdir()
    rows = [
        {
            "id": q,
            "input": text,
            "expected": {"keyword": "Answer"},
            "rubric_ref": "rubric/leak@1.0.0",
            "metadata": {"context": blob("context")},
        }
        for q, text in inputs.items()
    ]
    (data / "questions.yaml").write_text(yaml.safe_dump({"questions": rows}), encoding="utf-8")
    secret_file = root / "grader-secret.txt"
    secret_file.write_text(blob("grader_exception"), encoding="utf-8")
    module = textwrap.dedent(GRADING_MODULE).replace("SECRET_FILE_REPR", repr(str(secret_file)))
    (data / "graders.py").write_text(module, encoding="utf-8")
    (root / "policy.md").write_text("# Policy\n\n" + blob("policy") + "\n", encoding="utf-8")
    (root / "rubrics").mkdir()
    (root / "rubrics" / "leak.yaml").write_text(yaml.safe_dump(RUBRIC), encoding="utf-8")
    config = {
        "version": 1,
        "runs_dir": "runs",
        "rubrics": "rubrics/",
        "judge": {
            "provider": "openai-compatible",
            "base_url": server.base_url,
            "model": "loopback-judge",
            "max_attempts": 1,
        },
        "telemetry": {"otlp_endpoint": receiver.endpoint},
        "redaction": {"env": ["LEAKY_VENDOR_*"]},
        "targets": {
            "leaky": {
                "agent": "agent.py:build_graph",
                "dataset": "data/questions.yaml",
                "policy": "policy.md",
                "timeout_s": 20,
                "graders": [
                    "tool_usage_grader",
                    {"id": "contains", "match_on": ["expected", "keyword"]},
                    "relevance_grader",
                    "rubric_judge",
                ],
            }
        },
    }
    path = root / "tracegrade.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def judge_answer(body: dict):
    """Each judge answers, and echoes a secret in what it says."""
    prompt = "\n".join(str(m.get("content", "")) for m in body["messages"])
    echo = blob("judge_answer")
    if "Questions:" in prompt:  # the rubric judge: one letter per question, then a remark
        count = prompt.count("\nQ")
        lines = "".join(f"Q{n}: A\n" for n in range(1, count + 2))
        return reply(lines + "Remark: " + echo)
    if "<goal>" in prompt:
        return reply({"score": 1, "reasoning": echo})
    return score(4, "judged: " + echo)


def hits(label: str, data: bytes) -> list[str]:
    text = data.decode("utf-8", errors="replace")
    return [f"{label}: {kind}" for kind, needle in needles().items() if needle in text]


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **ENVIRONMENT, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "tracegrade", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_no_planted_secret_leaves_a_run_or_a_regrade_in_clear(
    tmp_path, openai_server, otlp_receiver
):
    openai_server.responder = judge_answer
    path = write_project(tmp_path, openai_server, otlp_receiver)
    reports = tmp_path / "reports"
    flags = ["--json", "--junit", "--markdown"]

    def report_args(stem: str) -> list[str]:
        names = (f"{stem}.json", f"{stem}.xml", f"{stem}.md")
        return [a for flag, n in zip(flags, names, strict=True) for a in (flag, str(reports / n))]

    # The real CLI in its own process, so its console (logging included) is what a user sees;
    # --verbose: the debug log prints every exception the run isolates, with its traceback.
    run_console = cli("--verbose", "run", "--config", str(path), *report_args("run"))
    assert run_console.returncode in (2, 3), run_console.stdout + run_console.stderr
    (run_dir,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    grade_console = cli(
        "--verbose", "grade", str(run_dir), "--config", str(path), *report_args("grade")
    )
    assert grade_console.returncode in (2, 3), grade_console.stdout + grade_console.stderr
    # What reads a stored run back: show, the run list, a comparison, a re-export of the spans.
    config = ["--config", str(path)]
    readers = {
        "show": cli("show", str(run_dir), *config, *report_args("show")),
        "runs": cli("runs", *config),
        "compare": cli(
            "compare",
            str(run_dir),
            str(run_dir),
            *config,
            "--json",
            str(reports / "compare.json"),
            "--markdown",
            str(reports / "compare.md"),
        ),
        "export": cli("export", str(run_dir), *config, "--endpoint", otlp_receiver.endpoint),
        # The dataset store (beside the config, scanned below) after promoting a question.
        "promote": cli("dataset", "promote", str(run_dir), "--id", "tools", *config),
    }
    for name, done in readers.items():
        assert done.returncode in (0, 2, 3), (name, done.stdout + done.stderr)
    assert readers["export"].returncode == 0, readers["export"].stderr
    assert readers["promote"].returncode == 0, readers["promote"].stderr
    assert (tmp_path / "datasets.sqlite").stat().st_size > 0

    # The channels were exercised: the judge saw prompts, the receiver spans, the store rows,
    # the debug log the isolated exceptions.
    assert "Traceback" in run_console.stderr and "(redacted)" in run_console.stderr
    assert openai_server.requests and otlp_receiver.spans()
    assert (run_dir / "results.sqlite").stat().st_size > 0
    assert list((run_dir / "traces").iterdir())
    report = json.loads((reports / "run.json").read_text())
    assert {q["id"] for q in report["questions"]} == {"tools", "toolcrash", "crash"}

    found: list[str] = []
    for file in [*sorted((tmp_path / "runs").rglob("*")), tmp_path / "datasets.sqlite"]:
        if file.is_file():
            found += hits(str(file.relative_to(tmp_path)), file.read_bytes())
    for file in sorted(reports.iterdir()):
        found += hits(file.name, file.read_bytes())
    for label, captured in (("run", run_console), ("grade", grade_console), *readers.items()):
        found += hits(f"console {label} stdout", captured.stdout.encode())
        found += hits(f"console {label} stderr", captured.stderr.encode())
    for i, request in enumerate(otlp_receiver.requests):
        found += hits(f"otlp request {i}", request.SerializeToString())
    for i, request in enumerate(openai_server.requests):
        found += hits(f"judge request {i}", json.dumps(request.body).encode())
    assert found == [], "\n".join(sorted({f.rsplit(": ", 1)[0] for f in found}))
