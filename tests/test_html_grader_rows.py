"""The HTML report's grader rows, built once per page by content (`GraderRows`): a row read
back from what the page already built is exactly the row built for that question alone,
through the same redaction, whatever came before it on the page."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade import QuestionAnswer, QuestionResult
from tracegrade.redaction import DEFAULT_POLICY, REDACTED, RedactionPolicy
from tracegrade.reports.html.data import build_question
from tracegrade.verdicts.scoring import GraderVerdict, score_question

SECRET = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4"  # an OpenAI-style key the built-in policy masks

_REASONS = st.sampled_from(["all met", "3 of 4 met", f"used {SECRET}", "the key is hunter2"])
_SCORES = st.sampled_from([None, 0.0, 5.0, 5, 2.5, 1])
_ANSWERS = st.sampled_from(["booked", f"token {SECRET}"])


def _question(qid: str, graders: list[GraderVerdict]) -> QuestionResult:
    return score_question(QuestionResult(id=qid, target="t", graders=graders))


def _verdict(reason: str, score, *, threshold: float = 0.0, checks=()) -> GraderVerdict:
    return GraderVerdict.model_construct(  # as the store reads them back: no coercion
        grader_id="g",
        score=score,
        min_score=0.0,
        max_score=5.0,
        reason=reason,
        error=False,
        binary=False,
        spec=GraderVerdict.model_fields["spec"]
        .default_factory()
        .model_copy(update={"threshold": threshold}),
        sample_scores=[],
        checks=list(checks),
        details={},
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(_REASONS, _SCORES, st.sampled_from([0.0, 3.0, 3]), _ANSWERS),
        min_size=2,
        max_size=8,
    ),
    st.sampled_from([DEFAULT_POLICY, RedactionPolicy(patterns=("hunter2",))]),
)
def test_a_page_s_grader_rows_are_each_question_s_own(questions, policy):
    seen: dict = {}
    for n, (reason, score, threshold, answer) in enumerate(questions):
        q = _question(f"q{n}", [_verdict(reason, score, threshold=threshold)])
        stored = QuestionAnswer(row={}, response=answer)
        on_page = build_question(q, stored=stored, record=None, redaction=policy, seen=seen)
        alone = build_question(q, stored=stored, record=None, redaction=policy)
        assert on_page == alone
        # what the page encodes tells 5 from 5.0 as the question alone does
        assert repr(on_page["graders"]) == repr(alone["graders"])
        assert SECRET not in repr(on_page)


def test_a_reason_masked_once_is_masked_for_every_question_after_it():
    seen: dict = {}
    dirty = _question("q0", [_verdict(f"used {SECRET}", 5.0)])
    first = build_question(dirty, stored=None, record=None, seen=seen)
    again = build_question(_question("q1", [_verdict(f"used {SECRET}", 5.0)]), stored=None,
                           record=None, seen=seen)  # fmt: skip
    assert first["graders"][0]["reason"] == again["graders"][0]["reason"] == f"used {REDACTED}"
    assert len(seen) == 1
