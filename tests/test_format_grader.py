"""format_grader: seed 000's rules, each boundary a case, with golden reasons."""

from __future__ import annotations

import pytest

from tracegrade.graders import FormatGrader, build_context

GRADER = FormatGrader()
PLAIN = "The site has three content types: page, article and kb_doc."


def grade(response, *, expected=None, limit=4000):
    row = {"id": "q", "input": "x"}
    if expected is not None:
        row["expected"] = expected
    return GRADER.grade("x", response, build_context(row, messages=[], response_char_limit=limit))


@pytest.mark.parametrize("response", ["", "   ", "\n\t\n"])
@pytest.mark.parametrize("expected", [None, {"format": "json"}, {"format": "text"}])
def test_empty_or_whitespace_scores_zero_before_any_rule(response, expected):
    result = grade(response, expected=expected)
    assert (result.score, result.reason) == (0.0, "empty response")


@pytest.mark.parametrize("response", ['{"a": 1}', "[1, 2]", " 3 ", '"text"', "null"])
def test_json_valid(response):
    result = grade(response, expected={"format": "json"})
    assert (result.score, result.reason) == (5.0, "valid JSON")


@pytest.mark.parametrize(
    ("response", "error"),
    [
        ("{'a': 1}", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        ('Here: {"a": 1}', "Expecting value: line 1 column 1 (char 0)"),
        ('{"a": 1} trailing', "Extra data: line 1 column 10 (char 9)"),
    ],
)
def test_json_invalid_gives_decode_error(response, error):
    result = grade(response, expected={"format": "json"})
    assert (result.score, result.reason) == (0.0, f"invalid JSON: {error}")


def test_json_case_insensitive_and_other_formats_use_text_rules():
    assert grade('{"a": 1}', expected={"format": "JSON"}).score == 5.0
    # markdown is scored by the text rules (the seed's note): a heading costs a point
    result = grade("# Title\n" + PLAIN, expected={"format": "markdown"})
    assert (result.score, result.reason) == (4.0, "1 text-rule violation: markdown heading")
    assert grade('{"a": 1}', expected={"format": "yaml"}).score == 4.0  # too short
    assert grade(PLAIN, expected="a plain expected answer").score == 5.0


@pytest.mark.parametrize(
    ("response", "score", "reason"),
    [
        (PLAIN, 5.0, "no text-rule violations"),
        ("# Heading\n" + PLAIN, 4.0, "1 text-rule violation: markdown heading"),
        (PLAIN + "\n### Sub", 4.0, "1 text-rule violation: markdown heading"),
        (PLAIN + "\n#hashtag is no heading", 5.0, "no text-rule violations"),
        (PLAIN + " see #1 above", 5.0, "no text-rule violations"),
        (PLAIN + " See [the docs](https://x.org/a).", 4.0, "1 text-rule violation: inline link"),
        (PLAIN + " [not a link] (x)", 5.0, "no text-rule violations"),
        (PLAIN + " This is **important**.", 4.0, "1 text-rule violation: bold"),
        (PLAIN + " This is __important__.", 4.0, "1 text-rule violation: bold"),
        (PLAIN + " 2 ** 3 ** 2", 5.0, "no text-rule violations"),
        ("short answer", 4.0, "1 text-rule violation: shorter than 20 characters (12)"),
        ("x" * 19, 4.0, "1 text-rule violation: shorter than 20 characters (19)"),
        ("x" * 20, 5.0, "no text-rule violations"),
        (
            "# **[a](b)**",
            1.0,
            "4 text-rule violations: markdown heading; inline link; bold; "
            "shorter than 20 characters (12)",
        ),
    ],
)
def test_text_rules(response, score, reason):
    result = grade(response)
    assert (result.score, result.reason) == (score, reason)


@pytest.mark.parametrize(("length", "score"), [(99, 5.0), (100, 5.0), (101, 4.0)])
def test_length_limit_boundary(length, score):
    result = grade("y" * length, limit=100)
    assert result.score == score
    if score < 5:
        assert result.reason == "1 text-rule violation: longer than the 100-character limit (101)"


def test_default_limit_is_4000_and_floor():
    assert grade("z" * 4001 + "\n# h **b** [l](u)", limit=None).score == 1.0
    result = grade("z" * 4000)
    assert result.score == 5.0 and result.max_score == 5.0
