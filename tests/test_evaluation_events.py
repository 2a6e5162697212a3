"""Verdicts travel with the trace: `tracegrade export` puts one `gen_ai.evaluation.result` event
per grade on each question's root span (graders, the question's verdict, a person's labels), read
back by a real OTLP parse; `--to phoenix` writes the same grades as span annotations in a real
Phoenix on loopback (CODE for graders, LLM for judges, HUMAN for labels), updated in place when
exported again."""

from __future__ import annotations

import httpx
import pytest
import yaml

from tests import openai_server as loopback
from tests.otlp_receiver import otlp_receiver  # noqa: F401  (the fixture)
from tests.runs_support import write_project
from tracegrade.cli import main

LABELS = ["Would you send this answer?"]
openai_server = loopback.openai_server


def _run(tmp_path, *, config_keys=None, graders=None):
    target = {"labels": LABELS}
    if graders is not None:
        target["graders"] = graders
    config = write_project(
        tmp_path, questions=["paris", "rome"], target=target, config=config_keys or {}
    )
    assert main(["run", "--config", str(config), "--quiet"]) == 2  # rome fails tool_usage
    (run_dir,) = [p for p in (tmp_path / "runs").iterdir() if (p / "results.sqlite").is_file()]
    return config, run_dir


def _label(tmp_path, run_dir, answer: bool) -> None:
    answers = tmp_path / "answers.yaml"
    row = {"question": "rome", "label": "would_you_send_this_answer", "answer": answer}
    answers.write_text(yaml.safe_dump({"by": "ana", "answers": [{**row, "note": "no lookup"}]}))
    assert main(["label", str(run_dir), "--answers", str(answers)]) == 0


def _evaluations(span) -> dict[str, dict]:
    return {
        attrs["gen_ai.evaluation.name"]: attrs
        for name, attrs in span.events
        if name == "gen_ai.evaluation.result"
    }


def test_every_grade_is_an_evaluation_event_on_its_question_span(
    tmp_path,
    otlp_receiver,  # noqa: F811
    capsys,
):
    _, run_dir = _run(tmp_path)
    _label(tmp_path, run_dir, answer=False)

    assert main(["export", str(run_dir), "--endpoint", otlp_receiver.endpoint]) == 0

    spans = otlp_receiver.spans()
    roots = {s.attributes["tracegrade.question.id"]: s for s in spans if not s.parent_span_id}
    assert set(roots) == {"paris", "rome"}
    assert not any(_evaluations(s) for s in spans if s.parent_span_id)  # on the judged span only
    paris, rome = _evaluations(roots["paris"]), _evaluations(roots["rome"])
    assert paris["tool_usage_grader"]["gen_ai.evaluation.score.label"] == "pass"
    assert paris["tool_usage_grader"]["tracegrade.evaluation.kind"] == "code"
    assert paris["tracegrade"]["gen_ai.evaluation.score.label"] == "pass"
    unmet = rome["tool_usage_grader"]
    assert unmet["gen_ai.evaluation.score.label"] == "fail"
    assert unmet["gen_ai.evaluation.score.value"] == 0.0
    assert "lookup" in unmet["gen_ai.evaluation.explanation"]
    assert rome["tracegrade"]["gen_ai.evaluation.score.label"] == "fail"
    human = rome["label:would_you_send_this_answer"]
    assert human["tracegrade.evaluation.kind"] == "human"
    assert human["gen_ai.evaluation.score.label"] == "no"
    assert human["gen_ai.evaluation.explanation"] == "no lookup"
    assert "evaluation event(s) on 2 question span(s)" in capsys.readouterr().out


