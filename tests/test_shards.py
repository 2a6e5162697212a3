"""CI shards: `run --shard I/N` takes a deterministic share, `merge` makes one run of the
shards that equals the unsharded run question for question, and refuses mismatched shards."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.runs_support import write_project
from tracegrade import InputError, read_records
from tracegrade.cli import main
from tracegrade.execution.run.shards import parse_shard, shard_of
from tracegrade.rundir.store import ResultStore


def _questions(n: int) -> list[dict]:
    kinds = [
        ("weather in Paris?", [{"tool": "lookup", "should_run": True}]),
        ("weather in Rome?", [{"tool": "lookup", "should_run": True}]),  # fails tool_usage
    ]
    out = []
    for i in range(n):
        text, tools = kinds[i % 3 == 2]
        out.append(
            {
                "id": f"q{i:02d}",
                "input": text,
                "expected": {"keyword": "sunny"},
                "expected_tools": tools,
            }
        )
    return out


def _project(root: Path, n: int = 12) -> Path:
    graders = [
        {"id": "tool_usage_grader", "must_pass": True, "threshold": 5},
        {"id": "contains", "match_on": ["expected", "keyword"]},
    ]
    return write_project(
        root, questions=[], extra_questions=_questions(n), target={"graders": graders}
    )


def _run_dir(root: Path, before: set[str]) -> Path:
    new = sorted(set(p.name for p in (root / "runs").iterdir()) - before)
    assert len(new) == 1
    return root / "runs" / new[0]


def _run(root: Path, config: Path, *args: str) -> tuple[int, Path]:
    runs = root / "runs"
    before = set(p.name for p in runs.iterdir()) if runs.is_dir() else set()
    code = main(["run", "--config", str(config), "--quiet", *args])
    return code, _run_dir(root, before)


def _rows(run_dir: Path) -> dict:
    """Question id -> what the store holds for it (everything but wall-clock values)."""
    with ResultStore.open_readonly(run_dir) as store:
        runs = {r.id: r for r in store.load_runs()}
        scores = {s.id: s for s in store.load_scores()}
    out = {}
    for qid, r in runs.items():
        s = scores[qid]
        out[qid] = (
            r.answer.ordinal,
            r.answer.response,
            r.error,
            r.answer.tool_call_count,
            r.content_sha256,
            s.composite,
            s.objective,
            s.degraded,
            [(g.grader_id, g.score, g.reason) for g in s.graders],
        )
    return out


def _records(run_dir: Path) -> dict:
    """Question id -> (tool name, arguments, outcome) of each call its trace-file record holds."""
    records = read_records(run_dir / "traces" / "t.jsonl")
    return {
        qid: ([(c.name, dict(c.arguments), str(c.outcome)) for c in record], record.complete)
        for qid, record in records.items()
    }


@given(
    st.text(min_size=1, max_size=20),
    st.lists(st.text(max_size=12), max_size=30),
    st.integers(min_value=1, max_value=9),
)
def test_every_question_is_in_exactly_one_shard_and_the_share_is_stable(target, ids, n):
    for qid in ids:
        owners = [i for i in range(1, n + 1) if shard_of(target, qid, n) == i]
        assert owners == [shard_of(target, qid, n)]
        assert 1 <= owners[0] <= n


def test_the_shard_formula_is_the_documented_one():
    # 1 + first 8 bytes of sha256("t\0q01") big-endian mod 3, computed independently
    import hashlib

    digest = hashlib.sha256(b"t\x00q01").digest()
    assert shard_of("t", "q01", 3) == int.from_bytes(digest[:8], "big") % 3 + 1


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "a/b", "1/0", "-1/2", ""])
def test_a_malformed_shard_is_invalid_input(text):
    with pytest.raises(InputError, match="--shard"):
        parse_shard(text)


def test_merge_of_three_shards_equals_the_single_run_question_for_question(tmp_path, capsys):
    config = _project(tmp_path)
    single_code, single = _run(tmp_path, config, "--json", str(tmp_path / "single.json"))
    shard_dirs = []
    for i in (1, 2, 3):
        code, run_dir = _run(tmp_path, config, "--shard", f"{i}/3")
        shard_dirs.append(run_dir)
    sizes = [len(_rows(d)) for d in shard_dirs]
    assert sum(sizes) == 12 and all(sizes)  # a partition, every shard holding some
    merged = tmp_path / "merged"
    code = main(
        [
            "merge",
            *map(str, reversed(shard_dirs)),
            "--out",
            str(merged),
            "--quiet",
            "--json",
            str(tmp_path / "merged.json"),
            "--junit",
            str(tmp_path / "merged.xml"),
        ]
    )
    assert code == single_code == 2  # the Rome questions fail tool_usage: one gate, failed
    assert _rows(merged) == _rows(single)
    # one trace file holding every question's record, equal to the single run's records
    assert _records(merged) == _records(single)
    assert len(_records(merged)) == 12
    # every report: the JSON report holds the same questions, in the same order, same verdict
    a = json.loads((tmp_path / "single.json").read_text())
    b = json.loads((tmp_path / "merged.json").read_text())
    strip = lambda qs: [  # noqa: E731  (wall-clock values left out: tokens and cost kept)
        {
            **{k: v for k, v in q.items() if k not in ("latency_s", "trace_id", "usage")},
            "usage": {k: v for k, v in q["usage"].items() if k != "latency"},
        }
        for q in qs
    ]
    assert strip(b["questions"]) == strip(a["questions"]) and len(a["questions"]) == 12
    assert b["gate"] == a["gate"] and _untimed(b["summary"]) == _untimed(a["summary"])
    assert "<testsuite" in (tmp_path / "merged.xml").read_text()
    # the merged run reads as any run does
    assert main(["show", str(merged), "--quiet"]) == 2


def _untimed(summary: dict) -> dict:
    """A JSON summary without its wall-clock figures (latency percentiles differ run to run;
    tokens, cost and every count are kept)."""
    timed = ("latency_s", "model_call_latency_s")

    def untimed(totals: dict) -> dict:
        kept = {k: v for k, v in totals.items() if k not in timed}
        kept["tools"] = {name: t["calls"] for name, t in totals["tools"].items()}
        return kept

    return {t: {**data, "totals": untimed(data["totals"])} for t, data in summary.items()}


def test_a_missing_shard_is_reported_and_the_merged_run_is_incomplete(tmp_path, capsys):
    config = _project(tmp_path)
    _, first = _run(tmp_path, config, "--shard", "1/3")
    _, third = _run(tmp_path, config, "--shard", "3/3")
    capsys.readouterr()
    code = main(["merge", str(first), str(third), "--out", str(tmp_path / "m"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 3
    assert "missing shard(s) 2/3" in err
    assert len(_rows(tmp_path / "m")) == len(_rows(first)) + len(_rows(third))


def _rewrite(config: Path, **target) -> None:
    data = yaml.safe_load(config.read_text())
    data["targets"]["t"].update(target)
    config.write_text(yaml.safe_dump(data))


def test_merge_refuses_shards_of_different_datasets_configs_or_graders(tmp_path, capsys):
    config = _project(tmp_path)
    _, first = _run(tmp_path, config, "--shard", "1/2")
    dataset = tmp_path / "data" / "questions.yaml"
    rows = yaml.safe_load(dataset.read_text())
    rows["questions"][0]["expected"] = {"keyword": "rain"}
    dataset.write_text(yaml.safe_dump(rows))
    _rewrite(config, graders=["tool_usage_grader"], timeout_s=3)
    _, second = _run(tmp_path, config, "--shard", "2/2")
    capsys.readouterr()
    out = tmp_path / "m"
    assert main(["merge", str(first), str(second), "--out", str(out)]) == 4
    err = capsys.readouterr().err
    assert "dataset (sha256)" in err and "graders" in err and "config" in err
    assert str(second) in err
    assert not (out / "results.sqlite").exists()  # nothing half-merged


def test_merge_refuses_a_repeated_shard_a_different_n_and_a_run_that_is_no_shard(tmp_path, capsys):
    config = _project(tmp_path)
    _, one = _run(tmp_path, config, "--shard", "1/2")
    _, other_n = _run(tmp_path, config, "--shard", "1/3")
    _, whole = _run(tmp_path, config)
    capsys.readouterr()
    assert main(["merge", str(one), str(one), "--out", str(tmp_path / "a")]) == 4
    assert "given twice" in capsys.readouterr().err
    assert main(["merge", str(one), str(other_n), "--out", str(tmp_path / "b")]) == 4
    assert "one of 2" in capsys.readouterr().err
    assert main(["merge", str(whole), "--out", str(tmp_path / "c")]) == 4
    assert "not a shard run" in capsys.readouterr().err


def test_a_shard_resumes_its_own_share(tmp_path):
    config = _project(tmp_path)
    _, run_dir = _run(tmp_path, config, "--shard", "2/3")
    share = set(_rows(run_dir))
    assert share == {f"q{i:02d}" for i in range(12) if shard_of("t", f"q{i:02d}", 3) == 2}
    with ResultStore.in_run_dir(run_dir) as store:  # lose one question, as a kill would
        store._db.execute("DELETE FROM questions WHERE question_id = ?", (sorted(share)[0],))
    assert main(["run", "--config", str(config), "--quiet", "--resume", run_dir.name]) == 2
    assert set(_rows(run_dir)) == share  # the share again, nothing of the other shards
    assert Counter(r[0] for r in _rows(run_dir).values()).most_common(1)[0][1] == 1
