"""The second fault campaign's cases about values a model, a user or a dataset supplies that
tracegrade once took at their word: a model's NaN or infinite token counts (unknown, never a
capture failure), raw HTML in ids and reasons (escaped in Markdown), and redaction that must
touch what was supplied, never tracegrade's own words."""

from __future__ import annotations

import json
import math
import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from agents.scripted import ScriptedChatModel, call, say


class _WildUsage(ScriptedChatModel):
    """A model whose every call reports `counts` as its usage (NaN, infinite...)."""

    counts: dict = {}

    def _result(self, message, messages):
        result = super()._result(message, messages)
        result.generations[0].message.usage_metadata = dict(self.counts)
        return result


@pytest.mark.parametrize(
    "counts",
    [
        {"input_tokens": math.nan, "output_tokens": 5, "total_tokens": math.nan},
        {"input_tokens": 10, "output_tokens": math.inf, "total_tokens": math.inf},
        {"input_tokens": -math.inf, "output_tokens": math.nan, "total_tokens": 1e400},
    ],
    ids=["nan-in", "inf-out", "both"],
)
def test_nan_or_infinite_token_counts_are_unknown_not_a_capture_failure(counts):
    from tests.test_costs_run import recorded_lookup
    from tracegrade.cost.pricing import question_usage

    script = [call(("lookup", {"q": "x"})), say("done")]
    recorder, record = recorded_lookup(
        _WildUsage(script=script, model_name="gpt-4o", counts=counts)
    )
    assert record.complete, record.problems
    assert [c.name for c in record] == ["lookup"]
    for c in recorder.model_calls:  # a count that is not a finite number is unknown
        for got, key in ((c.input_tokens, "input_tokens"), (c.output_tokens, "output_tokens")):
            want = counts[key]
            assert got == (int(want) if math.isfinite(want) and want >= 0 else None)
    usage = question_usage(recorder.model_calls, wall_s=0.1)
    known = [v for v in (counts["input_tokens"], counts["output_tokens"]) if math.isfinite(v)]
    if known:  # as for a negative count: what was reported counts, the rest is not invented
        assert usage.tokens == 2 * sum(int(v) for v in known if v >= 0)
    else:
        assert usage.tokens is None and usage.agent.unknown_calls == 2


# -- 15. raw HTML in Markdown reports ----------------------------------------------------------
HOSTILE = "<script>alert(1)</script> <img src=x onerror=alert(2)> `<b>` ``<i>`` \\`<u>`"
PIPED = "a\\|<img src=x onerror=alert(3)>|`<b>`"
"""An id a table would split at its pipe once the escape before it is itself escaped."""
HOSTILE_REASON = """
from tracegrade.graders.code import grader
from tracegrade.records import GradeResult


@grader(name="hostile", must_pass=True)
def hostile(output):
    return GradeResult(grader_id="hostile", score=0, reason={reason!r})
"""
_OURS = re.compile(r"</?(details|summary|br)>")


def _outside_code_spans(line: str) -> str:
    """The line with its CommonMark code spans removed (a run of N backticks opens one, the
    next run of exactly N closes it; an unmatched run is literal)."""
    out, i = [], 0
    while i < len(line):
        if line[i] == "\\" and i + 1 < len(line):
            out.append(line[i : i + 2])
            i += 2
            continue
        if line[i] != "`":
            out.append(line[i])
            i += 1
            continue
        run = re.match("`+", line[i:]).group()
        close = re.compile(f"(?<!`){run}(?!`)").search(line, i + len(run))
        if close is None:
            out.append(run)
            i += len(run)
        else:
            i = close.end()
    return "".join(out)


def _cells(line: str) -> list[str]:
    """A table row's cells as GFM splits them, before any inline parsing: at every pipe not
    escaped by a backslash (an escaped backslash escapes nothing after it)."""
    if not line.startswith("|"):
        return [line]
    cells, cell, i = [], "", 0
    while i < len(line):
        if line[i] == "\\":
            cell, i = cell + line[i : i + 2], i + 2
        elif line[i] == "|":
            cells, cell, i = [*cells, cell], "", i + 1
        else:
            cell, i = cell + line[i], i + 1
    return [*cells[1:], cell] if cell.strip() else cells[1:]