def _file_roots(run_dir) -> dict[str, dict]:
    """question id -> its question span, read from the run's own trace file as JSON."""
    import json

    roots = {}
    for path in (run_dir / "traces").rglob("*.jsonl"):
        for line in path.read_text().splitlines():
            for rs in json.loads(line)["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    for span in ss["spans"]:
                        if not span.get("parentSpanId"):
                            attrs = {a["key"]: a["value"] for a in span["attributes"]}
                            roots[attrs["tracegrade.question.id"]["stringValue"]] = span
    return roots


def _file_events(span) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for event in span.get("events", ()):
        assert event["name"] == "gen_ai.evaluation.result"
        attrs = {a["key"]: next(iter(a["value"].values())) for a in event["attributes"]}
        assert attrs["gen_ai.evaluation.name"] not in found  # one event per grade
        found[attrs["gen_ai.evaluation.name"]] = attrs
    return found


def test_the_runs_own_trace_file_carries_the_grades_on_each_question_span(
    tmp_path,
    otlp_receiver,  # noqa: F811
):
    _, run_dir = _run(
        tmp_path, config_keys={"telemetry": {"otlp_endpoint": otlp_receiver.endpoint}}
    )
    roots = _file_roots(run_dir)
    assert set(roots) == {"paris", "rome"}
    paris, rome = _file_events(roots["paris"]), _file_events(roots["rome"])
    assert paris["tool_usage_grader"]["gen_ai.evaluation.score.label"] == "pass"
    assert paris["tracegrade"]["gen_ai.evaluation.score.label"] == "pass"
    assert rome["tool_usage_grader"]["gen_ai.evaluation.score.label"] == "fail"
    assert rome["tool_usage_grader"]["gen_ai.evaluation.score.value"] == 0.0
    assert rome["tracegrade"]["gen_ai.evaluation.score.label"] == "fail"
    # the question span ends when the agent does, whenever its grades were made
    assert int(roots["rome"]["endTimeUnixNano"]) < max(
        int(e["timeUnixNano"]) for e in roots["rome"]["events"]
    )
    # the run's live OTLP export carries the same events
    live = {
        s.attributes["tracegrade.question.id"]: _evaluations(s)
        for s in otlp_receiver.spans()
        if not s.parent_span_id
    }
    assert live["rome"]["tool_usage_grader"]["gen_ai.evaluation.score.label"] == "fail"
    assert set(live["paris"]) == set(paris)


def test_export_replaces_the_runs_own_events_with_the_latest_grades(
    tmp_path,
    otlp_receiver,  # noqa: F811
):
    _, run_dir = _run(tmp_path)
    _label(tmp_path, run_dir, answer=True)
    assert main(["export", str(run_dir), "--endpoint", otlp_receiver.endpoint]) == 0
    (rome,) = [
        s
        for s in otlp_receiver.spans()
        if not s.parent_span_id and s.attributes["tracegrade.question.id"] == "rome"
    ]
    names = [a["gen_ai.evaluation.name"] for n, a in rome.events if n == "gen_ai.evaluation.result"]
    assert sorted(names) == sorted(set(names))  # the file's own events were not sent twice
    assert "label:would_you_send_this_answer" in names and "tracegrade" in names


def test_no_evaluations_sends_the_spans_alone(tmp_path, otlp_receiver):  # noqa: F811
    _, run_dir = _run(tmp_path)
    argv = ["export", str(run_dir), "--endpoint", otlp_receiver.endpoint, "--no-evaluations"]
    assert main(argv) == 0
    assert otlp_receiver.spans() and not any(_evaluations(s) for s in otlp_receiver.spans())


def _annotations(phoenix_url: str, project: str, span_ids: list[str]) -> list[dict]:
    url = f"{phoenix_url}/v1/projects/{project}/span_annotations"
    reply = httpx.get(url, params={"span_ids": span_ids, "limit": 1000}, timeout=30)
    assert reply.status_code == 200, reply.text
    return reply.json()["data"]


def test_phoenix_shows_each_grade_as_an_annotation_updated_in_place(
    tmp_path,
    phoenix,
    openai_server,
    capsys,
):
    openai_server.default = loopback.score(4, "on topic")
    judge = {"provider": "openai-compatible", "base_url": openai_server.base_url, "model": "m"}
    _, run_dir = _run(
        tmp_path,
        config_keys={"judge": judge},
        graders=["tool_usage_grader", "relevance_grader"],
    )
    argv = ["export", str(run_dir), "--to", "phoenix", "--endpoint", phoenix, "--project", "tg"]

    assert main(argv) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "annotation(s) written" in out

    spans = httpx.get(f"{phoenix}/v1/projects/tg/spans", params={"limit": 1000}, timeout=30)
    roots = {
        s["attributes"]["tracegrade.question.id"]: s["context"]["span_id"]
        for s in spans.json()["data"]
        if not s.get("parent_id")
    }
    assert set(roots) == {"paris", "rome"}
    first = _annotations(phoenix, "tg", list(roots.values()))
    kinds = {(a["name"], a["annotator_kind"]) for a in first if a["span_id"] == roots["rome"]}
    assert ("tool_usage_grader", "CODE") in kinds and ("relevance_grader", "LLM") in kinds
    by_name = {a["name"]: a for a in first if a["span_id"] == roots["rome"]}
    assert by_name["tool_usage_grader"]["result"]["label"] == "fail"
    assert by_name["relevance_grader"]["result"]["score"] == 4

    _label(tmp_path, run_dir, answer=False)  # a person's label, then the same export again
    assert main(argv) == 0

    second = _annotations(phoenix, "tg", list(roots.values()))
    human = [a for a in second if a["annotator_kind"] == "HUMAN"]
    assert [(a["name"], a["span_id"], a["result"]["label"]) for a in human] == [
        ("label:would_you_send_this_answer", roots["rome"], "no")
    ]
    assert len(second) == len(first) + 1  # the machine grades were updated, not duplicated


@pytest.mark.parametrize("argv", [["--to", "phoenix"], ["--to", "nowhere"]])
def test_phoenix_needs_an_endpoint_and_a_known_destination(tmp_path, argv, capsys):
    _, run_dir = _run(tmp_path)
    with pytest.raises(SystemExit) if argv[1] == "nowhere" else _nothing():
        code = main(["export", str(run_dir), *argv])
        assert code == 4 and "--to phoenix needs --endpoint" in capsys.readouterr().err


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
