"""Code graders (seed 003): exact_match, contains, similarity, @grader functions, grading modules."""

from __future__ import annotations

import textwrap

import pytest

from tracegrade import GradeResult, InputError, JudgeReply, RunRecord, ToolRecord
from tracegrade.graders import (
    Attachment,
    Contains,
    ExactMatch,
    GraderServices,
    Similarity,
    build_context,
    find_grading_module,
    grader,
    levenshtein,
    load_grading_module,
    load_registry,
)
from tracegrade.graders.code import FunctionGrader


def ctx(**row):
    return build_context({"id": "q1", **row}, messages=[{"role": "user", "content": "x"}])


# -- exact_match ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("output", "expected", "score"),
    [
        ("1879", "1879", 1.0),
        ("  1879\n", "1879", 1.0),
        ("1879.", "1879", 0.0),
        ("1879", 1879, 1.0),  # string output parsed as JSON for a non-string expected
        ("1879.0", 1879, 1.0),
        ("1880", 1879, 0.0),
        ('{"a": [1, 2]}', {"a": [1, 2]}, 1.0),
        ("a: [1, 2]", {"a": [1, 2]}, 1.0),  # YAML when JSON fails
        ('{"a": [2, 1]}', {"a": [1, 2]}, 0.0),
        ('{"a": 1, "b": 2}', {"a": 1}, 0.0),
        ("true", True, 1.0),
        ("1", True, 0.0),  # booleans never equal numbers
        ("null", None, 1.0),
        ("", None, 1.0),  # YAML reads an empty document as null
        ("not: [valid", ["x"], 0.0),
    ],
)
def test_exact_match(output, expected, score):
    assert ExactMatch().grade("", output, ctx(expected=expected)).score == score


def test_exact_match_reason_and_scale():
    result = ExactMatch().grade("", "1880", ctx(expected=1879))
    assert result.reason == "output differs from expected: expected 1879, got 1880"
    assert (result.min_score, result.max_score, result.scale_label) == (0.0, 1.0, "(binary, 0-1)")
    assert ExactMatch().grade("", "1879", ctx(expected=1879)).reason == "output equals expected"


def test_match_on_path_and_skip():
    row = {"expected": {"format": "text", "answer": "Ulm"}}
    assert ExactMatch(match_on=["expected", "answer"]).grade("", "Ulm", ctx(**row)).score == 1.0
    assert ExactMatch(match_on="expected.answer").grade("", "Ulm", ctx(**row)).score == 1.0
    assert ExactMatch(match_on="facts.0").grade("", "Ulm", ctx(facts=["Ulm"])).score == 1.0
    skipped = Contains(match_on=["expected", "city"]).grade("", "Ulm", ctx(**row))
    assert skipped.skipped and skipped.reason == "no `expected.city` in the question, skipping"
    assert ExactMatch().grade("", "Ulm", ctx()).reason == "no `expected` in the question, skipping"


# -- contains ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("output", "expected", "score", "reason"),
    [
        ("Einstein was born in 1879.", "1879", 1.0, "output contains '1879'"),
        ("Einstein was born in 1879.", 1879, 1.0, "output contains '1879'"),
        ("born in 1880", 1879, 0.0, "output does not contain '1879'"),
        ("it is TRUE", True, 0.0, "output does not contain 'true'"),
        ("ulm", "Ulm", 0.0, "output does not contain 'Ulm'"),
    ],
)
def test_contains(output, expected, score, reason):
    result = Contains().grade("", output, ctx(expected=expected))
    assert (result.score, result.reason) == (score, reason)


# -- similarity ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [("", "", 0), ("abc", "", 3), ("kitten", "sitting", 3), ("flaw", "lawn", 2), ("ab", "ba", 2)],
)
def test_levenshtein(a, b, distance):
    assert levenshtein(a, b) == distance == levenshtein(b, a)


def test_similarity_is_normalized_levenshtein():
    result = Similarity().grade("", "kitten", ctx(expected="sitting"))
    assert result.score == pytest.approx(1 - 3 / 7)
    assert result.reason == "similarity 0.571 (Levenshtein distance 3 over 7 characters)"
    assert Similarity().grade("", " same ", ctx(expected="same")).score == 1.0
    assert Similarity().grade("", "", ctx(expected="")).score == 1.0
    assert Similarity().grade("", "xyz", ctx(expected="abc")).score == 0.0