def _raw_html(markdown: str) -> list[str]:
    """Lines where an HTML tag (not the report's own) stands outside a code span."""
    return [
        line
        for line in markdown.splitlines()
        for cell in _cells(line)
        if re.search(r"<[A-Za-z/!?]", _OURS.sub("", _outside_code_spans(cell)))
    ]


def test_markdown_reports_carry_no_raw_html_from_ids_and_reasons(tmp_path, capsys):
    from tests.runs_support import QUESTIONS, write_project
    from tracegrade.cli import main

    config = write_project(
        tmp_path,
        questions=[],
        extra_questions=[
            dict(QUESTIONS["rome"], id=HOSTILE),
            dict(QUESTIONS["rome"], id=PIPED, input="weather in Rome? "),
            dict(QUESTIONS["paris"]),
        ],
        target={"graders": [{"id": "tool_usage_grader", "must_pass": False}]},
    )
    (tmp_path / "data" / "graders.py").write_text(HOSTILE_REASON.format(reason=HOSTILE))
    argv = ["run", "--config", str(config), "--quiet", "--markdown", str(tmp_path / "a.md")]
    assert main([*argv, "--json", str(tmp_path / "a.json")]) == 2
    run_a = json.loads((tmp_path / "a.json").read_text())["run_id"]
    (tmp_path / "data" / "graders.py").write_text(HOSTILE_REASON.format(reason="fine"))
    argv = ["run", "--config", str(config), "--quiet", "--markdown", str(tmp_path / "b.md")]
    assert main([*argv, "--baseline", run_a]) == 2
    capsys.readouterr()
    for name in ("a.md", "b.md"):
        text = (tmp_path / name).read_text()
        assert "alert(1)" in text and "alert(3)" in text  # the ids and reason are shown...
        assert _raw_html(text) == [], name  # ...as text, never as markup


_PIECES = st.sampled_from(["\\", "|", "`", "``", "<img src=x>", "</b>", "a", " ", "\n", "&", "#"])


@given(st.lists(_PIECES, max_size=12).map("".join) | st.text())
@example("a\\|<img src=x>|`b`")
def test_an_escaped_id_or_reason_is_one_table_cell_and_no_markup(text):
    from tracegrade.reports.escaping import md_code, md_text

    for shown in (md_code(text), md_text(text)):
        row = f"| {shown} | x |"
        assert _cells(row)[1:] == [" x "], row  # one cell, whatever the text holds
        assert _raw_html(row) == [], row


# -- 16. redaction touches supplied values, never tracegrade's own words ---------------------
SECRET_ID = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
"""A question id shaped like a GitHub token: supplied, so still redacted where it is shown."""


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_config_error_under_a_token_key_is_printed_whole(tmp_path, capsys, command):
    from tests.runs_support import write_project
    from tracegrade.cli import main

    config = write_project(tmp_path, target={"gate": {"max_tokens_per_question": "lots"}})
    argv = [command, str(config)] if command == "validate" else [command, "--config", str(config)]
    assert main(argv) == 4
    out = capsys.readouterr().err
    assert "(redacted)" not in out, out
    assert (
        "at /targets/t/gate/max_tokens_per_question: max_tokens_per_question must be an integer"
        in out
    ), out


@pytest.mark.parametrize("command", ["validate", "run"])
def test_messages_about_a_password_question_keep_their_words(tmp_path, capsys, command):
    from tests.runs_support import write_project
    from tracegrade.cli import main

    rows = [
        {"id": "reset-password", "input": "hi", "expected_tools": [{"tool": "x", "shuld_run": 1}]},
        {"id": SECRET_ID, "input": "ho", "expected_tools": [{"tool": "x"}]},
    ]
    config = write_project(tmp_path, questions=[], extra_questions=rows)
    argv = [command, str(config)] if command == "validate" else [command, "--config", str(config)]
    assert main(argv) == 4
    out = capsys.readouterr().err
    assert (
        "question 'reset-password': at /questions/0/expected_tools/0/shuld_run: unknown key" in out
    )
    assert "did you mean 'should_run'?" in out
    assert SECRET_ID not in out and "question '(redacted)': at /questions/1/" in out, out
