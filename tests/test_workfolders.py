"""Question work folders reused within a run (`tracegrade.execution.question.workfolders`): each question
gets its own empty folder at `work/<target>/<question>/trial-<n>`, what an agent wrote stays
where it wrote it, and a run leaves only the folders written to."""

from __future__ import annotations

import os
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade.execution.question import workfolders


def _kept(run: Path) -> list[str]:
    return sorted(p.relative_to(run).as_posix() for p in run.glob("work/**/*") if p.is_file())


def test_a_finished_empty_folder_becomes_the_next_questions_by_rename(tmp_path):
    first = workfolders.take(tmp_path, "t", "q1", 0)
    inode = first.stat().st_ino
    workfolders.release(first, reuse=True)
    second = workfolders.take(tmp_path, "t", "q2", 0)
    assert second == tmp_path / "work" / "t" / "q2" / "trial-0" and second.is_dir()
    assert second.stat().st_ino == inode  # no new folder made
    assert not (tmp_path / "work" / "t" / "q1").exists()  # the old name is gone
    workfolders.release(second, reuse=True)
    workfolders.close(tmp_path, "t")
    assert not (tmp_path / "work").exists()


def test_what_an_agent_wrote_after_its_question_ended_stays_in_its_own_folder(tmp_path):
    first = workfolders.take(tmp_path, "t", "a", 0)
    workfolders.release(first, reuse=True)
    (first / "late.txt").write_text("written after the question ended")
    second = workfolders.take(tmp_path, "t", "b", 0)
    assert os.listdir(second) == []  # b never sees a's file
    assert (first / "late.txt").read_text() == "written after the question ended"
    workfolders.release(second, reuse=True)
    workfolders.close(tmp_path, "t")
    assert _kept(tmp_path) == ["work/t/a/trial-0/late.txt"]


def test_a_sibling_trials_folder_is_never_moved_with_its_question_folder(tmp_path):
    zero = workfolders.take(tmp_path, "t", "q", 0)
    one = workfolders.take(tmp_path, "t", "q", 1)
    workfolders.release(zero, reuse=True)
    other = workfolders.take(tmp_path, "t", "r", 0)  # q/ holds trial-1 still: not renamed
    assert one.is_dir() and other.is_dir() and other != one
    (one / "out.txt").write_text("trial 1's")
    workfolders.release(one, reuse=True)
    workfolders.release(other, reuse=True)
    workfolders.close(tmp_path, "t")
    assert _kept(tmp_path) == ["work/t/q/trial-1/out.txt"]


def test_a_reused_folder_takes_the_new_trials_name(tmp_path):
    first = workfolders.take(tmp_path, "t", "q", 0)
    workfolders.release(first, reuse=True)
    second = workfolders.take(tmp_path, "t", "q", 1)
    assert second == tmp_path / "work" / "t" / "q" / "trial-1" and second.is_dir()
    assert not first.exists()
    workfolders.release(second, reuse=True)
    workfolders.close(tmp_path, "t")
    assert not (tmp_path / "work").exists()


def test_an_agent_that_removed_its_own_folder_does_not_break_the_next_question(tmp_path):
    first = workfolders.take(tmp_path, "t", "q1", 0)
    first.rmdir()
    workfolders.release(first, reuse=True)
    second = workfolders.take(tmp_path, "t", "q2", 0)
    assert second.is_dir() and os.listdir(second) == []
    workfolders.release(second, reuse=True)
    workfolders.close(tmp_path, "t")
    assert not (tmp_path / "work" / "t" / "q2").exists()


def test_outside_a_run_a_folder_is_removed_when_its_question_ends(tmp_path):
    folder = workfolders.take(tmp_path, "t", "q", 0)
    workfolders.release(folder, reuse=False)
    workfolders.close()  # waits for the removal thread
    assert not folder.exists() and not folder.parent.exists()


def _gone(path: Path) -> bool:
    deadline = time.monotonic() + 60  # the removal thread, on a loaded machine
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return not path.exists()


def test_once_no_question_is_left_free_folders_are_removed_without_waiting_for_close(tmp_path):
    first = workfolders.take(tmp_path, "t", "q1", 0)
    last = workfolders.take(tmp_path, "t", "q2", 0)
    kept = workfolders.take(tmp_path, "t", "q3", 0)
    workfolders.release(first, reuse=True)
    workfolders.ending(tmp_path, "t")  # the run's last questions are in flight
    assert _gone(first.parent)  # removed before close: close has less to wait for
    (kept / "out.txt").write_text("kept")
    workfolders.release(last, reuse=True)  # not kept for a next question: none is left
    workfolders.release(kept, reuse=True)
    assert _gone(last.parent)
    workfolders.close(tmp_path, "t")
    assert _kept(tmp_path) == ["work/t/q3/trial-0/out.txt"]
    # the next run in this process reuses folders again
    again = workfolders.take(tmp_path, "t", "a", 0)
    inode = again.stat().st_ino
    workfolders.release(again, reuse=True)
    assert workfolders.take(tmp_path, "t", "b", 0).stat().st_ino == inode


# A question's steps: which question and trial it runs, and whether its agent writes a file
# (while it runs, or late: after its question ended, before the folder is reused).
_steps = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c/odd id"]),
        st.integers(0, 2),
        st.sampled_from(["nothing", "writes", "writes late"]),
    ),
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(steps=_steps, overlap=st.integers(1, 3))
def test_every_question_gets_an_empty_folder_of_its_own_and_only_writes_are_kept(
    tmp_path_factory, steps, overlap
):
    """Up to `overlap` questions in flight at once, in the order given (a question and trial
    running again is a re-run: it meets its own earlier files, as a fresh `mkdir` would)."""
    run = tmp_path_factory.mktemp("run")
    in_flight: dict[tuple[str, int], tuple[Path, str]] = {}
    expected: set[str] = set()

    def write(path: Path) -> None:
        path.write_text("mine")
        expected.add(path.relative_to(run).as_posix())

    def finish(key: tuple[str, int]) -> None:
        folder, does = in_flight.pop(key)
        workfolders.release(folder, reuse=True)
        if does == "writes late":  # after its question ended, before any other starts
            write(folder / "late.txt")

    for question, trial, does in steps:
        if (question, trial) in in_flight:  # never twice at once, as in a run
            finish((question, trial))
        folder = workfolders.take(run, "t", question, trial)
        assert folder.parent.parent == run / "work" / "t" and folder.name == f"trial-{trial}"
        assert folder.is_dir()
        assert all(folder != other for other, _ in in_flight.values())
        own = {p.relative_to(run).as_posix() for p in folder.iterdir()}
        assert own <= expected and all(
            name.startswith(str(folder.relative_to(run))) for name in own
        )
        if does == "writes":
            write(folder / "out.txt")
        in_flight[(question, trial)] = (folder, does)
        if len(in_flight) >= overlap:
            finish(next(iter(in_flight)))
    while in_flight:
        finish(next(iter(in_flight)))
    workfolders.close(run, "t")
    assert _kept(run) == sorted(expected)
    leftovers = [p for p in run.glob("work/**/*") if p.is_dir() and not any(p.iterdir())]
    assert leftovers == []  # no empty folder left behind
