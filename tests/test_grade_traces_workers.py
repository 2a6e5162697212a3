"""`tracegrade grade-traces --workers N`: the paired traces graded in N processes (the grading
pool `receive --workers` uses) give the verdict, the per-question results, the records and the
exit code one process gives; a worker that dies is an error (exit 3); a bad N is exit 4.

What may differ between 1 and N workers, and is compared without order: the order of the
rows in the store (each worker commits its own batches) and of the record lines in the run's
trace file (each worker writes its own part, folded at the end). The run id and the time each
grade was made (its `gen_ai.evaluation.result` event's) differ between any two runs and are left
out of what is compared."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests import test_grade_traces, test_trace_policy
from tests.test_grade_traces_streaming import _archive, _project
from tests.test_receive_workers import KILLING_GRADER
from tracegrade.cli import main
from tracegrade.rundir.store import ResultStore


def _ran_archive(tmp_path: Path, copies: int) -> tuple[Path, Path]:
    """(config, archive): the run's own traces copied under fresh trace ids."""
    config = _project(tmp_path / "proj")
    ran = tmp_path / "ran.json"
    assert main(["run", "--config", str(config), "--quiet", "--json", str(ran)]) == 2
    run_id = json.loads(ran.read_text())["run_id"]
    archive = tmp_path / "archive.jsonl"
    _archive(tmp_path / "proj" / "runs" / run_id / "traces" / "t.jsonl", archive, copies)
    return config, archive


def _grade(config: Path, archive: Path, out: Path, *extra: str) -> tuple[int, dict]:
    argv = ["grade-traces", str(archive), "--config", str(config), "--target", "t", "--quiet"]
    code = main([*argv, "--json", str(out), *extra])
    return code, json.loads(out.read_text())


def _questions(report: dict) -> list[tuple]:
    """Each question run: its id, trial, the trace graded as it, every grade, its record."""
    return sorted(
        (
            q["id"],
            q["trial"],
            q.get("trace_id"),
            q["composite"],
            q["error"],
            tuple((g["id"], g["score"], g["passed"], g["reason"]) for g in q["graders"]),
            tuple(c["name"] for c in q["tool_calls"] or ()),
            q["tool_calls"] is None,
        )
        for q in report["questions"]
    )


def _trace_lines(run_dir: Path, run_id: str) -> list[str]:
    lines = (run_dir / "traces" / "t.jsonl").read_text().splitlines()
    graded_at = re.compile(r'"timeUnixNano":"\d+"')
    return sorted(graded_at.sub("GRADED_AT", line.replace(run_id, "RUN")) for line in lines)


def test_n_workers_grade_an_archive_as_one_process_does(tmp_path):
    config, archive = _ran_archive(tmp_path, copies=7)  # 21 traces, 7 trials a question
    reports, codes, lines = {}, {}, {}
    for workers in (None, 1, 2):
        extra = () if workers is None else ("--workers", str(workers))
        code, report = _grade(config, archive, tmp_path / f"w{workers}.json", *extra)
        run_dir = config.parent / "runs" / report["run_id"]
        assert not list((run_dir / "traces").glob("t.w*.jsonl"))  # parts folded at the end
        # what the stored run says, read back as `show` reads it
        shown_path = tmp_path / f"shown{workers}.json"
        assert main(["show", str(run_dir), "--quiet", "--json", str(shown_path)]) == code
        shown = json.loads(shown_path.read_text())
        reports[workers], codes[workers] = shown, code
        lines[workers] = _trace_lines(run_dir, report["run_id"])
        with ResultStore.open_readonly(run_dir) as store:
            assert len(store.load_runs("t")) == 21
    assert codes == {None: 2, 1: 2, 2: 2}  # rome never calls lookup: a must-pass failure
    one = _questions(reports[1])
    assert len(one) == 21 and {q[1] for q in one} == set(range(7))
    assert _questions(reports[None]) == one == _questions(reports[2])
    assert not any(q[-1] for q in one)  # every record was read back from the trace file
    for key in ("gate", "summary"):
        assert reports[None][key] == reports[1][key] == reports[2][key], key
    assert lines[None] == lines[1] == lines[2] and len(lines[1]) == 21


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_a_bad_worker_count_is_invalid_input(tmp_path, capsys, value):
    config, archive = _ran_archive(tmp_path, copies=1)
    argv = ["grade-traces", str(archive), "--config", str(config), "--target", "t"]
    with pytest.raises(SystemExit) as exited:  # argparse's refusal, as exit 4
        main([*argv, "--workers", value])
    assert exited.value.code == 4
    err = capsys.readouterr().err
    assert "--workers" in err and value in err


