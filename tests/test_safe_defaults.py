"""Safe defaults: a config written the way the README shows fails on a wrong action.

The README's minimal config, copied exactly as the README prints it, is run over a new user's
own 5-tool shop agent (`tests/shop_agent.py`): with three wrong actions behind answers that read
well it fails (exit 2) though its mean composite clears the README's `min_mean_composite: 4.0`;
doing what it is asked, it passes, and so does the reference support desk. `compare` of the two
runs is a regression. Every default can be relaxed in the config, explicitly.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from tests.shop_agent import DATASET
from tracegrade.cli import main

ROOT = Path(__file__).resolve().parent.parent
BROKEN_QUESTIONS = ("order_mugs", "cancel_order", "cancel_other_order")


def readme_config() -> str:
    """The README's minimal config, exactly as printed."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"```yaml\n(# tracegrade\.yaml\n.*?)```", text, re.S)
    assert match, "the README prints a minimal config starting with `# tracegrade.yaml`"
    return match.group(1)


def project(root: Path, agent_source: str, dataset: str, config: str | None = None) -> Path:
    """The layout the README's config names: agents/support_desk.py, datasets/support_desk.yaml."""
    (root / "agents").mkdir(parents=True)
    (root / "agents" / "support_desk.py").write_text(agent_source, encoding="utf-8")
    (root / "datasets").mkdir()
    (root / "datasets" / "support_desk.yaml").write_text(dataset, encoding="utf-8")
    path = root / "tracegrade.yaml"
    path.write_text(config if config is not None else readme_config(), encoding="utf-8")
    return path


BROKEN_SHOP = "from tests.shop_agent import build_broken_graph as build_graph, make_environment\n"
GOOD_SHOP = "from tests.shop_agent import build_graph, make_environment\n"
REFERENCE = "from agents.support_desk import build_graph, make_environment\n"


def reference_dataset() -> str:
    # The example dataset without its rubric references: the minimal config names no rubrics.
    lines = (ROOT / "examples/datasets/support_desk.yaml").read_text(encoding="utf-8")
    return "\n".join(line for line in lines.splitlines() if "rubric_ref:" not in line) + "\n"


