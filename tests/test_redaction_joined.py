"""One scan for many texts (`RedactionPolicy.clean`, `DeferredScan`): the HTML report checks
all of a question's texts in one search and redacts one by one only where that search finds
something; it measures a call's arguments as JSON only when a bound says they may be over
its limit. What it shows must be exactly what a scan of each text and a measure of every
call's arguments show."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade import Outcome, QuestionAnswer, QuestionResult, ToolCall, ToolRecord
from tracegrade.redaction import DEFAULT_POLICY, REDACTED, DeferredScan, RedactionPolicy
from tracegrade.reports.html import data as html_data
from tracegrade.verdicts.scoring import GraderVerdict, score_question

_SECRETS = [
    "Bearer abcdefghijklmnop123",
    "sk-proj-ABCDEFGHIJKLMNOPQRSTUV",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmN",
    "ghp_" + "a" * 36,
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",  # an AWS secret access key: 40, mixed
    "x" * 40,  # a run of 40 that is no AWS key: kept
    "Ab1" * 20,  # a run of 60: kept
    "password=hunter22",
    "my password is hunter22",
    "postgres://admin:s3cr3tpw@db",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEow",  # unterminated: redacted to the end
    "Bearer",  # alone: nothing, but glued to the next text by a newline it would be
    "abcdefghijkl",
]
_PIECE = st.one_of(
    st.sampled_from(_SECRETS),
    st.text(alphabet="abcXYZ019 .,:;=\n\t\"'{}[]/+-_@", max_size=16),
)
_TEXT = st.lists(_PIECE, max_size=4).map("".join)


@given(texts=st.lists(_TEXT, max_size=8))
def test_clean_only_when_every_text_scans_unchanged(texts):
    if DEFAULT_POLICY.clean(texts):
        assert [DEFAULT_POLICY.text(t) for t in texts] == texts


@given(texts=st.lists(st.text(alphabet="abcdefg XYZ.,:-()0123", max_size=60), max_size=30))
def test_ordinary_texts_are_clean_in_one_scan(texts):
    # the common case the one scan exists for: nothing secret, nothing scanned again
    assert DEFAULT_POLICY.clean(texts)


def test_a_pattern_anchored_to_a_texts_edges_is_scanned_text_by_text():
    policy = RedactionPolicy(patterns=(r"^hunter2$",))
    assert policy.text("hunter2") == REDACTED
    assert not policy.clean(["hello", "hunter2"])  # joined, ^…$ would match nothing


def _question(text: str, result: str, argument: str) -> tuple:
    verdict = GraderVerdict(grader_id="g", score=1.0, min_score=0, max_score=1, reason=text)
    q = score_question(QuestionResult(id="q1", target="t", graders=[verdict], trace_id="ab" * 16))
    stored = QuestionAnswer(
        row={"id": "q1"},
        messages=[{"role": "user", "content": text}],
        response=result,
        has_record=True,
    )
    record = ToolRecord(
        [
            ToolCall(seq=0, name="f", qualified_id="a:f", call_id="c0", outcome=Outcome.OK,
                     arguments={"note": argument, "nested": {"x": [argument, 3]}, "token": "v"},
                     result=result, agent="a")
        ]
    )  # fmt: skip
    return q, stored, record


@settings(max_examples=60, deadline=None)
@given(text=_TEXT, result=_TEXT, argument=_TEXT)
def test_a_question_on_the_page_is_what_a_scan_of_each_text_gives(text, result, argument):
    q, stored, record = _question(text, result, argument)
    shown = html_data.build_question(q, stored=stored, record=record)
    each = html_data._question(
        q, stored=stored, record=record, trace_url=None, policy=DEFAULT_POLICY
    )
    assert shown == each
    assert shown["calls"][0]["args"]["token"] == REDACTED  # the name rule holds either way


def test_deferred_scan_notes_texts_and_applies_the_name_rule_at_once():
    deferred = DeferredScan(DEFAULT_POLICY)
    out = deferred.arguments({"api_key": "abc", "q": "Bearer abcdefghijklmnop123", "n": 3})
    assert out == {"api_key": REDACTED, "q": "Bearer abcdefghijklmnop123", "n": 3}
    assert not deferred.clean()  # the Bearer token: built again with the policy itself
    assert DeferredScan(DEFAULT_POLICY).clean()  # nothing seen, nothing to redact


def _measured_always(arguments: dict, policy=DEFAULT_POLICY) -> dict:
    """The page's arguments as before the bound: measured as JSON every time."""
    out = html_data._arguments(arguments, policy)
    if "(cut)" in out:
        return out
    size = len(json.dumps(out, ensure_ascii=False, default=str))
    if size > html_data.ARGUMENTS_CHARS:
        return {"(cut)": f"arguments of {size:,} characters as JSON; {html_data.IN_TRACE}"}
    return out


_ARG_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(alphabet='a"\\\n\x01é', max_size=50)
    | st.builds(lambda n, c: c * n, st.integers(0, 6_000), st.sampled_from(["a", '"', "\x01"])),
    lambda inner: (
        st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner, max_size=6)
    ),
    max_leaves=30,
)


@settings(max_examples=150, deadline=None)
@given(arguments=st.dictionaries(st.text(max_size=8), _ARG_VALUES, max_size=6))
def test_arguments_measured_only_when_they_may_be_over_the_limit_show_the_same(arguments):
    # the bound skips json.dumps for small arguments; near and over the limit (20,000
    # characters as JSON: long strings, quotes and control characters escaped) it measures
    assert html_data._arguments(arguments, DEFAULT_POLICY) == _measured_always(arguments)
