"""`tracegrade graders`: the catalog table and JSON, generated from the declarations."""

from __future__ import annotations

import argparse
import io
import json

from tracegrade.cli.inputs import graders as graders_cli
from tracegrade.graders import CatalogRow


def invoke(*argv):
    parser = argparse.ArgumentParser(prog="tracegrade")
    graders_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["graders", *argv])
    out = io.StringIO()
    code = args.handler(args, out=out)
    return code, out.getvalue()


def test_table_lists_every_builtin_with_its_declarations():
    code, text = invoke()
    assert code == 0
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["Grader", "id", "Label", "(scale)"]
    assert set(lines[1]) <= {"-", " "}
    rows = {line.split()[0]: line for line in lines[2:]}
    assert rows["tool_usage_grader"].split()[:5] == [
        "tool_usage_grader",
        "Tool",
        "usage",
        "(0-5)",
        "Deterministic",
    ]
    assert rows["tool_usage_grader"].rstrip().endswith("`expected_tools` (required, else skips)")
    # "binary" only where the grader answers pass/fail; similarity is a continuous 0-1 score.
    assert "Exact match (binary, 0-1)" in rows["exact_match"]
    assert "Similarity (0-1)" in rows["similarity"]
    assert "Rubric judge (0-1)" in rows["rubric_judge"]
    assert " n/a " in rows["format_grader"]


def test_json_output():
    code, text = invoke("--json")
    data = {row["id"]: row for row in json.loads(text)}
    assert code == 0
    assert data["state_grader"]["observes_actions"] is True
    assert data["state_grader"]["needs"] == "`metadata.state` (required, else skips)"
    assert data["similarity"]["kind"] == "Deterministic"


def test_format_table_judges_show_sees_tool_calls():
    rows = [
        CatalogRow(
            id="accuracy_grader",
            label="Accuracy",
            kind="LLM judge",
            scale="(0-5)",
            selection_label="Accuracy (0-5)",
            observes_actions=False,
            sees_tool_calls=True,
            needs="`criteria` (optional)",
            description="",
            source="",
        ),
        CatalogRow(
            id="relevance_grader",
            label="Relevance",
            kind="LLM judge",
            scale="(0-5)",
            selection_label="Relevance (0-5)",
            observes_actions=False,
            sees_tool_calls=False,
            needs="",
            description="",
            source="",
        ),
    ]
    assert graders_cli.format_table(rows).splitlines() == [
        "Grader id         Label (scale)    Kind       Observes actions  Sees tool calls  Needs",
        "----------------  ---------------  ---------  ----------------  ---------------  "
        "---------------------",
        "accuracy_grader   Accuracy (0-5)   LLM judge  No                Yes              "
        "`criteria` (optional)",
        "relevance_grader  Relevance (0-5)  LLM judge  No                No               -",
    ]


def test_the_docs_graders_table_is_the_catalog():
    # docs/graders.md carries `tracegrade graders --markdown` verbatim: a grader added, renamed
    # or re-declared (rubric_judge was missing, similarity labelled binary) fails here.
    from pathlib import Path

    from tracegrade.cli.inputs.graders import markdown_table
    from tracegrade.graders import load_registry

    docs = (Path(__file__).resolve().parents[1] / "docs" / "graders.md").read_text()
    assert markdown_table(load_registry().catalog()) in docs
