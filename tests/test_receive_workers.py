"""`tracegrade receive --workers N` and receivers behind a trace-id load balancer, with real
processes on loopback: grading workers give the verdicts, trials and records one process gives;
the bounds and conversations hold; a dead worker is an error (exit 3), never a pass; two
receivers fed by a trace-id-routing sender merge (`tracegrade merge`) into the verdict one
receiver gives for the same traces."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.loopback_timeout import LOOPBACK_TIMEOUT_S
from tests.test_grade_traces import _genai_request, _genai_trace, _project
from tests.test_receive import _graded, _trace, _wait_for, _without_root, receiving
from tests.trace_router import TraceRouter, backend_of
from tracegrade.cli import main
from tracegrade.reports.json_report import build_json_report
from tracegrade.rundir.store import ResultStore
from tracegrade.traces.live.assembly import Limits

ROOT = Path(__file__).resolve().parents[1]


def _requests(n: int) -> list[dict]:
    """n traces of the three questions (every fifth rome never calls lookup: it fails), the
    fourth of each ten sent in two requests (its root last)."""
    out = []
    for k in range(n):
        tid = f"{k + 1:032x}"
        qid = ("paris", "rome", "cancel")[k % 3]
        if qid == "rome" and k % 5 == 0:
            request = _genai_request(_genai_trace(tid, "rome", calls=[], ran=[]))
        else:
            request = _trace(tid, qid, tool="cancel" if qid == "cancel" else "lookup")
        out.extend(_without_root(request) if k % 10 == 3 else [request])
    return out


def _verdicts(report: dict) -> list[tuple]:
    """Every question run's grades, whatever its trial number."""
    return sorted(
        (q["id"], g["id"], g["score"], g["passed"], g["reason"])
        for q in report["questions"]
        for g in q["graders"]
    )


def _trials(report: dict) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for q in report["questions"]:
        out.setdefault(q["id"], []).append(q["trial"])
    return {k: sorted(v) for k, v in out.items()}


def _records(report: dict) -> list[tuple]:
    """Each question run's tool calls as its trace record holds them."""
    return sorted(
        (q["id"], tuple(c["name"] for c in q["tool_calls"] or ()), q["tool_calls"] is None)
        for q in report["questions"]
    )


def _show(run_dir: Path, out: Path) -> tuple[int, dict]:
    code = main(["show", str(run_dir), "--quiet", "--json", str(out)])
    return code, json.loads(out.read_text())


def test_workers_grade_every_trace_as_one_process_does(tmp_path):
    config = _project(tmp_path / "proj")
    requests = _requests(30)
    reports, codes = [], []
    for workers in (0, 2):
        with receiving(config, workers=workers) as (receiver, url):
            with httpx.Client(timeout=LOOPBACK_TIMEOUT_S) as client:
                for request in requests:
                    assert client.post(url, json=request).status_code == 200
            _wait_for(lambda r=receiver: _graded(r) == 30, 120)
        assert not receiver.grading_failed
        codes.append(receiver.outcome.exit_code)
        # what the stored run says, read back as `show` reads it (the records from the
        # folded trace file)
        code, shown = _show(receiver.monitor.run_dir, tmp_path / f"show{workers}.json")
        assert code == receiver.outcome.exit_code
        reports.append(shown)
        parts = list((receiver.monitor.run_dir / "traces").glob("t.w*.jsonl"))
        assert not parts  # folded into the target's trace file at the stop
    one, two = reports
    assert codes == [2, 2]  # the roots that never called lookup fail their must-pass grader
    assert _verdicts(one) == _verdicts(two) and len(_verdicts(one)) == 60
    assert _trials(two) == _trials(one) == {q: list(range(10)) for q in ("paris", "rome", "cancel")}
    assert _records(two) == _records(one)
    assert not any(r[2] for r in _records(two))  # every graded trace's record was read back
    assert two["monitor"]["hours"] and one["gate"]["exit_code"] == two["gate"]["exit_code"]
    total = {}
    for hour in two["monitor"]["hours"].values():
        for key, value in hour.items():
            total[key] = total.get(key, 0) + value
    assert total["graded"] == 30 and total["failed"] == 2 and total["passed"] == 28


def test_the_bounds_refuse_and_drop_as_without_workers(tmp_path):
    config = _project(tmp_path / "proj")
    with receiving(config, workers=2, limits=Limits(max_traces=1, quiet_s=60.0)) as (r, url):
        held, _root = _without_root(_trace("1" * 32))
        assert httpx.post(url, json=held, timeout=LOOPBACK_TIMEOUT_S).json() == {}
        refused = httpx.post(url, json=_trace("2" * 32), timeout=LOOPBACK_TIMEOUT_S).json()
        assert refused["partialSuccess"]["rejectedSpans"] == "4"
    assert r.counts["traces_dropped_cap"] == 1 and r.counts["agent_traces_dropped"] == 1
    assert r.outcome.exit_code == 3
    assert (r.monitor.run_dir / "pending.jsonl").is_file()


