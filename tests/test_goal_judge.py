"""The bundled goal judge and judges defined in a file, end to end through the CLI against the
loopback judge server: what each prompt holds, where the goal comes from (the question's own,
`--goal`), the exit-4 cases, and a file judge identified by its path and content hash."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml

from tests import openai_server as loopback
from tests.openai_server import score
from tests.runs_support import write_project
from tracegrade.cli import main

openai_server = loopback.openai_server  # the fixture, by the name tests request

PARIS_GOAL = "Tells the user today's weather in Paris, looked up rather than guessed."


def judge_block(server) -> dict:
    return {
        "judge": {
            "provider": "openai-compatible",
            "base_url": server.base_url,
            "model": "loopback-judge",
            "max_attempts": 1,
        }
    }


def project(tmp_path: Path, server, *, graders=None, paris_goal=True, rome_goal=True, module=None):
    extra = []
    path = write_project(
        tmp_path,
        questions=[],
        target={"graders": graders or []},
        config=judge_block(server) if server is not None else None,
        extra_questions=extra,
    )
    rows = [
        {
            "id": "paris",
            "input": "weather in Paris?",
            "expected": {"answer": "Sunny in Paris."},
            **({"goal": PARIS_GOAL} if paris_goal else {}),
        },
        {
            "id": "rome",
            "input": "weather in Rome?",
            **({"goal": "Tells the user the weather in Rome."} if rome_goal else {}),
        },
    ]
    (tmp_path / "data" / "questions.yaml").write_text(yaml.safe_dump({"questions": rows}))
    if module is not None:
        (tmp_path / "data" / "graders.py").write_text(textwrap.dedent(module))
    return path


def prompts_by_question(server) -> dict[str, str]:
    out = {}
    for request in server.requests:
        prompt = request.prompt
        key = "paris" if "Paris" in prompt else "rome"
        out[key] = prompt
    return out


def run_json(config: Path, tmp_path: Path, *extra: str) -> tuple[int, dict]:
    out = tmp_path / "run.json"
    code = main(["run", "--config", str(config), "--json", str(out), "--quiet", *extra])
    return code, json.loads(out.read_text()) if out.exists() else {}


def test_a_target_without_graders_is_scored_by_the_goal_judge(openai_server, tmp_path, capsys):
    openai_server.responder = lambda body: score(
        5 if "weather in Paris?" in body["messages"][0]["content"] else 2, "judged"
    )
    config = project(tmp_path, openai_server)
    code, report = run_json(config, tmp_path)
    assert code == 0
    scores = {q["id"]: q["graders"] for q in report["questions"]}
    assert [g["id"] for g in scores["paris"]] == ["goal_judge"]
    assert scores["paris"][0]["score"] == 5.0 and scores["rome"][0]["score"] == 2.0
    prompts = prompts_by_question(openai_server)
    # The goal, the expected answer and the tool calls rendered like the other judges'.
    assert f"GOAL: {PARIS_GOAL}" in prompts["paris"]
    assert "EXPECTED ANSWER (what a correct response says): Sunny in Paris." in prompts["paris"]
    assert "TOOL CALLS (" in prompts["paris"] and "lookup" in prompts["paris"]
    assert "It is sunny in Paris." in prompts["paris"]
    assert "EXPECTED ANSWER" not in prompts["rome"]
    assert "called no tools" in prompts["rome"]
    # The secret argument the agent passed never reaches the judge.
    assert "s3cr3t-arg-value" not in prompts["paris"]


def test_neither_graders_nor_goal_is_exit_4_naming_the_target(openai_server, tmp_path, capsys):
    config = project(tmp_path, openai_server, rome_goal=False)
    code, _ = run_json(config, tmp_path)
    err = capsys.readouterr().err
    assert code == 4
    assert "target 't' has no graders" in err and "rome" in err and "--goal" in err
    assert "tracegrade.yaml" in err
    assert openai_server.requests == []
    assert not list(tmp_path.glob("runs/*/identity.json"))  # no run was started
    # tracegrade validate says the same before anything runs.
    assert main(["validate", str(config), "--no-build"]) == 4
    shown = capsys.readouterr()
    assert "has no graders" in shown.out + shown.err


def test_the_goal_judge_needs_a_judge_block(tmp_path, capsys):
    config = project(tmp_path, None)
    code, _ = run_json(config, tmp_path)
    assert code == 4
    assert "needs a `judge:` block" in capsys.readouterr().err


def test_goal_flag_judges_every_question_against_the_text_a_question_keeps_its_own(
    openai_server, tmp_path
):
    openai_server.default = score(4, "ok")
    config = project(
        tmp_path,
        openai_server,
        graders=[{"id": "similarity", "match_on": ["input"]}],
        paris_goal=True,
        rome_goal=False,
    )
    code, report = run_json(config, tmp_path, "--goal", "Answers in one short sentence.")
    assert code == 0
    for question in report["questions"]:  # the goal judge alone, not the target's graders
        assert [g["id"] for g in question["graders"]] == ["goal_judge"]
    prompts = prompts_by_question(openai_server)
    assert f"GOAL: {PARIS_GOAL}" in prompts["paris"]
    assert "GOAL: Answers in one short sentence." in prompts["rome"]
    # The run's identity remembers the goal: a stored re-grade asks the same prompts (cache).
    before = len(openai_server.requests)
    assert main(["grade", report["run_id"], "--config", str(config), "--quiet"]) == 0
    assert len(openai_server.requests) == before


def test_grade_goal_regrades_and_refuses_current(openai_server, tmp_path, capsys):
    openai_server.default = score(1, "does not satisfy")
    config = project(
        tmp_path,
        openai_server,
        graders=[{"id": "similarity", "match_on": ["input"]}],
        paris_goal=False,
        rome_goal=False,
    )
    code, report = run_json(config, tmp_path)
    assert code == 0 and openai_server.requests == []
    out = tmp_path / "goal.json"
    code = main(
        [
            "grade",
            report["run_id"],
            "--config",
            str(config),
            "--goal",
            "Mentions an umbrella.",
            "--json",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    regraded = json.loads(out.read_text())
    assert {g["id"] for q in regraded["questions"] for g in q["graders"]} == {"goal_judge"}
    assert all("GOAL: Mentions an umbrella." in r.prompt for r in openai_server.requests)
    assert len(openai_server.requests) == 2
    capsys.readouterr()
    code = main(["grade", report["run_id"], "--config", str(config), "--goal", "x", "--current"])
    assert code == 4
    assert "--goal cannot be combined with --current" in capsys.readouterr().err


def test_binary_goal_judge_is_a_pass_fail_gate(openai_server, tmp_path):
    openai_server.responder = lambda body: score(
        1 if "weather in Paris?" in body["messages"][0]["content"] else 0, "yes/no"
    )
    config = project(
        tmp_path, openai_server, graders=[{"id": "goal_judge", "binary": True, "must_pass": True}]
    )
    code, report = run_json(config, tmp_path)
    assert code == 2  # rome's goal judged not satisfied: the must-pass gate fails
    by_id = {q["id"]: q["graders"][0] for q in report["questions"]}
    assert by_id["paris"]["score"] == 1.0 and by_id["rome"]["score"] == 0.0
    assert "yes-or-no question" in openai_server.requests[0].prompt


TEMPLATE = """\
Judge whether the answer is polite.
Goal: {{ goal }}
Expected: {{ expected }}
Answer under review: {{ output }}
"""

TEMPLATE_MODULE = """\
from tracegrade.graders import file_judge

