"""Worker processes (`--workers N`) and the Ray executor (`--executor ray`, on a local Ray with 2
CPUs): the same run as one process, question for question; a worker that dies errors what it
held and nothing else; kill -9 of the run during a 2-worker run, then resume and grade, loses
nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.otlp_receiver import otlp_receiver  # noqa: F401  (fixture)
from tests.runs_support import write_project
from tests.test_crash_safety import _questions, _rows
from tests.test_shards import _records
from tracegrade import load_config, resume_run, start_run
from tracegrade.cli import main
from tracegrade.rundir.store import ResultStore

ROOT = Path(__file__).resolve().parents[1]

EXECUTORS = ["local", "ray"]


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """A local Ray with 2 CPUs in this process (the executor joins it rather than starting
    one); its workers import the test agents from the checkout, as a cluster's workers import
    an installed project."""
    import ray

    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "RAY_AUTH_MODE")}
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), saved["PYTHONPATH"]]))
    os.environ["RAY_AUTH_MODE"] = "disabled"  # no token written under the home directory
    try:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        yield
    finally:
        ray.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(params=EXECUTORS)
def executor(request) -> str:
    if request.param == "ray":
        request.getfixturevalue("local_ray")
    return request.param


def _pid_questions(n: int) -> list[dict]:
    return [
        {"id": f"p{i:02d}", "input": "which process?", "expected": {"keyword": "sunny"}}
        for i in range(n)
    ]


def _stored(run_dir: Path) -> dict:
    """Question id -> (ordinal, error, tool calls, composite, objective, grader verdicts)."""
    with ResultStore.open_readonly(run_dir) as store:
        runs = {r.id: r for r in store.load_runs()}
        scores = {s.id: s for s in store.load_scores()}
    return {
        qid: (
            r.answer.ordinal,
            # under load a timeout's reason adds the time other questions held the loop
            r.error.split(" of its own time")[0] if r.error else r.error,
            r.answer.tool_call_count,
            scores[qid].composite,
            scores[qid].objective,
            [(g.grader_id, g.score, g.reason) for g in scores[qid].graders],
        )
        for qid, r in runs.items()
    }


def test_two_workers_give_the_run_one_process_gives(tmp_path, executor):
    rows = [
        *_questions(12),
        {
            "id": "rome",
            "input": "weather in Rome?",
            "expected": {"keyword": "sunny"},
            "expected_tools": [{"tool": "lookup", "should_run": True}],
        },
    ]
    config_path = write_project(
        tmp_path,
        questions=["crash", "slow"],
        extra_questions=rows,
        # the stall sleeps 600 s: 30 s times it out and leaves every other question slack on a
        # loaded machine (under stress --cpu 6 two questions that answer at once took 13-14 s
        # in Ray workers, past a 6 s timeout of their own time)
        target={"timeout_s": 30, "concurrency": 4},
    )
    config = load_config(config_path)
    one = start_run(config)
    seen = []
    two = start_run(config, workers=2, executor=executor, on_done=seen.append)
    assert two.exit_code == one.exit_code == 3  # crash and the timeout are errored in both
    assert len(seen) == 15  # progress saw every question, as it was committed
    assert _stored(two.run_dir) == _stored(one.run_dir)
    assert _records(two.run_dir) == _records(one.run_dir)  # one trace file, every record
    assert sorted(p.name for p in (two.run_dir / "traces").iterdir()) == ["t.jsonl"]
    errors = {q.id: q.error for q in two.targets[0].questions if q.errored}
    assert errors["slow"].startswith("timed out after 30s")  # the per-question timeout, in a worker
    assert "model exploded" in errors["crash"]
    assert [t.verdict.reasons for t in two.targets] == [t.verdict.reasons for t in one.targets]


def test_questions_run_in_the_worker_processes(tmp_path, executor):
    config = load_config(
        write_project(
            tmp_path,
            questions=[],
            extra_questions=_pid_questions(16),
            target={"concurrency": 4},
            latency_s=0.02,
        )
    )
    outcome = start_run(config, workers=2, executor=executor)
    assert outcome.exit_code == 0
    with ResultStore.open_readonly(outcome.run_dir) as store:
        pids = {r.answer.response.split("pid=")[1] for r in store.load_runs()}
    assert str(os.getpid()) not in pids
    assert len(pids) == 2  # both workers answered


def test_a_worker_that_dies_errors_what_it_held_and_the_rest_runs(tmp_path, executor, capsys):
    config = write_project(
        tmp_path,
        questions=["die"],
        extra_questions=_questions(10),
        target={"concurrency": 2, "timeout_s": 30},
    )
    args = ["--config", str(config), "--workers", "2", "--executor", executor, "--quiet"]
    code = main(["run", *args])
    assert code == 3  # an errored question beyond the budget: incomplete, never a pass
    run_dir = next((tmp_path / "runs").iterdir())
    stored = _stored(run_dir)
    assert len(stored) == 11  # nothing lost
    with ResultStore.open_readonly(run_dir) as store:
        died = {r.id: r for r in store.load_runs()}["die"]
    assert died.error_type == "WorkerDied"
    if executor == "local":
        assert "worker process" in died.error and "SIGKILL" in died.error
    else:
        assert died.error.startswith("Ray actor") and "died" in died.error
    assert all(stored[f"q{i:03d}"][1] is None for i in range(10))
    assert "agent error (WorkerDied)" in capsys.readouterr().out


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _descendants(pid: int) -> list[int]:
    """The processes under `pid` (workers are forked by a fork server, a child of the run)."""
    out = []
    for child in _children(pid):
        out += [child, *_descendants(child)]
    return out


def _alive(pid: int) -> bool:
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[str]:
    """An existing Ray cluster (a head node with 2 CPUs on loopback) the CLI joins through
    RAY_ADDRESS, so that killing the run's process leaves the cluster up, as in production;
    ended by its process id at the end."""
    import sys

    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled"}
    head = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "ray"),
            "start",
            "--head",
            "--block",
            "--port",
            str(port),
            "--node-ip-address",
            "127.0.0.1",
            "--num-cpus",
            "2",
            "--include-dashboard=false",
            "--disable-usage-stats",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        import socket

        deadline = time.monotonic() + 120
        while True:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert head.poll() is None and time.monotonic() < deadline, "no Ray head"
            time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        head.terminate()  # `ray start --block` ends the processes it started
        head.wait(timeout=60)


@pytest.fixture(params=EXECUTORS)
def cli_executor(request) -> tuple[list[str], dict[str, str]]:
    """(run arguments, environment) of each executor through the CLI."""
    if request.param == "ray":
        address = request.getfixturevalue("ray_cluster")
        return ["--executor", "ray"], {"RAY_ADDRESS": address, "RAY_AUTH_MODE": "disabled"}
    return [], {}


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    import sys

    full = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "tracegrade", *args],
        cwd=cwd,
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _start(
    tmp_path: Path, cli_executor: tuple, *, rows: int
) -> tuple[subprocess.Popen, Path, Path, list[int]]:
    """A 40-question 2-worker run through the CLI, once it committed `rows` rows: (process,
    config, run dir, the worker pids)."""
    config = write_project(
        tmp_path,
        questions=[],
        extra_questions=_questions(40),
        latency_s=0.05,
        target={"concurrency": 4, "timeout_s": 30},
    )
    args, env = cli_executor
    proc = _cli(
        "run", "--config", str(config), "--workers", "2", "--quiet", *args, cwd=tmp_path, env=env
    )
    runs = tmp_path / "runs"
    # generous, and it ends as soon as the rows are there: under stress --cpu 6 a Ray run had
    # committed none after 180 s (its actors still starting)
    deadline = time.monotonic() + 600
    workers: list[int] = []
    while time.monotonic() < deadline:
        dirs = list(runs.iterdir()) if runs.is_dir() else []
        workers = [p for p in _descendants(proc.pid) if _alive(p)]
        # locally: the fork server and the two workers it forked (with Ray: the cluster's)
        if dirs and _rows(dirs[0]) >= rows and (len(workers) >= 3 or args):
            return proc, config, dirs[0], workers
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the run never committed enough rows")


def test_kill_9_during_a_two_worker_run_then_resume_and_grade_loses_nothing(tmp_path, cli_executor):
    args, env = cli_executor
    proc, config, run_dir, workers = _start(tmp_path, cli_executor, rows=8)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert _rows(run_dir) < 40
    # the workers see their pipe close and end: nothing keeps running the dead run
    deadline = time.monotonic() + 60
    while any(_alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in workers)
    # before the resume, the records are still in the workers' own files: grade reads them
    committed = _rows(run_dir)
    grade = _cli("grade", run_dir.name, "--config", str(config), "--quiet", cwd=tmp_path)
    out, err = grade.communicate(timeout=300)
    assert grade.returncode == 3, out + err  # incomplete: the rest has no row yet
    assert f"errored 0, degraded 0 of {committed}" in out, out
    # (with Ray, the cluster ends the dead driver's actors: the resume's own get its 2 CPUs)
    resume = _cli(
        "run",
        "--config",
        str(config),
        "--resume",
        run_dir.name,
        "--workers",
        "2",
        "--quiet",
        *args,
        cwd=tmp_path,
        env=env,
    )
    out, err = resume.communicate(timeout=300)
    assert resume.returncode == 0, out + err
    assert _rows(run_dir) == 40
    grade = _cli("grade", run_dir.name, "--config", str(config), "--quiet", cwd=tmp_path)
    out, err = grade.communicate(timeout=300)
    assert grade.returncode == 0, out + err
    assert "errored 0, degraded 0 of 40" in out  # every committed row has its record on disk
    assert sorted(p.name for p in (run_dir / "traces").iterdir()) == ["t.jsonl"]


def test_a_resumed_run_with_workers_asks_only_what_is_missing(tmp_path, executor):
    config = load_config(
        write_project(
            tmp_path, questions=[], extra_questions=_questions(10), target={"concurrency": 4}
        )
    )
    first = start_run(config)
    with ResultStore.in_run_dir(first.run_dir) as store:
        store._db.execute("DELETE FROM questions WHERE question_id IN ('q001', 'q007')")
    seen = []
    again = resume_run(
        config, first.run_dir.name, workers=2, executor=executor, on_done=seen.append
    )
    assert sorted(q.id for q in seen) == ["q001", "q007"]
    assert again.exit_code == 0 and len(_stored(first.run_dir)) == 10


def test_sigterm_during_a_two_worker_run_ends_it_like_one_process(tmp_path, cli_executor):
    args, env = cli_executor
    proc, config, run_dir, _ = _start(tmp_path, cli_executor, rows=4)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert f"tracegrade run --resume {run_dir.name}" in err
    # the worker trace files were folded in as the run ended (Ray's actors send their lines)
    assert sorted(p.name for p in (run_dir / "traces").iterdir()) == ["t.jsonl"]
    resume = _cli(
        "run",
        "--config",
        str(config),
        "--resume",
        run_dir.name,
        "--workers",
        "2",
        "--quiet",
        *args,
        cwd=tmp_path,
        env=env,
    )
    out, err = resume.communicate(timeout=300)
    assert resume.returncode == 0, out + err
    grade = _cli("grade", run_dir.name, "--config", str(config), "--quiet", cwd=tmp_path)
    out, err = grade.communicate(timeout=300)
    assert grade.returncode == 0 and "degraded 0 of 40" in out, out + err


def test_with_workers_every_question_span_reaches_the_otlp_receiver(
    tmp_path,
    otlp_receiver,  # noqa: F811
    capsys,
):
    from tracegrade.otel import semconv as sc

    config = write_project(
        tmp_path,
        questions=[],
        extra_questions=_questions(8),
        target={"concurrency": 4},
        config={"telemetry": {"otlp_endpoint": otlp_receiver.endpoint}},
    )
    assert main(["run", "--config", str(config), "--workers", "2", "--quiet"]) == 0
    run_dir = next((tmp_path / "runs").iterdir())
    with ResultStore.open_readonly(run_dir) as store:
        trace_ids = {r.trace_id for r in store.load_runs()}
    questions = [s for s in otlp_receiver.spans() if s.name.startswith(sc.SPAN_QUESTION)]
    assert {s.trace_id for s in questions} == trace_ids and len(trace_ids) == 8
    # the workers' export reports are summed into the run's note, which names the protocol
    # the workers sent with (now read from their reports, no longer from the config)
    spans = len(otlp_receiver.spans())
    out = capsys.readouterr().out
    assert f"{spans} span(s) exported to" in out
    assert "(http/protobuf, project" in out


def test_workers_run_the_target_the_run_prepared_not_the_config_file(tmp_path):
    # a config changed in memory and never saved (a notebook, a script building on a loaded
    # config): each worker gets the target as the run prepared it, not the file's
    rows = [
        {"id": f"e{i}", "input": "echo system", "expected": {"keyword": "memory"}} for i in range(4)
    ]
    config = load_config(
        write_project(tmp_path, questions=[], extra_questions=rows, target={"concurrency": 2})
    )
    config.targets["t"].system_prompt = "set in memory"
    outcome = start_run(config, workers=2)
    with ResultStore.open_readonly(outcome.run_dir) as store:
        answers = {r.id: r.answer.response for r in store.load_runs()}
    assert answers == {f"e{i}": "system=set in memory" for i in range(4)}