def test_a_worker_that_dies_is_an_error_never_a_pass(tmp_path):
    config, archive = _ran_archive(tmp_path, copies=3)
    once = tmp_path / "kill-once"
    module = KILLING_GRADER.replace("ONCE_PATH", repr(str(once)))
    (tmp_path / "proj" / "data" / "graders.py").write_text(module, encoding="utf-8")
    # dies_once (attached from the graders.py beside the dataset) passes every trace but the
    # one that kills its worker: without the kill the exit code is the gate's 2 (rome's
    # must-pass failures), so only the kill can make it 3
    once.touch()
    code, report = _grade(config, archive, tmp_path / "died.json", "--workers", "2")
    assert code == 3
    died = [n for n in report["notes"] if "died (it was killed by SIGKILL)" in n]
    assert died and "trace(s) it held were not graded" in died[0], report["notes"]
    assert len(report["questions"]) < 9  # the dead worker's traces were not graded
    # the stored run says the same: the lost traces make it incomplete, never a pass
    run_dir = config.parent / "runs" / report["run_id"]
    assert main(["show", str(run_dir), "--quiet"]) == 3


def _tree_pss_mb(pid: int) -> float:
    """The summed PSS of `pid` and every process below it (MB): shared pages divided among
    the processes that share them, so the fork server's pages count once, not per worker."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
            with open(f"/proc/{p}/smaps_rollup") as f:
                total += next(int(x.split()[1]) for x in f if x.startswith("Pss:"))
        except (OSError, StopIteration):  # it ended meanwhile
            continue
    return total / 1024


@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="reads Linux's /proc")
def test_the_workers_and_their_parent_stay_under_200_mb(tmp_path):
    """#44's goal for grade-traces' memory, with --workers 2: the grading command, its fork
    server and both workers together at most 200 MB (summed PSS, sampled every 20 ms). What
    they hold is what they load, not the archive (the spans wait on disk): each worker once
    compiled the dataset's validator itself, ~30 MB of heap each, both at once (229 MB)."""
    config, archive = _ran_archive(tmp_path, copies=20)
    argv = ["grade-traces", str(archive), "--config", str(config), "--target", "t", "--quiet"]
    code = f"import sys\nfrom tracegrade.cli import main\nsys.exit(main({[*argv, '--workers', '2']!r}))"
    process = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE)
    peak, done = 0.0, threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.02):
            peak = max(peak, _tree_pss_mb(process.pid))

    watch = threading.Thread(target=sample, daemon=True)
    watch.start()
    _, err = process.communicate(timeout=300)
    done.set()
    watch.join()
    assert process.returncode == 2, err.decode()[-2000:]  # rome's must-pass failures
    assert 50 < peak <= 200, peak  # 50: the sampler saw the processes at all


def test_traces_the_policy_grades_keep_their_order_with_workers(tmp_path):
    """Traces that match no question get a question of their own, numbered (its ordinal, the
    reports' order) as this process pairs them: the workers keep those numbers."""
    config = test_grade_traces._project(tmp_path / "proj")
    tools = [["lookup"], ["lookup", "cancel"], [], ["cancel"], ["lookup"] * 4, ["lookup"]]
    strangers = [test_trace_policy._stranger(f"{k + 1:032x}", t) for k, t in enumerate(tools)]
    archive = test_trace_policy._archive(tmp_path, *reversed(strangers))
    policy = ("--forbid", "cancel", "--max-calls", "3")
    graded = {}
    for workers in (None, 2):
        extra = () if workers is None else ("--workers", str(workers))
        code, report = _grade(config, archive, tmp_path / f"p{workers}.json", *policy, *extra)
        order = [(q["id"], q["trial"]) for q in report["questions"]]  # by ordinal, then trial
        graded[workers] = (code, order, _questions(report), report["gate"])
    assert graded[None][0] == 2  # the traces that called cancel, or too often, fail
    assert len(graded[None][1]) == len(tools)
    assert graded[None] == graded[2]


def test_conversations_are_graded_whole_by_the_workers(tmp_path):
    """With --conversations the traces of one conversation are merged before pairing: a
    worker gets the conversation whole and grades it per turn, as one process does."""
    from tests import test_trace_conversations as conversations
    from tracegrade.capture.tracefile import TraceFileExporter

    config = conversations._project(tmp_path / "proj")
    archive = tmp_path / "collector" / "traces.jsonl"
    archive.parent.mkdir()
    for session in ("session-1", "session-2", "session-3"):
        conversations._converse(tmp_path / "proj", TraceFileExporter(archive), session)
    graded = {}
    for workers in (None, 2):
        extra = () if workers is None else ("--workers", str(workers))
        code, report = _grade(
            config, archive, tmp_path / f"c{workers}.json", "--conversations", *extra
        )
        for question in report["questions"]:
            conversations._assert_graded_per_turn(question)
        graded[workers] = (code, _questions(report), report["gate"])
    assert graded[None][0] == 2 and len(graded[None][1]) == 3  # three conversations, 3 trials
    assert graded[None] == graded[2]
