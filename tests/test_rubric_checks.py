"""Executable rubric checks and the `rubric_checks` grader: each check's verdict and reason,
the four combine modes with weights, 0-1 scaled onto 0-5, skips, and per-check details."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tracegrade import RubricError
from tracegrade.graders import Check, GraderServices, Rubric, RubricStore
from tracegrade.graders.rubrics import RubricChecksGrader
from tracegrade.graders.rubrics.executable import run_check
from tracegrade.graders.rubrics.rubric_checks import combine


def check(kind: str, **params) -> Check:
    return Check(id="c", kind=kind, params=params)


# -- executors --------------------------------------------------------------------------------
def test_must_not_contain_is_case_insensitive_by_default_and_names_what_it_found():
    verdict = run_check(check("must_not_contain", values=["Chris Lee", "Pat"]), "ask chris lee")
    assert not verdict.passed and verdict.score == 0.0
    assert "'Chris Lee'" in verdict.reason and "'Pat'" not in verdict.reason


def test_must_not_contain_case_sensitive_only_matches_the_exact_case():
    strict = check("must_not_contain", values=["Chris Lee"], case_sensitive=True)
    assert run_check(strict, "ask chris lee").passed
    assert not run_check(strict, "ask Chris Lee").passed


def test_must_contain_gives_the_share_found_and_names_the_missing():
    verdict = run_check(check("must_contain", values=["B100", "confirmed", "Dec"]), "B100 is dec")
    assert verdict.score == pytest.approx(2 / 3) and not verdict.passed
    assert "'confirmed'" in verdict.reason
    assert run_check(check("must_contain", values=["b100"]), "B100").passed
    assert not run_check(check("must_contain", values=["b100"], case_sensitive=True), "B100").passed


def test_regex_must_match_and_must_not_match():
    date = check("regex", pattern=r"\d{4}-\d{2}-\d{2}")
    assert run_check(date, "on 2026-12-01").passed
    assert not run_check(date, "on December 1st").passed
    shout = check("regex", pattern="[A-Z]{5,}", must_match=False)
    assert run_check(shout, "calm words").passed
    failed = run_check(shout, "STOP SHOUTING")
    assert not failed.passed and "'SHOUTING'" in failed.reason
    assert run_check(check("regex", pattern="hello", case_sensitive=False), "HELLO").passed


def test_json_schema_parses_the_response_and_locates_the_violation():
    schema = {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}
    c = check("json_schema", schema=schema)
    assert run_check(c, '{"id": "B1"}').passed
    bad = run_check(c, '{"id": 7}')
    assert not bad.passed and "/id" in bad.reason
    not_json = run_check(c, "Sure! here it is")
    assert not not_json.passed and "not JSON" in not_json.reason


@given(st.text(max_size=60), st.integers(min_value=0, max_value=60))
def test_max_length_passes_exactly_up_to_the_limit(text: str, limit: int):
    assert run_check(check("max_length", max_chars=limit), text).passed == (len(text) <= limit)


def test_a_judge_kind_is_not_executable():
    with pytest.raises(ValueError, match="not executable"):
        run_check(Check(id="p", kind="policy-compliance"), "text")


# -- combine ----------------------------------------------------------------------------------
def rubric(mode: str, weights=None) -> Rubric:
    checks = [check("max_length", max_chars=1).model_copy(update={"id": i}) for i in "abc"]
    return Rubric(
        id="r", version="1", checks=checks, scoring={"mode": mode, "weights": weights or {}}
    )


def test_combine_modes():
    scores = {"a": 1.0, "b": 0.5, "c": 0.0}
    assert combine(rubric("all"), scores) == 0.0
    assert combine(rubric("all"), {"a": 1.0, "b": 1.0}) == 1.0
    assert combine(rubric("any"), scores) == 1.0
    assert combine(rubric("any"), {"b": 0.5, "c": 0.0}) == 0.0
    assert combine(rubric("min"), scores) == 0.0
    assert combine(rubric("min"), {"a": 1.0, "b": 0.5}) == 0.5
    assert combine(rubric("weighted_mean"), scores) == pytest.approx(0.5)
    assert combine(rubric("weighted_mean", {"a": 3}), scores) == pytest.approx(3.5 / 5)


@given(
    st.dictionaries(st.sampled_from("abc"), st.floats(0, 1), min_size=1),
    st.sampled_from(["all", "any", "weighted_mean", "min"]),
)
def test_combine_stays_within_0_1_and_all_implies_any(scores, mode):
    value = combine(rubric(mode), scores)
    assert 0.0 <= value <= 1.0
    if combine(rubric("all"), scores) == 1.0:
        assert combine(rubric("any"), scores) == 1.0
    assert combine(rubric("min"), scores) <= combine(rubric("weighted_mean"), scores) + 1e-12


# -- the grader -------------------------------------------------------------------------------
@pytest.fixture
def store(tmp_path: Path) -> RubricStore:
    data = {
        "id": "hygiene",
        "version": "1.0.0",
        "scoring": {"mode": "weighted_mean", "weights": {"no-names": 3}},
        "checks": [
            {
                "id": "no-names",
                "kind": "must_not_contain",
                "severity": "critical",
                "params": {"values": ["Chris Lee"]},
            },
            {"id": "ticket", "kind": "must_contain", "params": {"values": ["TICKET-"]}},
            {"id": "brief", "kind": "max_length", "required": False, "params": {"max_chars": 5}},
            {"id": "tone", "kind": "llm_judge", "criterion": "Polite."},
        ],
    }
    (tmp_path / "hygiene.yaml").write_text(yaml.safe_dump(data))
    (tmp_path / "prose.json").write_text(
        json.dumps(
            {
                "id": "prose",
                "version": "1",
                "checks": [{"id": "tone", "kind": "llm_judge", "criterion": "Polite."}],
            }
        )
    )
    return RubricStore(tmp_path)


def grade(store, response, ref="rubric/hygiene@1.0.0", **row):
    grader = RubricChecksGrader(services=GraderServices(rubrics=store))
    context = {"id": "q1", "messages": [], **row}
    if ref is not None:
        context["rubric_ref"] = ref
    return grader.grade("question", response, context)


def test_rubric_checks_scores_required_checks_on_0_5_with_weights(store):
    result = grade(store, "Chris Lee will look at TICKET-12 for you soon.")
    # no-names fails (weight 3), ticket passes (weight 1): (0*3 + 1*1) / 4 = 0.25 -> 1.25
    assert result.score == pytest.approx(1.25)
    assert (result.min_score, result.max_score) == (0.0, 5.0)
    checks = {c["id"]: c for c in result.details["checks"]}
    assert set(checks) == {"no-names", "ticket", "brief"}  # llm_judge is prose, not executed
    assert checks["no-names"]["status"] == "fail" and checks["no-names"]["severity"] == "critical"
    assert checks["ticket"]["status"] == "pass"
    assert checks["brief"]["status"] == "fail" and checks["brief"]["required"] is False
    for entry in checks.values():
        assert entry["rubric"] == "hygiene" and entry["version"] == "1.0.0"
    assert "critical failures: 1" in result.reason and "'Chris Lee'" in result.reason


def test_optional_checks_are_reported_but_not_combined(store):
    assert grade(store, "See TICKET-1. This reply is long.").score == 5.0


def test_rubric_checks_skips_without_rubric_ref_or_executable_checks(store):
    no_ref = grade(store, "hi", ref=None)
    assert no_ref.skipped and no_ref.reason == "no rubric_ref"
    prose = grade(store, "hi", ref="rubric/prose@1")
    assert prose.skipped and "no executable checks" in prose.reason


def test_an_unknown_ref_or_no_store_is_an_input_error(store):
    with pytest.raises(RubricError, match=r"versions available: 1\.0\.0"):
        grade(store, "hi", ref="rubric/hygiene@2.0.0")
    with pytest.raises(RubricError, match="no rubric directory"):
        grade(None, "hi")


def test_rubric_dir_option_builds_a_store(store):
    grader = RubricChecksGrader(rubric_dir=str(store.directory))
    result = grader.grade("q", "TICKET-9", {"id": "q", "rubric_ref": "rubric/hygiene@1.0.0"})
    assert result.score == 5.0
