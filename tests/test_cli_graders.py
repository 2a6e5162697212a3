"""`tracegrade graders`: the catalog table and JSON, generated from the declarations."""

from __future__ import annotations

import argparse
import io
import json

from tracegrade.cli import graders as graders_cli
from tracegrade.graders.registry import CatalogRow


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
    assert lines[0].split()[:3] == ["Grader", "id", "Kind"]
    assert set(lines[1]) <= {"-", " "}
    rows = {line.split()[0]: line for line in lines[2:]}
    assert rows["tool_usage_grader"].split()[:4] == [
        "tool_usage_grader",
        "Deterministic",
        "(0-5)",
        "Yes",
    ]
    assert rows["tool_usage_grader"].rstrip().endswith("`expected_tools` (required, else skips)")
    assert rows["exact_match"].split()[:5] == [
        "exact_match",
        "Deterministic",
        "(binary,",
        "0-1)",
        "No",
    ]
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
            observes_actions=False,
            sees_tool_calls=False,
            needs="",
            description="",
            source="",
        ),
    ]
    assert graders_cli.format_table(rows).splitlines() == [
        "Grader id         Kind       Scale  Observes actions  Sees tool calls  Needs",
        "----------------  ---------  -----  ----------------  ---------------  "
        "---------------------",
        "accuracy_grader   LLM judge  (0-5)  No                Yes              "
        "`criteria` (optional)",
        "relevance_grader  LLM judge  (0-5)  No                No               -",
    ]
