"""The run manifest (`identity.json`) is a typed `RunManifest`: what a run writes reads back
field for field, every key a run writes is a declared field, and the manifests of older
releases (tests/fixtures) are migrated on read to today's shape."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest
from pydantic import BaseModel

from tests.runs_support import write_project
from tracegrade import RunManifest, Selection
from tracegrade.cli import main
from tracegrade.rundir import manifest as manifest_module
from tracegrade.rundir.directory import RunDirectory
from tracegrade.rundir.identity import read_manifest, write_identity
from tracegrade.rundir.manifest import (
    MANIFEST_VERSION,
    DatasetRef,
    GraderRecord,
    GradingModuleRef,
    MergedShard,
    RubricFile,
    RunSource,
    SelectionRecord,
    TargetManifest,
    VariantRef,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures"
OLD_RUNS = sorted(p.name for p in FIXTURES.iterdir() if (p / "identity.json").is_file())
MODELS = [
    RunManifest,
    TargetManifest,
    DatasetRef,
    GraderRecord,
    GradingModuleRef,
    VariantRef,
    RubricFile,
    RunSource,
    MergedShard,
    SelectionRecord,
]


def _every_field() -> RunManifest:
    """A manifest with every field of every model set."""
    target = TargetManifest(
        mode="agent",
        config={"agent": "agent.py:build_graph", "gate": {"max_errored": 1}},
        dataset=DatasetRef(path="/p/data/q.yaml", sha256="a" * 64, name="q"),
        grading_module=GradingModuleRef(
            path="/p/data/graders.py", sha256="b" * 64, copy_path="graders/t/graders.py"
        ),
        graders=[
            GraderRecord(
                id="says_sunny",
                source="module",
                module="graders/t/graders.py",
                options={"match_on": ["expected"]},
                weight=2.0,
                must_pass=True,
                threshold=0.5,
                samples=3,
                min_score=0.0,
                max_score=1.0,
                binary=True,
                llm=True,
                observes_actions=True,
                sees_tool_calls=True,
                code_sha256="f" * 64,
            )
        ],
        repeats=3,
        variant=VariantRef(of="base", name="fast", args={"temperature": 0}),
        plan={"source": "run", "graders": ["contains"]},
        rubrics={"billing@1": RubricFile(path="/p/rubrics/billing.yaml", sha256="c" * 64)},
        selected=2,
        selected_total=5,
    )
    return RunManifest(
        version=MANIFEST_VERSION,
        run_id="20260101-000000-abcdef",
        created="2026-01-01T00:00:00+00:00",
        config_path="/p/tracegrade.yaml",
        config_sha256="d" * 64,
        selection=SelectionRecord(
            ids=["q*"],
            goal="book it",
            targets=["t"],
            split="test",
            bundles=["b"],
            tags=["x"],
            limit=3,
            repeats=2,
            shard=[1, 2],
        ),
        judge={"provider": "openai", "model": "m"},
        pricing={"version": "2026-01", "currency": "USD", "models": {}},
        packages={"python": "3.11.7", "tracegrade": "0.1.0"},
        git_commit="e" * 40,
        targets={"t": target},
        source=RunSource(
            kind="traces",
            target="t",
            paths=["x.jsonl"],
            pairing={"id": 2},
            unmatched=1,
            ambiguous=1,
        ),
        merged_from=[MergedShard(run_id="r1", shard="1/2", run_dir="/runs/r1")],
    )


def test_every_field_of_every_model_is_documented():
    for model in MODELS:
        for name, info in model.model_fields.items():
            assert info.description, f"{model.__name__}.{name} has no docstring"


def test_the_example_sets_every_field():
    """Guards the round trip below: a field added to a model is added to the example."""
    manifest = _every_field()
    target = manifest.targets["t"]
    for model, instance in [
        (RunManifest, manifest),
        (TargetManifest, target),
        (DatasetRef, target.dataset),
        (GraderRecord, target.graders[0]),
        (GradingModuleRef, target.grading_module),
        (VariantRef, target.variant),
        (RubricFile, target.rubrics["billing@1"]),
        (RunSource, manifest.source),
        (MergedShard, manifest.merged_from[0]),
        (SelectionRecord, manifest.selection),
    ]:
        assert isinstance(instance, BaseModel)
        missing = set(model.model_fields) - instance.model_fields_set
        assert not missing, f"{model.__name__}: {sorted(missing)} not set in the example"


def test_a_manifest_with_every_field_round_trips_through_the_file(tmp_path):
    manifest = _every_field()
    write_identity(tmp_path, manifest)
    data = json.loads((tmp_path / "identity.json").read_text())
    assert data["targets"]["t"]["grading_module"]["copy"] == "graders/t/graders.py"
    assert set(data) == set(RunManifest.model_fields)
    assert set(data["targets"]["t"]) == set(TargetManifest.model_fields)
    again = read_manifest(tmp_path)
    assert again == manifest
    assert again.to_json() == data
    assert again.shard == (1, 2)
    assert Selection.from_record(again.selection).record() == again.selection
    assert [s["target"] for s in again.grader_specs()] == ["t"]


def test_an_unset_optional_field_is_not_written(tmp_path):
    """A field a run did not set stays out of its file (no `null` keys for what a run of an
    older kind never had), and the version is always written."""
    manifest = RunManifest(run_id="r", created="2026-01-01T00:00:00+00:00")
    write_identity(tmp_path, manifest)
    data = json.loads((tmp_path / "identity.json").read_text())
    assert data == {"version": MANIFEST_VERSION, "run_id": "r", "created": manifest.created}


def test_a_run_writes_only_declared_fields_and_reads_back_unchanged(tmp_path, capsys):
    path = write_project(tmp_path, questions=["paris"], grading_module=True)
    assert main(["run", "--config", str(path)]) == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    text = (run_dir / "identity.json").read_text()
    manifest = RunDirectory(run_dir).manifest()
    # nothing lands in the model's extras: every key a run writes is a typed field
    assert not manifest.model_extra
    for target in manifest.targets.values():
        assert not target.model_extra
        assert target.grading_module is not None and not target.grading_module.model_extra
        assert target.graders and not any(g.model_extra for g in target.graders)
    assert manifest.targets["t"].selected == 1
    assert manifest.config_sha256 and manifest.pricing is not None
    RunDirectory(run_dir).write_manifest(manifest)
    assert (run_dir / "identity.json").read_text() == text


@pytest.mark.parametrize("name", OLD_RUNS)
def test_an_old_run_manifest_migrates_to_the_typed_record(tmp_path, name):
    run_dir = tmp_path / name
    shutil.copytree(FIXTURES / name, run_dir)
    before = (run_dir / "identity.json").read_bytes()
    raw = json.loads(before)
    manifest = read_manifest(run_dir)
    assert (run_dir / "identity.json").read_bytes() == before  # migrated in memory only
    assert not manifest.model_extra
    assert manifest.version == 1
    target = manifest.targets["t"]
    assert not target.model_extra
    assert target.dataset.sha256 == raw["targets"]["t"]["dataset"]["sha256"]
    assert target.grading_module is not None
    assert target.grading_module.copy_path == raw["targets"]["t"]["grading_module"]["copy"]
    assert [g.id for g in target.graders] == [g["id"] for g in raw["targets"]["t"]["graders"]]
    assert not any(g.model_extra for g in target.graders)
    assert [g.code_sha256 for g in target.graders] == [
        g["code_sha256"] for g in raw["targets"]["t"]["graders"]
    ]
    # serialized as a current manifest is: the keys the first release left out, written out
    data = manifest.to_json()
    for key in ("version", "pricing", "judge", "git_commit", "selection", "packages"):
        assert key in data
    assert data["targets"]["t"]["repeats"] == raw["targets"]["t"].get("repeats", 1)


def test_the_first_release_manifest_gains_what_it_left_out():
    raw = json.loads((FIXTURES / "run_v0" / "identity.json").read_text())
    assert "version" not in raw and "pricing" not in raw and "repeats" not in raw["targets"]["t"]
    migrated = manifest_module.migrate(raw)
    assert migrated["version"] == 1
    assert migrated["pricing"] is None
    assert migrated["targets"]["t"]["repeats"] == 1
    assert RunManifest.model_validate(migrated).targets["t"].repeats == 1


def test_migrating_leaves_a_current_manifest_as_it_is():
    data = _every_field().to_json()
    assert manifest_module.migrate(data) == data


ROOT = Path(__file__).resolve().parent.parent
# The modules that name the manifest's file: the one reader and writer, the directory's layout,
# the lock taken on it. Every other module gets a `RunManifest` from them.
MANIFEST_FILE_MODULES = {"rundir/identity.py", "rundir/directory.py", "rundir/runlock.py"}


def _sources() -> list[tuple[str, ast.Module]]:
    out = []
    for folder in ("harness", "graders"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT / folder).as_posix()
            out.append((f"{folder}/{relative}", ast.parse(path.read_text(encoding="utf-8"))))
    return out


def _named_manifest(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id == "manifest") or (
        isinstance(node, ast.Attribute) and node.attr == "manifest"
    )


def test_no_module_reads_the_manifest_as_a_dict():
    found = []
    for name, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Subscript) and _named_manifest(node.value):
                found.append(f"{name}:{node.lineno} manifest[...]")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and _named_manifest(node.func.value)
            ):
                found.append(f"{name}:{node.lineno} manifest.get(...)")
            is_file_name = (isinstance(node, ast.Constant) and node.value == "identity.json") or (
                isinstance(node, ast.Name) and node.id == "IDENTITY_FILE"
            )
            if is_file_name and name.split("/", 1)[1] not in MANIFEST_FILE_MODULES:
                found.append(f"{name}:{node.lineno} opens identity.json itself")
    assert not found, "read the typed RunManifest instead: " + "; ".join(found)


def test_the_run_and_its_outcome_hand_out_the_typed_manifest_only():
    from tracegrade import RunOutcome

    assert not hasattr(RunDirectory, "identity")
    assert "identity" not in RunOutcome.__dataclass_fields__
    assert RunOutcome.__dataclass_fields__["manifest"].type == "RunManifest | None"
