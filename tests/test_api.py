"""The Python API (docs/api.md): run/arun and their typed result, run inside a running event
loop, evaluate without a config file, capture/acapture, and assert_tool_calls agreeing with
tool_usage_grader. The page's own examples run in tests/test_api_docs.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.callbacks import BaseCallbackHandler

from agents.scripted import ScriptedChatModel, call, say
from agents.support_desk import build_graph, build_regressed_graph, make_environment
from agents.testing_graphs import boom, lookup, react_agent
from tests.runs_support import copy_examples
from tracegrade import (
    ConfigError,
    InputError,
    RunResult,
    ToolRecord,
    acapture,
    arun,
    assert_tool_calls,
    capture,
    evaluate,
    load_dataset,
    run,
)
from tracegrade.graders import ToolUsageGrader

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def project(tmp_path):
    """A copy of the examples and reference agents: runs land in tmp_path/runs."""
    copy_examples(tmp_path)
    return tmp_path


def test_run_returns_every_question_the_gates_and_the_reports(project):
    result = run(
        project / "examples/tracegrade.yaml",
        targets=["support_desk", "support_desk_regressed"],
        junit=project / "out/junit.xml",
        json_report=project / "out/results.json",
    )
    assert isinstance(result, RunResult)
    assert result.exit_code == 2 and not result.passed
    assert (result.run_dir / "identity.json").is_file()
    assert result.run_dir.parent == project / "runs"
    assert len(result.questions) == 18
    assert result.gate["support_desk"].exit_code == 0
    assert result.gate["support_desk_regressed"].exit_code == 2
    assert result.reports == {
        "json": project / "out/results.json",
        "junit": project / "out/junit.xml",
    }
    assert all(path.is_file() for path in result.reports.values())
    failing = {key.split("::")[1] for key in result.failures()}
    assert failing == {
        "book_consultation",
        "book_without_check",
        "cancel_booking",
        "refund_over_limit",
    }
    assert all(key.startswith("support_desk_regressed::") for key in result.failures())


async def test_run_inside_a_running_event_loop_runs_on_a_worker_thread(project):
    # A notebook: the caller's loop is running; run() must neither fail nor block it forever.
    result = run(project / "examples/tracegrade.yaml", targets=["support_desk"])
    assert result.passed and len(result.questions) == 9


async def test_arun_on_the_callers_loop(project):
    result = await arun(project / "examples/tracegrade.yaml", targets=["content_agent_regressed"])
    assert result.exit_code == 2


def test_run_rejects_an_unknown_target_as_invalid_input(project):
    with pytest.raises(InputError) as info:
        run(project / "examples/tracegrade.yaml", targets=["nope"])
    assert info.value.exit_code == 4


QUESTIONS = [
    {
        "id": "book",
        "input": "Please book a consultation for ana@example.com on 2026-12-03 at 10:00.",
        "expected_tools": [
            {"tool": "book_appointment", "should_run": True, "args": {"date": "2026-12-03"}}
        ],
    }
]


def test_evaluate_an_in_memory_graph_factory_with_an_environment(tmp_path):
    graders = [{"id": "tool_usage_grader", "must_pass": True, "threshold": 5}]
    good = evaluate(
        build_graph, QUESTIONS, graders=graders, environment=make_environment, runs_dir=tmp_path
    )
    bad = evaluate(
        build_regressed_graph,
        QUESTIONS,
        graders=graders,
        environment=make_environment,
        runs_dir=tmp_path,
        name="regressed",
    )
    assert good.exit_code == 0 and good.questions[0].composite == 5
    assert bad.exit_code == 2
    assert "date='2026-12-04'" in bad.failures()["regressed::book"][0]
    assert good.run_dir.parent == bad.run_dir.parent == tmp_path


def test_evaluate_validates_its_inputs_as_a_config_would(tmp_path):
    with pytest.raises(InputError, match="no_such_grader"):
        evaluate(build_graph(), QUESTIONS, graders=["no_such_grader"], runs_dir=tmp_path)
    with pytest.raises(InputError):  # a question without input
        evaluate(build_graph(), [{"id": "x"}], graders=["format_grader"], runs_dir=tmp_path)
    with pytest.raises(ConfigError, match="graph factory"):
        evaluate(
            build_graph(),
            QUESTIONS,
            graders=["state_grader"],
            environment=make_environment,
            runs_dir=tmp_path,
        )
    assert not list(tmp_path.iterdir())  # nothing ran, no run directory


def test_evaluate_runs_the_objects_it_is_handed_without_a_config_file_or_a_fake_module(
    tmp_path, monkeypatch
):
    # Before: evaluate() wrote a temporary tracegrade.json and registered the objects as a
    # module in sys.modules for the config to name.
    seen: list[list[str]] = []

    def factory(environment):
        seen.append([m for m in sys.modules if m.startswith("_tracegrade_evaluate")])
        return build_graph(environment=environment)

    written: list[str] = []
    real_write = Path.write_text

    def spy(self, *args, **kwargs):
        written.append(self.name)
        return real_write(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", spy)
    result = evaluate(
        factory,
        ROOT / "examples" / "datasets" / "support_desk.yaml",
        graders=["tool_usage_grader"],
        environment=make_environment,
        rubrics=ROOT / "examples" / "rubrics",
        runs_dir=tmp_path,
        name="desk",
    )
    assert seen and seen[0] == []
    assert not [n for n in written if n.startswith("tracegrade")], written
    manifest = result.outcome.manifest if result.outcome else None
    assert manifest is not None and manifest.config_path.endswith("evaluate()")
    assert result.exit_code in (0, 2) and len(result.questions) == 9


def test_from_harness_import_run_after_importing_the_runs_package():
    # `tracegrade.execution` is a package and `tracegrade.capture` one too: the facade's functions win.
    code = (
        "import tracegrade.execution.run.lifecycle, tracegrade.capture.recorder\n"
        "from tracegrade import run, capture\n"
        "import tracegrade.api\n"
        "assert run is tracegrade.api.run and capture is tracegrade.api.capture, (run, capture)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


QUESTION = "Please book a consultation for ana@example.com on 2026-12-03 at 10:00."


def test_capture_returns_the_record_of_one_run():
    record = capture(build_graph(), QUESTION)
    assert isinstance(record, ToolRecord) and record.complete
    assert [c.name for c in record] == ["lookup_customer", "check_availability", "book_appointment"]


async def test_acapture_keeps_the_callers_callbacks():
    seen = []

    class Spy(BaseCallbackHandler):
        def on_tool_start(self, serialized, input_str, **kwargs):
            seen.append(serialized.get("name"))

    record = await acapture(build_regressed_graph(), QUESTION, config={"callbacks": [Spy()]})
    assert (
        [c.name for c in record]
        == seen
        == [
            "lookup_customer",
            "check_availability",
            "book_appointment",
        ]
    )
    assert record.calls_of("book_appointment")[0].arguments["date"] == "2026-12-04"


def test_capture_lets_the_agents_exception_through_and_records_the_failed_call():
    model = ScriptedChatModel(script=[call(("boom", {"reason": "down"})), say("done")])
    graph = react_agent(model, [boom, lookup])
    with pytest.raises(Exception, match="down"):
        capture(graph, "go")


def _support_desk_cases():
    dataset = load_dataset(ROOT / "examples/datasets/support_desk.yaml")
    return [q for q in dataset.questions if q.row().get("expected_tools")]


@pytest.mark.parametrize("question", _support_desk_cases(), ids=lambda q: str(q.id))
def test_assert_tool_calls_agrees_with_tool_usage_grader(question):
    expected = question.row()["expected_tools"]
    for factory in (build_graph, build_regressed_graph):
        record = capture(factory(), question.input_messages())
        verdict = ToolUsageGrader().grade(
            "", "", {"expected_tools": expected, "tool_calls": record}
        )
        if verdict.score == verdict.max_score:
            assert_tool_calls(record, expected)
        else:
            with pytest.raises(AssertionError) as info:
                assert_tool_calls(record, expected)
            message = str(info.value)
            assert verdict.reason in message  # the grader's own words
            assert f"the record holds {len(record)} call(s)" in message
            for c in record:
                assert f"{c.name}(" in message


def test_assert_tool_calls_fails_on_an_incomplete_record():
    record = ToolRecord([], complete=False, problems=["callback raised"])
    with pytest.raises(AssertionError, match="incomplete"):
        assert_tool_calls(record, [{"tool": "lookup", "should_run": False}])