GRADERS = [file_judge("judges/polite.md", name="polite", goal="is polite")]
"""

CALLABLE_JUDGE = """\
def judge(goal, output, expected):
    return {"score": 5 if "sunny" in output else 1, "reasoning": f"goal was {goal}"}
"""

CALLABLE_MODULE = """\
from tracegrade.graders import file_judge

GRADERS = [file_judge("judges/sunny.py", name="sunny", goal="mentions the sun")]
"""


def test_a_template_file_judge_fills_the_seed_slots_and_is_identified_by_hash(
    openai_server, tmp_path
):
    openai_server.default = score(4, "polite enough")
    config = project(tmp_path, openai_server, module=TEMPLATE_MODULE, paris_goal=False)
    judges = tmp_path / "data" / "judges"
    judges.mkdir()
    (judges / "polite.md").write_text(TEMPLATE)
    code, report = run_json(config, tmp_path)
    assert code == 0
    prompts = prompts_by_question(openai_server)
    assert "Judge whether the answer is polite." in prompts["paris"]
    assert "Goal: <criteria>\nis polite\n</criteria>" in prompts["paris"]
    assert "Tells the user the weather in Rome." in prompts["rome"]  # its own goal wins
    assert "Sunny in Paris." in prompts["paris"]
    assert "<agent_response>\nIt is sunny in Paris.\n</agent_response>" in prompts["paris"]
    assert '{"score": <number from 0 to 5>' in prompts["paris"]
    first = report["identity"]["targets"]["t"]["graders"][0]
    assert first["id"] == "polite" and first["code_sha256"]
    # The judge file travels with the run's copy of the grading module.
    run_dir = tmp_path / "runs" / report["run_id"]
    assert (run_dir / "graders" / "t" / "judges" / "polite.md").read_text() == TEMPLATE

    # Edited in place, it is a new judge: a new hash, and new prompts (no cache hit).
    (judges / "polite.md").write_text(TEMPLATE.replace("polite.", "courteous."))
    before = len(openai_server.requests)
    code, again = run_json(config, tmp_path)
    assert code == 0
    assert again["identity"]["targets"]["t"]["graders"][0]["code_sha256"] != first["code_sha256"]
    assert len(openai_server.requests) == before + 2


def test_a_callable_file_judge_scores_with_user_code(tmp_path):
    config = project(tmp_path, None, module=CALLABLE_MODULE)
    judges = tmp_path / "data" / "judges"
    judges.mkdir()
    (judges / "sunny.py").write_text(CALLABLE_JUDGE)
    code, report = run_json(config, tmp_path)
    assert code == 0
    by_id = {q["id"]: q["graders"][0] for q in report["questions"]}
    assert by_id["paris"]["id"] == "sunny" and by_id["paris"]["score"] == 5.0
    # A question's own goal wins over the judge's.
    assert by_id["paris"]["reason"] == f"goal was {PARIS_GOAL}"


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("Rate {{ output }} for {{ tone }}", "unknown slot {{ tone }}"),
        ("Rate the goal {{ goal }}", "never shows the output"),
    ],
)
def test_a_bad_template_is_exit_4_naming_the_file(tmp_path, capsys, template, message):
    config = project(tmp_path, None, module=TEMPLATE_MODULE)
    judges = tmp_path / "data" / "judges"
    judges.mkdir()
    (judges / "polite.md").write_text(template)
    code, _ = run_json(config, tmp_path)
    err = capsys.readouterr().err
    assert code == 4
    assert message in err and "polite.md" in err