def _run(path: Path, report: Path, capsys) -> tuple[int, str, dict]:
    code = main(["run", "--config", str(path), "--quiet", "--json", str(report)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err, json.loads(report.read_text())


def test_the_readme_config_fails_a_broken_agent_its_mean_would_pass(tmp_path, capsys):
    path = project(tmp_path, BROKEN_SHOP, DATASET)
    code, out, report = _run(path, tmp_path / "broken.json", capsys)
    verdict = report["gate"]["targets"]["support_desk"]
    # The mean alone (the README's only explicit bar) would have let it through ...
    assert verdict["mean_composite"] >= 4.0
    # ... the defaults do not: each wrong action fails its question, and the gate.
    assert code == 2, out
    failed = {q["id"] for q in report["questions"] if q["passed"] is False}
    assert failed == set(BROKEN_QUESTIONS)
    assert "gate: FAILED" in out
    for qid in BROKEN_QUESTIONS:
        assert qid in out


@pytest.mark.parametrize(
    ("agent", "dataset"),
    [(GOOD_SHOP, DATASET), (REFERENCE, None)],
    ids=["own-shop-agent", "reference-support-desk"],
)
def test_the_readme_config_passes_an_agent_that_does_what_it_is_asked(
    tmp_path, capsys, agent, dataset
):
    path = project(tmp_path, agent, dataset if dataset is not None else reference_dataset())
    code, out, report = _run(path, tmp_path / "good.json", capsys)
    assert code == 0, out
    assert all(q["passed"] for q in report["questions"])


def test_compare_of_the_passing_and_the_broken_run_is_a_regression(tmp_path, capsys):
    good = project(tmp_path / "good", GOOD_SHOP, DATASET)
    broken = project(tmp_path / "broken", BROKEN_SHOP, DATASET)
    assert _run(good, tmp_path / "good.json", capsys)[0] == 0
    assert _run(broken, tmp_path / "broken.json", capsys)[0] == 2
    code = main(["compare", str(tmp_path / "good.json"), str(tmp_path / "broken.json")])
    out = capsys.readouterr().out
    assert code == 2, out
    assert "newly failing (3)" in out
    for qid in BROKEN_QUESTIONS:
        assert qid in out
    assert "no regression" not in out


def test_every_default_can_be_relaxed_explicitly(tmp_path, capsys):
    config = yaml.safe_load(readme_config())
    target = config["targets"]["support_desk"]
    target["graders"] = [
        {"id": "tool_usage_grader", "must_pass": False},
        {"id": "state_grader", "must_pass": False},
        "format_grader",
    ]
    target["gate"]["min_pass_rate"] = 0
    path = project(tmp_path, BROKEN_SHOP, DATASET, yaml.safe_dump(config, sort_keys=False))
    code, out, _report = _run(path, tmp_path / "relaxed.json", capsys)
    assert code == 0, out
    assert "notice:" not in out  # nothing is left to a default that changed


def test_a_threshold_relaxes_the_full_score_bar(tmp_path, capsys):
    config = yaml.safe_load(readme_config())
    target = config["targets"]["support_desk"]
    target["graders"] = [{"id": "tool_usage_grader", "threshold": 2}]
    # the dataset's state assertions would attach state_grader (the check plan): left unchecked
    target["unchecked"] = ["metadata.state"]
    del target["gate"]["min_mean_composite"]
    path = project(tmp_path, BROKEN_SHOP, DATASET, yaml.safe_dump(config, sort_keys=False))
    code, out, report = _run(path, tmp_path / "threshold.json", capsys)
    # order_mugs met 1 of 2 expectations (2.5 >= 2); the other two met none.
    failed = {q["id"] for q in report["questions"] if q["passed"] is False}
    assert failed == {"cancel_order", "cancel_other_order"} and code == 2
    assert "2 must-pass failure(s) (cancel_order: tool_usage_grader, cancel_other_order" in out


def test_must_pass_false_still_counts_against_the_pass_rate(tmp_path, capsys):
    config = yaml.safe_load(readme_config())
    target = config["targets"]["support_desk"]
    target["graders"] = [{"id": "tool_usage_grader", "must_pass": False}]
    target["unchecked"] = ["metadata.state"]  # else the check plan attaches state_grader
    target["gate"] = {"min_pass_rate": 0.7}
    path = project(tmp_path, BROKEN_SHOP, DATASET, yaml.safe_dump(config, sort_keys=False))
    code, out, _ = _run(path, tmp_path / "soft.json", capsys)
    assert code == 0, out  # 7 of 10 questions met every bar: 0.7 is allowed
    assert "must-pass failure" not in out
    target["gate"] = {"min_pass_rate": 0.8}
    (tmp_path / "tracegrade.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    code, out, _report = _run(path, tmp_path / "soft.json", capsys)
    assert code == 2 and "pass rate 0.70 < min_pass_rate 0.8" in out


def test_targets_prints_the_effective_gate_and_each_bar(tmp_path, capsys):
    path = project(tmp_path, GOOD_SHOP, DATASET)
    assert main(["targets", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        "tool_usage_grader: Tool usage (0-5) (observes actions) [must pass, pass bar >= 5]" in out
    )
    assert (
        "state_grader: Environment state (binary, 0-5) (observes actions) [must pass, pass bar = 5]"
        in out
    )
    assert "format_grader: Format (0-5) [pass bar >= 0 (any score)]" in out
    assert (
        "gate: every question passes (min_pass_rate 1), mean composite >= 4, "
        "errored questions allowed 0" in out
    )


def _as_before_the_safe_defaults(run_dir: Path) -> None:
    """Rewrite a run's identity as a release before the safe defaults recorded it: the graders
    that observe actions, unsaid in the config, were not must-pass."""
    path = run_dir / "identity.json"
    identity = json.loads(path.read_text())
    for target in identity["targets"].values():
        for spec in target["graders"]:
            if spec["observes_actions"]:
                spec["must_pass"] = False
    path.write_text(json.dumps(identity))


def test_a_new_users_copy_of_the_readme_config_gets_no_changed_defaults_notice(tmp_path, capsys):
    # issue 45 item 23: someone who copied the README's config never knew the old defaults;
    # "would have passed before ... write must_pass" reads to them as "your config is
    # incomplete". The failure itself is said, with its reasons, as for any failing run.
    path = project(tmp_path / "broken", BROKEN_SHOP, DATASET)
    assert main(["run", "--config", str(path), "--quiet"]) == 2
    captured = capsys.readouterr()
    assert "notice:" not in captured.err and "safe defaults" not in captured.err
    assert "gate: FAILED" in captured.out


def test_a_verdict_the_changed_defaults_decided_gets_a_one_line_notice(tmp_path, capsys):
    path = project(tmp_path / "broken", BROKEN_SHOP, DATASET)
    assert main(["run", "--config", str(path), "--quiet"]) == 2
    capsys.readouterr()
    # the same config ran before, under the old defaults: now the change decided its verdict
    (before,) = (tmp_path / "broken" / "runs").iterdir()
    _as_before_the_safe_defaults(before)
    assert main(["run", "--config", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err
    notices = [line for line in err.splitlines() if line.startswith("notice:")]
    assert len(notices) == 1, err
    notice = notices[0]
    assert "target support_desk failed under the safe defaults" in notice
    assert "tool_usage_grader and state_grader must pass at full score" in notice
    assert "min_pass_rate 1" in notice and "format_grader" not in notice
    # A passing run, or a failure the old defaults would have failed too, needs no notice.
    good = project(tmp_path / "good", GOOD_SHOP, DATASET)
    assert main(["run", "--config", str(good), "--quiet"]) == 0
    assert "notice:" not in capsys.readouterr().err
