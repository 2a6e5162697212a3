"""The rubric store: `rubric_ref` resolves to exactly the version named; anything else is an
input error (exit 4) naming the ref, the question and what is available."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tracegrade import ExitCode, RubricError
from tracegrade.graders import RubricStore, criteria_text
from tracegrade.graders.rubrics import append_criteria, parse_ref

ROOT = Path(__file__).resolve().parents[1]

V1 = """\
id: tone
version: 1.0.0
checks:
  - id: polite
    kind: llm_judge
    criterion: The reply is polite.
"""
V2 = V1.replace("1.0.0", "2.0.0").replace("polite.", "polite and brief.")


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    (tmp_path / "tone-v1.yaml").write_text(V1)
    nested = tmp_path / "team"
    nested.mkdir()
    (nested / "tone-v2.yaml").write_text(V2)
    shutil.copy(ROOT / "schema/examples/rubrics/valid/booking-claim.json", tmp_path)
    (tmp_path / "README.md").write_text("not a rubric")
    return tmp_path


def test_resolve_returns_exactly_the_version_named(store_dir: Path):
    store = RubricStore(store_dir)
    assert len(store) == 3
    v1 = store.resolve("rubric/tone@1.0.0")
    v2 = store.resolve("rubric/tone@2.0.0")
    assert (v1.version, v2.version) == ("1.0.0", "2.0.0")
    assert v1.checks[0].criterion == "The reply is polite."
    assert v2.checks[0].criterion == "The reply is polite and brief."
    assert store.versions("tone") == ["1.0.0", "2.0.0"]


def test_a_single_check_file_resolves_as_a_rubric_of_one_check(store_dir: Path):
    rubric = RubricStore(store_dir).resolve("rubric/booking-claim@1.0.0")
    assert [c.id for c in rubric.checks] == ["booking-claim"]
    assert rubric.checks[0].kind == "tool-claim"


def test_unknown_version_names_ref_question_and_versions_available(store_dir: Path):
    with pytest.raises(RubricError) as info:
        RubricStore(store_dir).resolve("rubric/tone@1.1.0", question_id="q7")
    error = info.value
    assert error.exit_code == ExitCode.INVALID_INPUT
    text = str(error)
    assert "rubric/tone@1.1.0" in text and "'q7'" in text
    assert "versions available: 1.0.0, 2.0.0" in text
    assert error.context["versions"] == ["1.0.0", "2.0.0"]


def test_unknown_id_names_the_rubrics_available(store_dir: Path):
    with pytest.raises(RubricError) as info:
        RubricStore(store_dir).resolve("rubric/tonne@1.0.0", question_id="q1")
    text = str(info.value)
    assert "no rubric 'tonne'" in text
    assert "rubrics available: booking-claim, tone" in text


@pytest.mark.parametrize("ref", ["tone@1.0.0", "rubric/tone", "rubric/tone@", "rubric/@1.0.0"])
def test_a_malformed_ref_is_an_input_error(store_dir: Path, ref: str):
    with pytest.raises(RubricError, match="rubric/<id>@<version>"):
        RubricStore(store_dir).resolve(ref)
    with pytest.raises(ValueError):
        parse_ref(ref)


def test_an_invalid_file_in_the_directory_fails_the_store(store_dir: Path):
    (store_dir / "bad.yaml").write_text(V1.replace("kind: llm_judge", "kind: vibes"))
    with pytest.raises(RubricError) as info:
        RubricStore(store_dir)
    assert info.value.exit_code == ExitCode.INVALID_INPUT
    assert "bad.yaml" in str(info.value) and "vibes" in str(info.value)


def test_the_same_id_and_version_twice_is_rejected(store_dir: Path):
    (store_dir / "copy.yaml").write_text(V1)
    with pytest.raises(RubricError, match=r"tone@1\.0\.0 is also defined in"):
        RubricStore(store_dir)


def test_a_missing_directory_is_an_input_error(tmp_path: Path):
    with pytest.raises(RubricError, match="rubric directory not found"):
        RubricStore(tmp_path / "nope")


def test_resolve_questions_reports_every_bad_ref_at_once(store_dir: Path):
    store = RubricStore(store_dir)
    rows = [
        {"id": "a", "rubric_ref": "rubric/tone@1.0.0"},
        {"id": "b"},
        {"id": "c", "rubric_ref": "rubric/tone@9"},
        {"id": "d", "rubric_ref": "rubric/nope@1"},
    ]
    with pytest.raises(RubricError) as info:
        store.resolve_questions(rows)
    assert "2 unresolvable" in str(info.value)
    assert "'c'" in str(info.value) and "'d'" in str(info.value)
    assert set(store.resolve_questions(rows[:2])) == {"a"}


def test_criteria_text_carries_every_description_and_llm_judge_prose():
    store = RubricStore(ROOT / "examples/rubrics")
    rubric = store.resolve("rubric/support-policy@1.0.0")
    text = criteria_text(rubric)
    assert text.startswith("Rubric support-policy@1.0.0")
    for check in rubric.checks:
        assert f"[{check.id}]" in text
    assert "The reply is polite and never blames the customer." in text
    assert "complies with every applicable rule" in text
    merged = append_criteria("Answer the question.", rubric)
    assert merged.startswith("Answer the question.\n\n") and merged.endswith(text)
    assert append_criteria(None, rubric) == text
