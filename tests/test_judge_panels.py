"""Judge panels (several judge models score independently; disagreement goes to Review), and
the judge paths honouring the run's own redaction policy."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests import openai_server as loopback
from tests.openai_server import OpenAIServer, score, server_error
from tracegrade import JudgeRequest, build_provider
from tracegrade.cli import main
from tracegrade.graders import GraderServices
from tracegrade.redaction import RedactionPolicy

openai_server = loopback.openai_server  # the fixture, by the name tests request
ROOT = Path(__file__).resolve().parent.parent

# A value of the shape the default policy redacts (an OpenAI-style key).
ALLOWED = "sk-test-0123456789abcdefghijklmnop"
SECRET = "sk-live-ZYXWVUTSRQPONMLKJIHGFEDCBA987"


def test_the_judge_client_redacts_with_the_runs_policy_not_the_default(openai_server):
    # A key the config's redaction.allow lists reaches the judge as written; a secret it does
    # not list is still redacted. One policy, the run's, at every exit.
    policy = RedactionPolicy.from_config({"allow": [ALLOWED]})
    assert policy.text(ALLOWED) == ALLOWED and policy.text(SECRET) != SECRET
    provider = build_provider({"base_url": openai_server.base_url, "model": "m"})
    services = GraderServices(judge_provider=provider, redaction=policy)
    request = JudgeRequest(messages=({"role": "user", "content": f"{ALLOWED} and {SECRET}"},))
    asyncio.run(services.client().acomplete(request))
    prompt = openai_server.requests[-1].prompt
    assert ALLOWED in prompt
    assert SECRET not in prompt


def _project(tmp_path: Path, graders: list, judge: dict | None = None, **extra) -> Path:
    for name in ("examples", "agents"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("runs"))
    config: dict = {
        "version": 1,
        "runs_dir": "runs",
        "rubrics": "rubrics/",
        "targets": {
            "desk": {
                "agent": "../agents/support_desk.py:build_graph",
                "environment": "../agents/support_desk.py:make_environment",
                "dataset": "datasets/support_desk.yaml",
                "graders": graders,
                "grading_module": False,
                # these tests are about panels: the example dataset's other expectations are
                # left out of the check plan
                "unchecked": [
                    "rubric_ref",
                    "expected_tools",
                    "trajectory",
                    "metadata.state",
                    "expected_facts",
                ],
            }
        },
        **extra,
    }
    if judge is not None:
        config["judge"] = judge
    path = tmp_path / "examples" / "judged.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def test_a_judge_grader_without_a_judge_block_is_refused_before_any_agent_runs(tmp_path, capsys):
    config = _project(tmp_path, ["tool_usage_grader", "relevance_grader"])
    assert main(["run", "--config", str(config), "--quiet"]) == 4
    err = capsys.readouterr().err
    assert "desk" in err and "relevance_grader" in err and "judge:" in err
    assert not (tmp_path / "examples" / "runs").exists()  # no agent ran, no run directory
    assert main(["validate", str(config)]) == 4


@pytest.fixture
def three_judges():
    servers = [OpenAIServer().start() for _ in range(3)]
    try:
        yield servers
    finally:
        for s in servers:
            s.stop()


def _panel(servers, scores, *, model_prefix="judge") -> list[dict]:
    members = []
    for i, (server, value) in enumerate(zip(servers, scores, strict=True)):
        server.default = score(value, f"member {i} says {value}")
        members.append({"base_url": server.base_url, "model": f"{model_prefix}-{i}"})
    return members


def _run(config: Path, out: Path) -> tuple[int, dict]:
    code = main(["run", "--config", str(config), "--json", str(out), "--quiet", "--limit", "2"])
    return code, json.loads(out.read_text())


BASE_JUDGE = {
    "provider": "openai-compatible",
    "base_url": "http://127.0.0.1:9/v1",
    "model": "x",
    "max_attempts": 1,
}


def test_a_panel_scores_by_its_aggregate_and_reports_each_member(tmp_path, three_judges):
    members = _panel(three_judges, [3, 4, 5])
    config = _project(
        tmp_path,
        [{"id": "relevance_grader", "judges": members, "aggregate": "median", "max_spread": 2}],
        judge=BASE_JUDGE,
    )
    code, report = _run(config, tmp_path / "r.json")
    assert code == 0, report
    results = [
        g for q in report["questions"] for g in q["graders"] if g["id"] == "relevance_grader"
    ]
    assert len(results) == 2
    for r in results:
        assert r["score"] == 4.0 and not r["error"]
        panel = r["details"]["panel"]
        assert [m["score"] for m in panel] == [3.0, 4.0, 5.0]
        assert [m["judge"] for m in panel] == ["judge-0", "judge-1", "judge-2"]
    # Each member was asked once per question, the same prompt.
    assert [len(s.requests) for s in three_judges] == [2, 2, 2]
    # ... with the same prompts (questions run concurrently: compare them unordered)
    prompts = [sorted(r.prompt for r in s.requests) for s in three_judges]
    assert prompts[0] == prompts[1] == prompts[2]


def test_the_mean_aggregate_and_a_named_panel(tmp_path, three_judges):
    members = _panel(three_judges, [2, 4, 3])
    config = _project(
        tmp_path,
        [{"id": "relevance_grader", "panel": "trio"}],
        judge=BASE_JUDGE,
        judge_panels={"trio": {"judges": members, "aggregate": "mean"}},
    )
    code, report = _run(config, tmp_path / "r.json")
    scores = [g["score"] for q in report["questions"] for g in q["graders"]]
    assert scores == [3.0, 3.0], report
    assert code == 0


def test_a_one_versus_five_split_goes_to_review_not_to_a_score(tmp_path, three_judges):
    members = _panel(three_judges, [1, 5, 5])
    config = _project(
        tmp_path,
        ["tool_usage_grader", {"id": "relevance_grader", "judges": members}],
        judge=BASE_JUDGE,
    )
    code, report = _run(config, tmp_path / "r.json")
    results = [
        g for q in report["questions"] for g in q["graders"] if g["id"] != "tool_usage_grader"
    ]
    assert len(results) == 2
    for r in results:
        assert r["score"] is None and not r["error"]
        check = r["checks"][0] if r.get("checks") else r["details"]["checks"][0]
        assert check["status"] == "review" and check["id"] == "relevance_grader:panel"
        assert "judge-0=1" in check["reason"] and "judge-1=5" in check["reason"]
    assert code == 2  # a required check left in Review holds the gate (allow_review: false)


def test_a_pass_fail_panel_votes_and_an_even_split_is_reviewed(tmp_path):
    servers = [OpenAIServer().start() for _ in range(4)]
    try:
        members = _panel(servers[:3], [1, 0, 1])
        config = _project(
            tmp_path, [{"id": "groundedness_grader", "judges": members}], judge=BASE_JUDGE
        )
        code, report = _run(config, tmp_path / "r.json")
        assert [g["score"] for q in report["questions"] for g in q["graders"]] == [1.0, 1.0]
        even = _panel(servers[:2], [1, 0], model_prefix="even")
        config = _project(
            tmp_path / "b",
            ["tool_usage_grader", {"id": "groundedness_grader", "judges": even}],
            judge=BASE_JUDGE,
        )
        code, report = _run(config, tmp_path / "b.json")
        grounded = [
            g for q in report["questions"] for g in q["graders"] if g["id"] != "tool_usage_grader"
        ]
        assert [g["score"] for g in grounded] == [None, None]
        assert all("split evenly" in g["reason"] for g in grounded)
        assert code == 2
    finally:
        for s in servers:
            s.stop()


def test_a_member_outage_is_the_graders_error_never_a_decision_by_the_rest(tmp_path, three_judges):
    members = _panel(three_judges, [4, 4, 4])
    three_judges[2].default = server_error(500)
    config = _project(tmp_path, [{"id": "relevance_grader", "judges": members}], judge=BASE_JUDGE)
    code, report = _run(config, tmp_path / "r.json")
    results = [g for q in report["questions"] for g in q["graders"]]
    assert all(r["error"] and "judge-2" in r["reason"] for r in results)
    assert code == 3


@pytest.mark.parametrize(
    "options,key",
    [
        ({"judges": [{"model": "a"}]}, "judges"),
        ({"judges": [{"model": "a"}, {"model": "a"}]}, "distinct name"),
        ({"judges": [{"model": "a"}, {"model": "b"}], "aggregate": "mode"}, "aggregate"),
        ({"judges": [{"model": "a"}, {"model": "b"}], "max_spread": 9}, "max_spread"),
        ({"panel": "nope"}, "panel"),
        ({"aggregate": "mean"}, "aggregate"),
        ({"judges": [{"model": "a"}, {"model": "b", "modle": "c"}]}, "modle"),
    ],
)
def test_a_bad_panel_is_refused_before_any_agent_runs(tmp_path, capsys, options, key):
    config = _project(tmp_path, [{"id": "relevance_grader", **options}], judge=BASE_JUDGE)
    assert main(["run", "--config", str(config), "--quiet"]) == 4
    assert key in capsys.readouterr().err
    runs = tmp_path / "examples" / "runs"  # may hold the judge cache, never a run
    assert not runs.exists() or not [p for p in runs.iterdir() if p.is_dir()]


def test_a_provider_plugin_is_named_in_a_config_with_its_own_keys(tmp_path, monkeypatch):
    from tests.test_judge_client import BACKEND, _install

    _install(
        tmp_path / "plugin",
        monkeypatch,
        "flaky_provider",
        "[tracegrade.providers]\nflaky = flaky_provider:FlakyBackend\n",
        BACKEND,
    )
    judge = {"provider": "flaky", "fail_first": 0, "max_attempts": 1}
    config = _project(tmp_path, ["tool_usage_grader", "relevance_grader"], judge=judge)
    assert main(["validate", str(config)]) == 0
    code, report = _run(config, tmp_path / "r.json")
    judged = [g for q in report["questions"] for g in q["graders"] if g["id"] == "relevance_grader"]
    assert [g["score"] for g in judged] == [4.0, 4.0] and code == 0
    # A key the plugin does not take is still refused, at its line.
    config.write_text(config.read_text().replace("fail_first: 0", "fail_frist: 0"))
    assert main(["validate", str(config)]) == 4


HOUSE_TONE = """
from tracegrade.graders.judges import LlmJudge
from tracegrade.graders import file_judge