def test_registered_ids_and_options():
    registry = load_registry()
    made = registry.create("contains", name="has-date", weight=0.5, must_pass=True)
    assert made.id == "has-date" and made.spec.weight == 0.5 and made.spec.must_pass
    assert made.grade("", "1879", ctx(expected="1879")).grader_id == "has-date"
    assert {"exact_match", "contains", "similarity"} <= set(registry.ids())


# -- @grader functions --------------------------------------------------------------------------
def test_grader_decorator_makes_a_grader_subclass():
    @grader
    def mentions_year(output):
        return "1879" in output

    assert issubclass(mentions_year, FunctionGrader)
    g = mentions_year()
    assert (g.id, g.min_score, g.max_score) == ("mentions_year", 0.0, 1.0)
    assert g.grade("", "born 1879", ctx()).score == 1.0
    assert g.grade("", "born 1880", ctx()).score == 0.0


def test_grader_receives_the_arguments_it_names(tmp_path):
    seen = {}
    record = RunRecord(question_id="q1", response="out", usage={"total_tokens": 9})

    @grader(name="inspect", weight=2, must_pass=True, threshold=0.5)
    def inspect_all(output, question, workdir, record, judge):
        seen.update(output=output, question=question, workdir=workdir, record=record, judge=judge)
        return 0.75

    g = inspect_all(services=GraderServices(workdir=tmp_path))
    context = build_context(
        {"id": "q1", "expected": 3}, messages=[], run_record=record, tool_calls=ToolRecord([])
    )
    result = g.grade("", "out", context)
    assert (result.grader_id, result.score, result.reason) == ("inspect", 0.75, "score 0.75")
    assert seen["output"] == "out" and seen["workdir"] == tmp_path
    assert seen["question"] == {"id": "q1", "expected": 3}
    assert seen["record"] is record and seen["judge"] is None
    assert (g.spec.weight, g.spec.must_pass, g.spec.threshold) == (2.0, True, 0.5)


def test_record_built_from_context_when_runner_gave_none():
    @grader
    def counts(record):
        return len(record.tool_calls) == 0 and record.response == "hi"

    assert (
        counts()
        .grade("", "hi", build_context({"id": "q"}, messages=[], tool_calls=ToolRecord([])))
        .score
        == 1.0
    )


async def test_async_grader_and_goal_judge():
    class Provider:
        calls = []

        async def acomplete(self, request):
            self.calls.append(request)
            return JudgeReply(text='{"score": 0.8, "reasoning": "ok"}')

    @grader
    async def polite(output, judge):
        return await judge(goal="is polite")

    g = polite(services=GraderServices(judge_provider=Provider()))
    result = await g.agrade("", "Thank you!", ctx())
    assert result.score == 0.8
    assert "<goal>is polite</goal>" in Provider.calls[0].messages[1]["content"]


async def test_goal_judge_unusable_answer_is_an_error():
    class Provider:
        async def acomplete(self, request):
            return JudgeReply(text="I think it is fine")

    @grader
    async def polite(judge):
        return await judge(goal="is polite")

    result = await polite(services=GraderServices(judge_provider=Provider())).agrade("", "x", ctx())
    assert result.error and result.score is None
    assert result.reason.startswith("judge failed: goal judge answer unusable")


@pytest.mark.parametrize(
    ("value", "score", "error", "reason"),
    [
        (True, 1.0, False, "passed"),
        (False, 0.0, False, "failed"),
        (0, 0.0, False, "score 0"),
        (1, 1.0, False, "score 1"),
        (0.25, 0.25, False, "score 0.25"),
        (
            1.5,
            None,
            True,
            "grader function returned 1.5: expected a bool, a number in 0-1 or a GradeResult",
        ),
        (
            -0.1,
            None,
            True,
            "grader function returned -0.1: expected a bool, a number in 0-1 or a GradeResult",
        ),
        (
            "yes",
            None,
            True,
            "grader function returned 'yes': expected a bool, a number in 0-1 or a GradeResult",
        ),
    ],
)
def test_grader_return_values(value, score, error, reason):
    g = grader(lambda: value, name="v")()
    result = g.grade("", "", ctx())
    assert (result.score, result.error, result.reason) == (score, error, reason)


