"""`--resume` pins the config by its content, not its path (issue 45, item 18): the same run
folder with an identical config at another path (a restored CI cache, a moved checkout)
resumes; a config whose content changed is refused, naming what changed."""

from __future__ import annotations

import shutil

import pytest

from tests.runs_support import QUESTIONS, write_project
from tracegrade import InputError, load_config, resume_run, start_run
from tracegrade.cli import main


class Interrupt(Exception):  # stands in for Ctrl-C: propagates out of the run the same way
    pass


def _interrupted_run(root):
    rows = [{**QUESTIONS["paris"], "id": f"p{i}"} for i in range(4)]
    path = write_project(root, questions=[], extra_questions=rows, target={"concurrency": 1})
    seen, run_dirs = [], []

    def stop_after_two(question):
        seen.append(question.id)
        if len(seen) == 2:
            raise Interrupt

    with pytest.raises(Interrupt):
        start_run(
            load_config(path), on_start=lambda d, n: run_dirs.append(d), on_done=stop_after_two
        )
    return path, run_dirs[0]


def test_a_moved_checkout_resumes_with_its_identical_config(tmp_path, capsys):
    path, run_dir = _interrupted_run(tmp_path / "before")
    moved = tmp_path / "after"
    shutil.copytree(tmp_path / "before", moved)  # a restored CI cache, a moved checkout
    shutil.rmtree(tmp_path / "before")
    config = moved / path.name
    resumed = []
    outcome = resume_run(load_config(config), run_dir.name, on_done=lambda q: resumed.append(q.id))
    assert sorted(resumed) == ["p2", "p3"] and outcome.exit_code == 0
    assert "t: resumed 2 of 4 question(s)" in outcome.notes


def test_an_identical_config_at_another_path_resumes_from_the_cli(tmp_path, capsys):
    path, run_dir = _interrupted_run(tmp_path)
    other = tmp_path / "ci-copy.yaml"  # the same settings, commented and with a note of its own
    other.write_text("# restored from the CI cache\nx-note: copy\n" + path.read_text())
    assert main(["run", "--config", str(other), "--resume", run_dir.name, "--quiet"]) == 0


def test_a_config_whose_content_changed_is_refused_wherever_it_is(tmp_path, capsys):
    path, run_dir = _interrupted_run(tmp_path)
    path.write_text(path.read_text().replace("concurrency: 1", "concurrency: 2"))
    with pytest.raises(InputError) as refused:
        resume_run(load_config(path), run_dir.name)
    assert "the config changed since the run started" in refused.value.message
    assert refused.value.file == str(path) and refused.value.key == "--config"