def test_a_conversation_goes_to_one_worker_and_is_graded_whole(tmp_path):
    import pytest

    pytest.importorskip("openinference.instrumentation.langchain")
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from tests.test_trace_conversations import _assert_graded_per_turn, _converse
    from tests.test_trace_conversations import _project as _conversation_project
    from tracegrade.traces.conversations import ConversationBook

    config = _conversation_project(tmp_path / "proj")
    # generous: on a loaded machine the app's turns can be seconds apart, and a conversation
    # closed between two of them is graded as two
    book = ConversationBook(quiet_s=5.0)
    with receiving(config, conversations=book, workers=2) as (receiver, url):
        for session in ("session-a", "session-b", "session-c"):
            _converse(tmp_path / "proj", OTLPSpanExporter(endpoint=url), session)
        _wait_for(lambda: _graded(receiver) == 3, 120)
    report = build_json_report(receiver.outcome)
    assert len(report["questions"]) == 3
    for question in report["questions"]:
        _assert_graded_per_turn(question)
    assert receiver.outcome.exit_code == 2


def _start(config: Path, *extra: str) -> tuple[subprocess.Popen, str, Path]:
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "tracegrade", "receive", "--config", str(config)),
            *("--target", "t", "--port", "0", "--quiet-period", "0.2", "--quiet", *extra),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        cwd=ROOT,
    )
    line = process.stdout.readline()
    assert "listening on http://127.0.0.1:" in line, line + process.stderr.read()
    url, run_dir = line.split("listening on ", 1)[1].split("; run ", 1)
    return process, url, Path(run_dir.strip())


def test_a_worker_that_dies_is_an_error_and_a_fresh_one_takes_its_place(tmp_path):
    config = _project(tmp_path / "proj")
    process, url, run_dir = _start(config, "--workers", "2", "--gate")
    try:
        status = url.replace("/v1/traces", "/status")
        first, second = httpx.get(status, timeout=LOOPBACK_TIMEOUT_S).json()["workers"]
        os.kill(first, signal.SIGKILL)
        _wait_for(
            lambda: first not in httpx.get(status, timeout=LOOPBACK_TIMEOUT_S).json()["workers"], 60
        )
        # the traces routed to the dead worker's place are graded by its replacement
        with httpx.Client(timeout=LOOPBACK_TIMEOUT_S) as client:
            for request in _requests(12):
                assert client.post(url, json=request).status_code == 200
        _wait_for(
            lambda: httpx.get(status, timeout=LOOPBACK_TIMEOUT_S).json()["traces_graded"] == 12, 120
        )
        assert second in httpx.get(status, timeout=LOOPBACK_TIMEOUT_S).json()["workers"]
    finally:
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=120)
    # a worker died: an error whatever the gate and the signal, never a pass
    assert process.returncode == 3, err
    assert "grading worker 0 died (it was killed by SIGKILL)" in err or (
        "grading worker 1 died (it was killed by SIGKILL)" in err
    )
    with ResultStore.open_readonly(run_dir) as store:
        assert len(store.load_runs("t")) == 12


def test_two_receivers_behind_a_trace_id_router_merge_to_the_verdict_of_one(tmp_path):
    config = _project(tmp_path / "proj")
    requests = _requests(36)
    # one receiver, every trace
    single, url, single_dir = _start(config)
    router = TraceRouter([url])
    for request in requests:
        router.send(request)
    router.close()
    # two receivers, each trace's spans routed by its trace id (the root of a split trace
    # arrives in a later request: the same receiver gets it)
    a, url_a, dir_a = _start(config)
    b, url_b, dir_b = _start(config, "--workers", "2")
    router = TraceRouter([url_a, url_b])
    for request in requests:
        router.send(request)
    router.close()
    assert all(router.sent)  # both got traces
    for process in (single, a, b):
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    one_code, one = _show(single_dir, tmp_path / "one.json")
    merged = tmp_path / "merged"
    merged_json = tmp_path / "merged.json"
    code = main(
        [
            "merge",
            str(dir_a),
            str(dir_b),
            "--out",
            str(merged),
            "--quiet",
            "--json",
            str(merged_json),
        ]
    )
    report = json.loads(merged_json.read_text())
    assert one_code == 2 and code == one_code == report["gate"]["exit_code"]
    assert _verdicts(report) == _verdicts(one) and len(_verdicts(one)) == 72
    assert (
        _trials(report) == _trials(one) == {q: list(range(12)) for q in ("paris", "rome", "cancel")}
    )
    assert _records(report) == _records(one)
    assert not any(r[2] for r in _records(report))
    for kind in ("graded", "passed", "failed", "spans_received"):
        assert sum(h.get(kind, 0) for h in report["monitor"]["hours"].values()) == sum(
            h.get(kind, 0) for h in one["monitor"]["hours"].values()
        )
    # the merged run is a normal run: show gives the same verdict
    shown_code, shown = _show(merged, tmp_path / "shown.json")
    assert shown_code == code and _verdicts(shown) == _verdicts(one)
    # each trace went to the receiver its id routes to
    with ResultStore.open_readonly(dir_a) as store:
        assert {backend_of(r.trace_id, 2) for r in store.load_runs("t")} == {0}