class HouseTone(LlmJudge):
    id = "house_tone"
    label = "House tone"
    description = "LLM judge: does the response match the documented house tone (0-5)?"
    dimension = "house_tone"
    dimension_description = "adherence to the house tone: plain, direct, second person"
    scoring_guidance = "5: Plain and direct throughout.\\n1: Reads as marketing copy."


GRADERS = [HouseTone, file_judge("tone.md", name="tone")]
"""


def test_judges_from_a_grading_module_and_from_a_file_are_validated_and_identified(
    tmp_path, openai_server, capsys
):
    openai_server.default = score(4, "plain enough")
    config = _project(
        tmp_path,
        ["tool_usage_grader"],
        judge={
            "provider": "openai-compatible",
            "base_url": openai_server.base_url,
            "model": "loopback-judge",
            "max_attempts": 1,
        },
    )
    module = tmp_path / "examples" / "datasets" / "house.py"
    module.write_text(HOUSE_TONE)
    (module.parent / "tone.md").write_text("Is this polite? {{ output }}")
    text = config.read_text().replace("grading_module: false", "grading_module: datasets/house.py")
    config.write_text(text)
    code, report = _run(config, tmp_path / "r.json")
    assert code == 0, report
    by_id = {g["id"]: g for g in report["questions"][0]["graders"]}
    # Each judge result carries its identity: dimension, model, template hash, answer path.
    house = by_id["house_tone"]["details"]["judge"]
    assert house["dimension"] == "house_tone" and house["model"] == "loopback-judge"
    assert len(house["template_sha256"]) == 64 and house["answer_format"] in ("json_schema", "text")
    tone = by_id["tone"]["details"]["judge"]
    assert tone["dimension"] == "tone" and tone["judge_file"].endswith("tone.md")
    first, second = (str(q["id"]) for q in report["questions"][:2])
    gold = tmp_path / "gold.yaml"
    gold.write_text(
        yaml.safe_dump(
            {
                "labels": [
                    {"question": first, "dimension": "house_tone", "score": 4},
                    {"question": second, "dimension": "house_tone", "score": 4},
                    {"question": first, "dimension": "tone", "score": 4},
                ]
            }
        )
    )
    capsys.readouterr()
    assert main(["judges", "validate", str(tmp_path / "r.json"), "--gold", str(gold)]) == 0
    out = capsys.readouterr().out
    assert "house_tone" in out and "tone" in out


def test_the_html_page_names_each_judge_and_the_panels_members(tmp_path, three_judges):
    from playwright.sync_api import sync_playwright

    members = _panel(three_judges, [3, 4, 5])
    config = _project(
        tmp_path,
        ["tool_usage_grader", {"id": "relevance_grader", "judges": members}],
        judge=BASE_JUDGE,
    )
    page_file = tmp_path / "run.html"
    report = str(tmp_path / "r.json")
    argv = ["run", "--config", str(config), "--quiet", "--limit", "1", "--json", report]
    code = main([*argv, "--html", str(page_file)])
    assert code == 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
        page = browser.new_page()
        question = json.loads((tmp_path / "r.json").read_text())["questions"][0]["id"]
        page.goto(f"{page_file.as_uri()}#q=desk/{question}")
        row = page.locator('#graders tr[data-grader="relevance_grader"]')
        text = row.locator(".judge-id").inner_text()
        page.screenshot(path=str(tmp_path / "panel.png"), full_page=True)
        shutil.copy(tmp_path / "panel.png", "/tmp/tg-panel.png")
        browser.close()
    assert "panel (median): judge-0=3, judge-1=4, judge-2=5" in text
    assert "template " in text and "model judge-0" in text


def test_judges_validate_reports_each_panel_member_beside_the_panel(tmp_path, three_judges, capsys):
    # Member 0 always says 1, the others 4: the panel's median (4) agrees with people who
    # labelled 4, member 0 does not. Each member's agreement is shown, only the panel gated.
    members = _panel(three_judges, [1, 4, 4])
    config = _project(
        tmp_path,
        ["tool_usage_grader", {"id": "relevance_grader", "judges": members, "max_spread": 3}],
        judge=BASE_JUDGE,
    )
    code, report = _run(config, tmp_path / "r.json")
    assert code == 0
    ids = [str(q["id"]) for q in report["questions"]]
    gold = tmp_path / "gold.yaml"
    gold.write_text(
        yaml.safe_dump(
            {"labels": [{"question": qid, "dimension": "relevance", "score": 4} for qid in ids]}
        )
    )
    capsys.readouterr()
    data = tmp_path / "v.json"
    assert (
        main(
            [
                "judges",
                "validate",
                str(tmp_path / "r.json"),
                "--gold",
                str(gold),
                "--json",
                str(data),
            ]
        )
        == 0
    )
    dims = {d["dimension"]: d for d in json.loads(data.read_text())["dimensions"]}
    assert set(dims) == {
        "relevance",
        "relevance [judge-0]",
        "relevance [judge-1]",
        "relevance [judge-2]",
    }
    assert dims["relevance"]["exact"] == 1.0 and dims["relevance [judge-1]"]["exact"] == 1.0
    assert dims["relevance [judge-0]"]["exact"] == 0.0
    assert dims["relevance [judge-0]"]["passed"] is None  # reported, not gated
