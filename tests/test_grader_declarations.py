"""Graders declare, typed, the dataset keys they own and the evidence they grade from; both are
checked when a grader registers (built-ins and plugins alike), and the catalog shows them."""

from __future__ import annotations

import pytest

from tracegrade import PluginError
from tracegrade.graders import Grader, GraderRegistry, load_registry
from tracegrade.graders.declarations import EVIDENCE, evidence_of, keys_of_row
from tracegrade.graders.registry import validate_grader_class


class AcmeClaims(Grader):
    id = "acme_claims"
    label = "Claims"
    owns = ("metadata.acme_claims",)
    evidence = ("answer", "tool_calls")

    def grade(self, input, response, context):
        return self.result(5.0, "ok")


def variant(**declarations):
    return type("Variant", (AcmeClaims,), declarations)


@pytest.mark.parametrize(
    ("declarations", "problem"),
    [
        ({"owns": "trajectory"}, "`owns` must be a tuple of strings"),
        ({"owns": ("trajectory", 3)}, "`owns` must be a tuple of strings"),
        ({"owns": ("Bad Key",)}, "`owns` names 'Bad Key'"),
        ({"evidence": ("database",)}, "`evidence` names 'database': one of answer"),
        ({"evidence": "answer"}, "`evidence` must be a tuple of strings"),
    ],
)
def test_a_bad_declaration_is_refused_at_registration_naming_the_source(declarations, problem):
    with pytest.raises(PluginError) as caught:
        validate_grader_class(variant(**declarations), source="acme-graders (claims)")
    assert problem in caught.value.message
    assert "acme-graders (claims)" in caught.value.message


def test_a_plugin_grader_owning_a_key_becomes_its_owner_after_the_built_ins():
    builtins = load_registry()
    registry = GraderRegistry.from_classes([builtins.get(i) for i in builtins.ids()] + [AcmeClaims])
    assert [c.id for c in registry.owners("metadata.acme_claims")] == ["acme_claims"]
    assert "metadata.acme_claims" in registry.owned_keys()
    row = next(r for r in registry.catalog() if r.id == "acme_claims")
    assert row.owns == ("metadata.acme_claims",) and row.evidence == ("answer", "tool_calls")


def test_every_built_in_declares_what_it_owns_and_needs():
    registry = load_registry()
    expected = {
        "expected_tools": "tool_usage_grader",
        "trajectory": "trajectory_grader",
        "expected_interrupts": "interrupt_grader",
        "metadata.state": "state_grader",
        "expected.format": "format_grader",
        "rubric_ref": "rubric_checks",  # deterministic before the rubric judge
    }
    assert {key: registry.owners(key)[0].id for key in expected} == expected
    assert evidence_of(registry.get("state_grader")) == {"environment"}
    assert evidence_of(registry.get("interrupt_grader")) == {"interrupts"}
    for grader_id in registry.ids():
        cls = registry.get(grader_id)
        assert evidence_of(cls) <= set(EVIDENCE)
        assert ("judge" in evidence_of(cls)) == bool(cls.llm)


def test_a_key_is_carried_by_the_question_or_by_one_of_its_turns():
    row = {
        "id": "q",
        "turns": ["hi", {"content": "go", "trajectory": {"forbid": ["x"]}}],
        "metadata": {"state": {"assertions": []}},
    }
    assert keys_of_row(row, ["trajectory", "metadata.state", "expected.format"]) == [
        "trajectory",
        "metadata.state",
    ]