def test_a_merge_refuses_a_monitor_run_beside_another_kind(tmp_path):
    config = _project(tmp_path / "proj")
    with receiving(config) as (receiver, url):
        httpx.post(url, json=_trace("1" * 32), timeout=LOOPBACK_TIMEOUT_S)
        _wait_for(lambda: _graded(receiver) == 1)
    main(["run", "--config", str(config), "--quiet"])
    (run_dir,) = [
        d for d in (tmp_path / "proj" / "runs").iterdir() if d != receiver.monitor.run_dir
    ]
    out = tmp_path / "m"
    code = main(["merge", str(receiver.monitor.run_dir), str(run_dir), "--out", str(out)])
    assert code == 4 and not out.exists()


KILLING_GRADER = """
import os
import signal
from pathlib import Path

from tracegrade.graders.code import grader

ONCE = Path(ONCE_PATH)  # the run grades with its own copy of this file: an absolute path


@grader(name="dies_once")
def dies_once(output):
    try:
        ONCE.unlink()  # the first trace graded after the file is made kills its worker
    except FileNotFoundError:
        return True
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_worker_killed_while_grading_loses_its_traces_and_the_run_is_incomplete(tmp_path):
    config = _project(tmp_path / "proj")
    once = tmp_path / "kill-once"
    module = KILLING_GRADER.replace("ONCE_PATH", repr(str(once)))
    (tmp_path / "proj" / "data" / "graders.py").write_text(module, encoding="utf-8")
    process, url, run_dir = _start(config, "--workers", "2", "--gate")
    try:
        status = url.replace("/v1/traces", "/status")
        once.touch()
        with httpx.Client(timeout=LOOPBACK_TIMEOUT_S) as client:
            for request in _requests(9):
                assert client.post(url, json=request).status_code == 200

        def settled() -> bool:
            state = httpx.get(status, timeout=LOOPBACK_TIMEOUT_S).json()
            return state["traces_graded"] + state["counts"].get("grading_failed", 0) == 9

        _wait_for(settled, 120)
        state = httpx.get(status, timeout=LOOPBACK_TIMEOUT_S).json()
        assert state["counts"]["grading_failed"] >= 1  # the trace being graded, at least
    finally:
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=120)
    assert process.returncode == 3, err
    assert "was killed by SIGKILL" in err
    # the stored run says the same: its lost spans make it incomplete, never a pass
    code, shown = _show(run_dir, tmp_path / "shown.json")
    assert code == shown["gate"]["exit_code"] == 3
    assert len(shown["questions"]) == state["traces_graded"] < 9


@settings(max_examples=60, deadline=None)
@given(
    question_id=st.text(min_size=1, max_size=30),
    trial=st.integers(0, 10**6),
    secret=st.booleans(),
)
def test_a_record_line_numbered_at_commit_is_the_line_written_with_its_trial(
    question_id, trial, secret
):
    """Workers grade as trial 0 and the store numbers the trace at commit: the line then
    says exactly what a line written with that trial says, whatever the question id holds
    (quotes, non-ASCII, text a redaction pattern takes)."""
    from tracegrade import QuestionResult
    from tracegrade.redaction import RedactionPolicy
    from tracegrade.traces.dialects import agent_trace
    from tracegrade.traces.grade import record_line, renumbered_line
    from tracegrade.traces.live.ingest import JSON, decode_request

    trace = agent_trace(decode_request(json.dumps(_trace("a" * 32)).encode(), JSON))
    policy = RedactionPolicy.from_config({"patterns": [r"[0-9]{3,}"]} if secret else None)
    ids = {"run_id": "20261202-040000-abcdef", "target": "t", "question_id": question_id}

    def line(n: int) -> str:
        return record_line(trace, trace.record, **ids, trial=n, policy=policy)

    run = QuestionResult(target="t", id=question_id, trial=trial)
    assert renumbered_line(line(0), run_id=ids["run_id"], run=run, policy=policy) == line(trial)


def test_a_canary_window_with_workers_exits_with_the_gate(tmp_path):
    config = _project(tmp_path / "proj")
    process, url, _run_dir = _start(config, "--workers", "2", "--window", "3", "--gate")
    # rome never calls lookup: its must-pass trajectory fails, so the gate fails (exit 2)
    rome = _genai_request(_genai_trace("1" * 32, "rome", calls=[], ran=[]))
    assert httpx.post(url, json=rome, timeout=LOOPBACK_TIMEOUT_S).status_code == 200
    _out, err = process.communicate(timeout=120)
    assert process.returncode == 2, err