def test_grader_returning_none_is_a_skip_not_an_error():
    @grader(name="only_for_dates")
    def only_for_dates(question):
        return None if "date" not in question.get("tags", []) else True

    result = only_for_dates().grade("", "", ctx())
    assert result.skipped and not result.error and result.score is None
    assert result.reason == "not applicable (the grader function returned None)"


def test_grader_returning_a_result_and_raising():
    full = GradeResult(grader_id="x", score=0.5, reason="half", min_score=0, max_score=1)
    assert grader(lambda: full, name="full")().grade("", "", ctx()).grader_id == "full"

    def broken(output):
        raise ValueError("boom")

    result = grader(broken)().grade("", "", ctx())
    assert result.error and result.reason == "grader function raised ValueError: boom"


def test_grader_rejects_unknown_parameters():
    with pytest.raises(TypeError, match="unknown parameter 'test'"):
        grader(lambda test: True)


# -- grading modules ----------------------------------------------------------------------------
def write(path, text):
    path.write_text(textwrap.dedent(text))
    return path


def test_load_grading_module_collects_decorated_functions_and_instances(tmp_path):
    module = write(
        tmp_path / "graders.py",
        """
        from tracegrade.graders import grader, ExactMatch, Contains, Similarity

        @grader(name="mentions-year", must_pass=True)
        def mentions_year(output):
            return "1879" in output

        exact = ExactMatch(must_pass=True)
        has_date = Contains(name="has-date")
        similar = Similarity(weight=0.5)
    """,
    )
    attachments = load_grading_module(module)
    assert [a.grader.id for a in attachments] == [
        "mentions-year",
        "exact_match",
        "has-date",
        "similarity",
    ]
    assert [(a.spec.weight, a.spec.must_pass) for a in attachments] == [
        (1.0, True),
        (1.0, True),
        (1.0, False),
        (0.5, False),
    ]
    assert all(isinstance(a, Attachment) for a in attachments)
    assert attachments[0].grader.grade("", "in 1879", ctx()).score == 1.0
    assert find_grading_module(tmp_path / "dataset.yaml") == module
    assert find_grading_module(tmp_path / "sub" / "dataset.yaml") is None


def test_load_grading_module_graders_list(tmp_path):
    module = write(
        tmp_path / "mine.py",
        """
        from tracegrade.graders import Attachment, Contains, grader

        def plain(output):
            return output.startswith("A")

        GRADERS = [Contains, grader(plain), Attachment(Contains(name="c2"), weight=3)]
    """,
    )
    attachments = load_grading_module(module)
    assert [(a.grader.id, a.spec.weight) for a in attachments] == [
        ("contains", 1.0),
        ("plain", 1.0),
        ("c2", 3),
    ]


@pytest.mark.parametrize(
    ("source", "message", "line"),
    [
        ("x = (\n", "syntax error", 1),
        (
            "import nonexistent_module_xyz\n",
            "importing the grading module failed: "
            "ModuleNotFoundError: No module named 'nonexistent_module_xyz'",
            1,
        ),
        (
            "\n\nraise RuntimeError('nope')\n",
            "importing the grading module failed: RuntimeError: nope",
            3,
        ),
        ("GRADERS = [42]\n", "not a grader: 42", None),
        (
            "from tracegrade.graders import Contains\nGRADERS = [Contains(), Contains()]\n",
            "two graders named 'contains'",
            None,
        ),
    ],
)
def test_load_grading_module_errors_name_the_file(tmp_path, source, message, line):
    module = tmp_path / "graders.py"
    module.write_text(source)
    with pytest.raises(InputError) as info:
        load_grading_module(module)
    assert info.value.file == str(module) and info.value.exit_code == 4
    assert message in info.value.message and info.value.line == line


def test_load_grading_module_missing_file(tmp_path):
    with pytest.raises(InputError, match="grading module not found"):
        load_grading_module(tmp_path / "nope.py")
