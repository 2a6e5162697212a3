"""A run's own grading: the one its questions are committed under. `run`, `--resume`, the
pytest session, a monitor run, grade-traces and `merge` all find it, or open it when the store
has none yet, through `RunDirectory.own_grading`; a re-grade is a later grading and never
takes its place."""

from __future__ import annotations

from pathlib import Path

from tracegrade import RunManifest
from tracegrade.rundir.directory import RunDirectory
from tracegrade.rundir.manifest import DatasetRef, GraderRecord, TargetManifest


def _manifest(run_id: str) -> RunManifest:
    target = TargetManifest(
        mode="agent",
        dataset=DatasetRef(path="d.yaml", sha256="0" * 64, name="d"),
        graders=[GraderRecord(id="tool_usage_grader", source="registry", must_pass=True)],
    )
    return RunManifest(run_id=run_id, created="2026-12-02T00:00:00+00:00", targets={"t": target})


def test_a_new_store_gets_the_run_grading_with_the_manifest_graders(tmp_path: Path) -> None:
    run = RunDirectory.create(tmp_path, "r1")
    manifest = _manifest("r1")
    with run.store() as store:
        own = run.own_grading(store, manifest=manifest)
        (grading,) = store.gradings()
        assert grading["grading_id"] == own
        assert grading["mode"] == "run"
        assert grading["graders"] == manifest.grader_specs()
        assert grading["graders"][0]["id"] == "tool_usage_grader"
        assert store.meta("run_id") == "r1"
        assert store.latest_grading_id() == own


def test_it_is_found_again_and_a_regrade_never_takes_its_place(tmp_path: Path) -> None:
    run = RunDirectory.create(tmp_path, "r2")
    run.write_manifest(_manifest("r2"))
    with run.store() as store:
        own = run.own_grading(store)  # the manifest on disk
        later = store.new_grading(mode="stored", graders=[], unfinished=True)
        store.end_grading(later)
        assert later != own
        assert run.own_grading(store) == own
        assert store.own_grading_id() == own
        assert len(store.gradings()) == 2
    with run.read_store() as readonly:  # found without writing
        assert run.own_grading(readonly) == own


def test_a_store_without_a_grading_has_no_own_grading_id(tmp_path: Path) -> None:
    run = RunDirectory.create(tmp_path, "r3")
    with run.store() as store:
        assert store.own_grading_id() is None
        assert store.gradings() == []
