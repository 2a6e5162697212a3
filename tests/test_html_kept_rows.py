"""The HTML report's rows are built once per run content and kept in the run directory
(`page-rows.cache`): a later page of the same run reads them back, byte for byte the page a
build gives, and a run labelled or re-graded since, a changed report option, a cut-short
file or a secret now in the environment builds them again."""

from __future__ import annotations

import gc
import json
import re
from pathlib import Path

import pytest

from tests.runs_support import write_project
from tracegrade import load_outcome
from tracegrade.cli import main
from tracegrade.redaction import RedactionPolicy
from tracegrade.reports import html
from tracegrade.reports.html import rows as html_rows
from tracegrade.reports.html.data import load_sources
from tracegrade.rundir import kept_rows
from tracegrade.rundir.directory import RunDirectory


@pytest.fixture
def run(tmp_path) -> tuple[Path, Path]:
    """(the config, the run directory) of a two-question run: paris passes, rome fails."""
    config = write_project(tmp_path, target={"graders": ["tool_usage_grader"]})
    assert main(["run", "--config", str(config), "--quiet"]) == 2
    (run_dir,) = (tmp_path / "runs").iterdir()
    return config, run_dir


def page(run_dir: Path, **options) -> str:
    return html.render_html(load_outcome(run_dir), **options)


def rows(text: str) -> dict[str, dict]:
    """Each question's row as the page's script reads it, by id."""
    blocks = re.findall(r'<script type="application/json" class="tg-rows">(.*?)</script>', text)
    return {q["id"]: q for block in blocks for q in json.loads(block)}


@pytest.fixture
def builds(monkeypatch) -> list[str]:
    """The questions built (not read back) from now on."""
    built: list[str] = []
    real = html_rows.build_question

    def counted(q, **kwargs):
        built.append(q.id)
        return real(q, **kwargs)

    monkeypatch.setattr(html_rows, "build_question", counted)
    return built


def test_a_second_page_reads_the_kept_rows_and_is_the_same_page(run, builds):
    _, run_dir = run
    first = page(run_dir)
    assert sorted(builds) == ["paris", "rome"]
    assert (run_dir / kept_rows.KEPT_FILE).is_file()
    builds.clear()
    again = page(run_dir)
    assert builds == [] and again == first
    (run_dir / kept_rows.KEPT_FILE).unlink()
    assert page(run_dir) == first and sorted(builds) == ["paris", "rome"]


def test_a_label_given_since_builds_the_rows_again(run, builds):
    _, run_dir = run
    assert rows(page(run_dir))["rome"]["labels"] == []
    with RunDirectory(run_dir).store() as store:
        store.add_annotation(
            target="t", question_id="rome", label="correct", answer=False, author="ana"
        )
    builds.clear()
    labels = rows(page(run_dir))["rome"]["labels"]
    assert [(a["label"], a["answer"], a["by"]) for a in labels] == [("correct", False, "ana")]
    assert sorted(builds) == ["paris", "rome"]


def test_a_regrade_builds_the_rows_again(run, builds):
    config, run_dir = run
    first = page(run_dir)
    assert main(["grade", run_dir.name, "--config", str(config), "--quiet"]) == 2
    builds.clear()
    again = page(run_dir)  # grading 2: its own grader rows, built from its own results
    assert sorted(builds) == ["paris", "rome"] and rows(again) == rows(first)
    assert "tracegrade run" in again and load_outcome(run_dir).grading_id == 2


def test_other_report_options_build_the_rows_again(run, builds):
    _, run_dir = run
    page(run_dir)
    builds.clear()
    linked = rows(page(run_dir, trace_url="http://localhost:16686/trace/{trace_id}"))
    assert linked["paris"]["trace_url"].startswith("http://localhost:16686/trace/")
    assert sorted(builds) == ["paris", "rome"]
    builds.clear()
    masked = rows(page(run_dir, redaction=RedactionPolicy(patterns=("[Rr]ome",))))
    assert "Rome" not in json.dumps(masked["rome"]["input"]) and len(builds) == 2


def test_a_secret_now_in_the_environment_is_masked_not_read_back(run, builds, monkeypatch):
    _, run_dir = run
    first = page(run_dir)
    word = "weather in Rome"
    assert word in first
    monkeypatch.setenv("TG_TEST_ROWS_TOKEN", word)  # a secret-named variable (*_TOKEN)
    builds.clear()
    again = page(run_dir, redaction=RedactionPolicy())  # the policy reads the environment
    assert word not in again and "rome" in builds


def test_a_cut_short_or_unwritable_keep_still_gives_the_page(run, builds, monkeypatch):
    _, run_dir = run
    first = page(run_dir)
    kept = run_dir / kept_rows.KEPT_FILE
    kept.write_bytes(kept.read_bytes()[:-40])  # as a full disk would leave it
    builds.clear()
    assert page(run_dir) == first and len(builds) == 2
    kept.unlink()

    def refuse(*_):
        raise PermissionError("read-only run directory")

    monkeypatch.setattr(kept_rows.os, "replace", refuse)
    assert page(run_dir) == first
    assert sorted(p.name for p in run_dir.iterdir() if "page-rows" in p.name) == []


def test_the_first_rows_read_only_their_own_lines_of_the_trace_file(run, monkeypatch):
    # streamed (serve's run page), a run of one block (up to 100 questions) never reads its
    # trace file whole; its rows are the rows a whole read gives, and the static page's
    _, run_dir = run
    whole_reads: list[int] = []
    real = html_rows.load_records
    monkeypatch.setattr(
        html_rows, "load_records", lambda *a, **k: whole_reads.append(1) or real(*a, **k)
    )
    narrowed = "".join(html_rows.row_blocks(load_outcome(run_dir)))
    assert whole_reads == []
    (run_dir / kept_rows.KEPT_FILE).unlink()
    monkeypatch.setattr(
        html_rows, "_first_records", lambda outcome, names, *_: load_sources(run_dir, names)
    )  # every record from a whole read
    assert "".join(html_rows.row_blocks(load_outcome(run_dir))) == narrowed
    (run_dir / kept_rows.KEPT_FILE).unlink()
    static = page(run_dir)  # written whole: the trace file read whole, once
    assert narrowed in static and rows(static) == rows(narrowed)


def test_the_heap_is_kept_from_full_collections_while_rows_are_built_and_handed_back(run):
    # the outcome (serve's runs too) frozen while the rows are built, the collector still on
    # between blocks; a reader that stops after the first block hands the heap back too
    _, run_dir = run
    threshold = gc.get_threshold()
    blocks = html_rows.row_blocks(load_outcome(run_dir))
    first = next(blocks)
    assert "tg-rows" in first
    assert gc.get_freeze_count() > 0 and gc.isenabled()
    blocks.close()
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == threshold
    (run_dir / kept_rows.KEPT_FILE).unlink(missing_ok=True)
    page(run_dir)  # built whole
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == threshold
    page(run_dir)  # read back: nothing frozen
    assert gc.get_freeze_count() == 0
