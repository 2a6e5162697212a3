"""A corpus of faults that once ended in a false green, an internal error (exit 1 with a
traceback) or hostile text in a report: misbehaving graders, incomplete and partial runs,
changed inputs under `--resume` and `grade`, damaged run directories, files that are not
files, catastrophic patterns, deep and huge answers, control characters in ids and answers.
Every case runs through the CLI and gives its documented exit code and a message naming what
failed (the file, the key, the grader or the question); several also run as the real command in
a child process."""

from __future__ import annotations

import json
import logging
import os
import re
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.runs_support import QUESTIONS, write_project
from tracegrade.cli import main
from tracegrade.reports.escaping import md_code, md_text, printable, to_json_text

REPO = Path(__file__).resolve().parents[1]
MUST_PASS_TOOLS = [{"id": "tool_usage_grader", "must_pass": True, "threshold": 5}]


@dataclass
class Case:
    name: str
    setup: Callable[[Path], list[str]]
    """Writes the project under the directory and returns the command's arguments."""
    code: int
    where: str | tuple[str, ...]
    """Text the output must hold (each of them): the file, key, grader or question named."""
    check: Callable[[Path, str], None] | None = None
    """Further assertions on the project directory and the command's output."""
    real: bool = False
    """Also run as the real command in a child process."""
    fsize: int | None = None
    """A file size limit (bytes) on the real command: every write past it fails, as on a full
    disk (deterministic, no tmpfs needed)."""
    in_process: bool = True
    """Run in this process too (False: only as a child, which a timeout can end: a case that
    hung before its fix)."""


def _project(root: Path, **options) -> Path:
    """`write_project` with a per-question timeout no loaded machine reaches (the corpus is
    about faults, not timing)."""
    # The corpus is about faults, not the safe defaults: a case that did not choose its
    # graders or gate gets the old lenient ones, written out (tool_usage not must-pass, no
    # pass-rate floor), so "rome"'s wrong answer does not turn every case into exit 2.
    lenient = {
        "graders": [
            {"id": "tool_usage_grader", "must_pass": False},
            {"id": "contains", "match_on": ["expected", "keyword"]},
        ],
        "gate": {"min_pass_rate": 0},
    }
    target = {"timeout_s": 120, **lenient, **(options.get("target") or {})}
    # a bare id keeps the old default too; a case that wants a gate says must_pass itself
    target["graders"] = [
        {"id": g, "must_pass": False} if g == "tool_usage_grader" else g for g in target["graders"]
    ]
    options["target"] = target
    return write_project(root, **options)


def _run(root: Path, *argv: str) -> int:
    try:
        return main(["run", "--config", str(root / "tracegrade.yaml"), "--quiet", *argv])
    except SystemExit as exc:  # pragma: no cover - argparse usage errors
        return int(exc.code or 0)


def _run_dirs(root: Path) -> list[Path]:
    runs = root / "runs"
    # oldest first: two runs started in one second have ids that do not sort by time
    found = [p for p in runs.iterdir() if (p / "identity.json").is_file()]
    return sorted(found, key=lambda p: (p / "identity.json").stat().st_mtime_ns)


def _grading_module(text: str, **project) -> Callable[[Path], list[str]]:
    def setup(root: Path) -> list[str]:
        graders = [{"id": "contains", "match_on": ["expected", "keyword"]}]  # passes both
        _project(root, **{"target": {"graders": graders}, **project})
        (root / "data" / "graders.py").write_text(text, encoding="utf-8")
        return ["run", "--json", "report.json"]

    return setup


def _strict_json(root: Path, _out: str) -> None:
    def refuse(name: str) -> None:
        raise AssertionError(f"report.json holds a bare {name}")

    json.loads((root / "report.json").read_text(encoding="utf-8"), parse_constant=refuse)


GRADE_RESULT = """
from tracegrade.graders.code import grader
from tracegrade.records import GradeResult


@grader(name="{name}", must_pass=True)
def {name}(output):
    return GradeResult(grader_id="{name}", score={score}, reason="my own number")
"""

FLAT_SCALE = """
from tracegrade.graders.base import Grader


class Flat(Grader):
    id = "flat"
    label = "Flat"
    min_score = 1.0
    max_score = 1.0

    def grade(self, input, response, context):
        return self.result(1.0, "always")


GRADERS = [Flat]
"""


# -- hostile text ---------------------------------------------------------------------------
TERMINAL_ID = "rome\x1b[2J\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07\u202eevil"
HTML_ID = "<script>alert(1)</script>\n## pwned <img src=x onerror=alert(1)>"


def _hostile_ids(root: Path) -> list[str]:
    _project(
        root,
        questions=[],
        target={"graders": MUST_PASS_TOOLS},
        extra_questions=[
            dict(QUESTIONS["rome"], id=TERMINAL_ID),
            dict(QUESTIONS["rome"], id=HTML_ID),
        ],
    )
    return ["run", "--markdown", "summary.md"]


def _console_escaped(root: Path, out: str) -> None:
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in out, repr(raw)
    assert "rome\\x1b[2J\\x1b]0;pwned\\x07" in out and "\\u202eevil" in out


def _markdown_escaped(root: Path, out: str) -> None:
    summary = (root / "summary.md").read_text(encoding="utf-8")
    assert "<script>" not in summary.replace("`<script>", "")  # only inside a code span
    assert not any(line.startswith("## pwned") for line in summary.splitlines())
    assert "\x1b" not in summary and "\u202e" not in summary
    row = next(line for line in summary.splitlines() if "alert(1)</script>" in line)
    assert row.startswith("| `<script>alert(1)</script> ## pwned <img"), row


# -- compare and baselines ------------------------------------------------------------------
def _last_run(root: Path) -> str:
    return str(_run_dirs(root)[-1])


def _compare_limited(root: Path) -> list[str]:
    _project(root, questions=["paris", "rome"], target={"graders": MUST_PASS_TOOLS})
    assert _run(root) == 2  # rome fails its must-pass grader
    base = _last_run(root)
    assert _run(root, "--id", "paris") == 0  # the candidate leaves the failing question out
    return ["compare", base, _last_run(root)]


def _compare_unfinished(root: Path) -> list[str]:
    _project(
        root,
        questions=["paris", "rome", "die"],
        target={"graders": ["tool_usage_grader"], "concurrency": 1},
    )
    assert _run(root, "--id", "paris", "--id", "rome") == 0
    base = _last_run(root)
    killed = subprocess.run(  # the agent of "die" kills the process: a run that never ended
        [sys.executable, "-m", "tracegrade", "run", "--quiet"],
        cwd=root,
        env=_child_env(),
        capture_output=True,
        timeout=180,  # generous: a case that hung before its fix ends in seconds now
    )
    assert killed.returncode == -9, killed.stderr
    return ["compare", base, _last_run(root), "--json", "comparison.json"]


def _compare_degraded(root: Path) -> list[str]:
    _project(root, target={"graders": ["tool_usage_grader"]})
    assert _run(root) == 0
    base = _last_run(root)
    (root / "data" / "graders.py").write_text(RAISES, encoding="utf-8")
    assert _run(root) == 3  # every question degraded: its own run is incomplete
    return ["compare", base, _last_run(root)]


def _comparison_incomplete(root: Path, _out: str) -> None:
    data = json.loads((root / "comparison.json").read_text(encoding="utf-8"))
    assert data["exit_code"] == 3 and data["incomplete"], data


def _baseline_of_other_dataset(root: Path) -> list[str]:
    other = root / "other"
    _project(other, questions=[], extra_questions=[dict(QUESTIONS["paris"], id="elsewhere")])
    assert _run(other) in (0, 2)
    _project(root, target={"graders": MUST_PASS_TOOLS})
    return ["run", "--baseline", _last_run(other)]


def _nothing_ran(root: Path, _out: str) -> None:
    assert not (root / "runs").exists() or not _run_dirs(root)


def _gate_beside_incomplete_baseline(root: Path) -> list[str]:
    _project(root, questions=["paris", "rome"], target={"graders": MUST_PASS_TOOLS})
    assert _run(root) == 2
    base = _last_run(root)
    return ["run", "--id", "rome", "--baseline", base]


# -- damaged run directories ----------------------------------------------------------------
def _damaged(
    command: str, damage: Callable[[Path], None], *more: str
) -> Callable[[Path], list[str]]:
    """A finished run, damaged by `damage(run_dir)`, then `tracegrade COMMAND RUN`."""

    def setup(root: Path) -> list[str]:
        _project(root)
        assert _run(root) == 0
        run_dir = _run_dirs(root)[-1]
        damage(run_dir)
        if command == "compare":
            return ["compare", str(run_dir), str(run_dir), *more]
        return [command, str(run_dir), *more]

    return setup


def _sql(statement: str) -> Callable[[Path], None]:
    def damage(run_dir: Path) -> None:
        import sqlite3

        db = sqlite3.connect(run_dir / "results.sqlite", isolation_level=None)
        db.execute("PRAGMA journal_mode=DELETE")
        db.execute(statement)
        db.close()

    return damage


def _flip_page(run_dir: Path) -> None:
    """Bit-flip the header of the store's second page, as a failing disk does."""
    _sql("VACUUM")(run_dir)
    path = run_dir / "results.sqlite"
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    for offset in range(page, page + 12):
        data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def _newer_identity(run_dir: Path) -> None:
    path = run_dir / "identity.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**data, "version": 99}), encoding="utf-8")


def _garbage_trace(run_dir: Path) -> None:
    trace = next(run_dir.glob("**/*.jsonl"))
    with trace.open("a", encoding="utf-8") as out:
        out.write("{half a line\n\x00\x01 not json at all\n")
        out.write('{"resourceSpans": 5}\n{"resourceSpans": [{"scopeSpans": [{"spans": ["x"]}]}]}\n')
        span = {"name": "question", "traceId": 7, "attributes": [{"key": 1, "value": "v"}]}
        out.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + "\n")


def _garbage_lines_named(root: Path, out: str) -> None:
    """Each of the five appended lines is named by its own line number, and no other line.

    How many lines the run wrote before them depends on how its spans were batched (the
    question span is exported once graded), so the numbers are counted, not fixed."""
    trace = next(_run_dirs(root)[-1].glob("**/*.jsonl"))
    total = len(trace.read_bytes().splitlines())
    named = {int(n) for n in re.findall(r"t\.jsonl:(\d+): not an OTLP", out)}
    assert named == set(range(total - 4, total + 1)), out


# -- files that are not what they seem --------------------------------------------------------
def _fifo_dataset(root: Path) -> list[str]:
    _project(root)
    dataset = root / "data" / "questions.yaml"
    dataset.unlink()
    os.mkfifo(dataset)  # a read would block forever
    return ["run"]


def _policy(policy: str | bytes, command: str) -> Callable[[Path], list[str]]:
    def setup(root: Path) -> list[str]:
        if isinstance(policy, bytes):
            (root / "policy.md").write_bytes(policy)
            _project(root, target={"policy": "policy.md"})
        else:
            _project(root, target={"policy": policy})
        return [command]

    return setup


# -- catastrophic patterns ------------------------------------------------------------------
LONG_ARGUMENT = """
SCRIPT["long city"] = [call(("lookup", {"city": "a" * 64 + "c"})), say("It is sunny.")]
"""


def _trajectory_regex(pattern: str) -> Callable[[Path], list[str]]:
    def setup(root: Path) -> list[str]:
        question = {
            "id": "long",
            "input": "long city",
            "trajectory": {"calls": [{"tool": "lookup", "args": {"city": {"regex": pattern}}}]},
        }
        _project(
            root,
            questions=[],
            extra_questions=[question],
            target={"graders": [{"id": "trajectory_grader", "must_pass": True}]},
        )
        with (root / "agent.py").open("a", encoding="utf-8") as agent:
            agent.write(LONG_ARGUMENT)
        return ["run"]

    return setup


def _rubric_regex(root: Path) -> list[str]:
    (root / "rubrics").mkdir(parents=True)
    rubric = {
        "id": "shape",
        "version": "1.0.0",
        "checks": [
            {
                "id": "no-shout",
                "kind": "regex",
                "severity": "major",
                "params": {"pattern": "(?<!x)HELLO"},
            }
        ],
    }
    (root / "rubrics" / "shape.yaml").write_text(json.dumps(rubric), encoding="utf-8")
    _project(
        root,
        questions=[],
        extra_questions=[dict(QUESTIONS["paris"], rubric_ref="rubric/shape@1.0.0")],
        config={"rubrics": "rubrics"},
        target={"graders": ["rubric_checks"]},
    )
    return ["run"]


# -- deep and huge answers --------------------------------------------------------------------
DEEP_AND_HUGE = """

def _nest(depth):
    value = "bottom"
    for _ in range(depth):
        value = {"k": value}
    return value


SCRIPT["deep args"] = [call(("lookup", {"city": "Paris", "extra": _nest(260)})), say("sunny")]
SCRIPT["huge answer"] = [say("sunny\\n" + "a plain line of text, nothing in it\\n" * 280_000)]
"""
REPORTS = ["--json", "report.json", "--markdown", "summary.md", "--html", "page.html"]


def _agent_says(input: str) -> Callable[[Path], list[str]]:
    def setup(root: Path) -> list[str]:
        question = {"id": "q", "input": input, "expected": {"keyword": "sunny"}}
        _project(
            root,
            questions=[],
            extra_questions=[question],
            target={
                "graders": [{"id": "contains", "match_on": ["expected", "keyword"]}],
                "timeout_s": 120,
            },
        )
        with (root / "agent.py").open("a", encoding="utf-8") as agent:
            agent.write(DEEP_AND_HUGE)
        return ["run", *REPORTS, "--junit", "junit.xml"]

    return setup


def _reports_whole(root: Path, out: str) -> None:
    _strict_json(root, out)
    for name in ("summary.md", "page.html", "junit.xml"):
        assert (root / name).stat().st_size > 0, name


def _deep_cut(root: Path, out: str) -> None:
    _reports_whole(root, out)
    assert "nested deeper than 64 levels" in (root / "report.json").read_text(encoding="utf-8")


# -- resume and re-grade against changed inputs ----------------------------------------------
def _killed_run(root: Path) -> str:
    """A run killed (as by `kill -9`) after its first questions: the agent of "die" kills the
    process that runs it. Returns the run id."""
    _project(
        root,
        questions=["paris", "rome", "die"],
        target={"graders": MUST_PASS_TOOLS, "concurrency": 1},
    )
    killed = subprocess.run(
        [sys.executable, "-m", "tracegrade", "run", "--quiet"],
        cwd=root,
        env=_child_env(),
        capture_output=True,
        timeout=300,
    )
    assert killed.returncode == -9, killed.stderr
    return _run_dirs(root)[-1].name


def _resume_after_dataset_edit(root: Path) -> list[str]:
    run_id = _killed_run(root)
    dataset = root / "data" / "questions.yaml"  # rome's failing expectation edited away
    data = yaml.safe_load(dataset.read_text(encoding="utf-8"))
    for row in data["questions"]:
        if row["id"] == "rome":
            row["expected_tools"] = [{"tool": "lookup", "should_run": False}]
    dataset.write_text(yaml.safe_dump(data), encoding="utf-8")
    return ["run", "--resume", run_id]


def _resume_other_config(root: Path) -> list[str]:
    # an identical config elsewhere is the same config (issue 45 item 18); other content is not
    run_id = _killed_run(root)
    text = (root / "tracegrade.yaml").read_text()
    (root / "other.yaml").write_text(text.replace("concurrency: 1", "concurrency: 2"))
    return ["run", "--config", "other.yaml", "--resume", run_id]


def _resume_with_limit(root: Path) -> list[str]:
    return ["run", "--resume", _killed_run(root), "--limit", "4"]


RUBRIC = {
    "id": "claims",
    "version": "1.0.0",
    "checks": [
        {
            "id": "names-refund",
            "kind": "must_contain",
            "severity": "critical",
            "params": {"values": ["refund"]},
        }
    ],
}


def _grade_after_rubric_edit(root: Path) -> list[str]:
    (root / "rubrics").mkdir(parents=True)
    rubric = root / "rubrics" / "claims.yaml"
    rubric.write_text(json.dumps(RUBRIC), encoding="utf-8")
    _project(
        root,
        questions=[],
        extra_questions=[dict(QUESTIONS["paris"], rubric_ref="rubric/claims@1.0.0")],
        config={"rubrics": "rubrics"},
        target={"graders": ["rubric_checks"]},
    )
    assert _run(root) == 2  # the critical check fails
    edited = {**RUBRIC, "checks": [{**RUBRIC["checks"][0], "params": {"values": ["sunny"]}}]}
    rubric.write_text(json.dumps(edited), encoding="utf-8")  # same version, edited in place
    return ["grade", str(_run_dirs(root)[-1])]


# -- questions no grader scored ---------------------------------------------------------------
def _unscored(root: Path) -> list[str]:
    _project(
        root,
        extra_questions=[
            {"id": "chat-a", "input": "weather in Paris?"},  # no expectation any grader reads
            {"id": "chat-b", "input": "weather in Paris?"},
        ],
    )
    return ["run", *REPORTS, "--junit", "junit.xml"]


def _unscored_named_everywhere(root: Path, out: str) -> None:
    summary = (root / "summary.md").read_text(encoding="utf-8")
    assert "2 question(s) no grader scored" in summary and "`chat-b`" in summary
    report = json.loads((root / "report.json").read_text(encoding="utf-8"))
    assert report["gate"]["targets"]["t"]["unscored"] == ["chat-a", "chat-b"]
    assert [q["passed"] for q in report["questions"] if q["id"].startswith("chat")] == [None, None]
    assert (root / "junit.xml").read_text(encoding="utf-8").count("<skipped") == 2
    assert "over 2 question(s)" in out  # the composite names what it averaged


# -- a full disk ------------------------------------------------------------------------------
def _many_questions(root: Path) -> list[str]:
    questions = [dict(QUESTIONS["paris"], id=f"p{i:02d}") for i in range(30)]
    _project(root, questions=[], extra_questions=questions, target={"concurrency": 1})
    return ["run", "--quiet"]


def _resumes_once_space_is_back(root: Path, out: str) -> None:
    (run_dir,) = _run_dirs(root)
    import sqlite3

    with sqlite3.connect(f"file:{run_dir / 'results.sqlite'}?mode=ro", uri=True) as db:
        kept = db.execute("SELECT count(*) FROM questions").fetchone()[0]
    assert f"--resume {run_dir.name}" in out
    assert _run(root, "--resume", run_dir.name) == 0
    with sqlite3.connect(f"file:{run_dir / 'results.sqlite'}?mode=ro", uri=True) as db:
        assert db.execute("SELECT count(*) FROM questions").fetchone()[0] == 30 >= kept


RAISES = """
from tracegrade.graders.code import grader


@grader(name="broken")
def broken(output):
    raise RuntimeError("the grader's service is down")
"""


CASES = [
    # -- false greens: a grader's own number --------------------------------------------------
    Case(
        "grader-nan-score",
        _grading_module(GRADE_RESULT.format(name="nanny", score='float("nan")')),
        3,
        ("nanny", "not a finite number"),
        check=_strict_json,
    ),
    Case(
        "grader-inf-score",
        _grading_module(GRADE_RESULT.format(name="infinite", score='float("inf")')),
        3,
        ("infinite", "not a finite number"),
        check=_strict_json,
    ),
    Case(
        "grader-score-off-scale",
        _grading_module(GRADE_RESULT.format(name="huge", score="1e6")),
        3,
        ("huge", "outside its declared scale 0-5"),
        check=_strict_json,
        real=True,
    ),
    Case("grader-flat-scale", _grading_module(FLAT_SCALE), 4, ("graders.py", "flat", "max_score")),
    # -- false greens: compare of an incomplete candidate, baselines -------------------------
    Case(
        "compare-candidate-limited", _compare_limited, 3, ("missing from the candidate", "t/rome")
    ),
    Case(
        "compare-candidate-unfinished",
        _compare_unfinished,
        3,
        ("unfinished", "2 of 3"),
        check=_comparison_incomplete,
    ),
    Case("compare-candidate-degraded", _compare_degraded, 3, ("degraded", "t/paris", "t/rome")),
    Case(
        "baseline-of-another-dataset",
        _baseline_of_other_dataset,
        4,
        ("--baseline", "shares no question"),
        check=_nothing_ran,
    ),
    Case(
        "failed-gate-beside-baseline-problem",
        _gate_beside_incomplete_baseline,
        2,
        ("must-pass failure", "missing from the candidate"),
    ),
    # -- false greens and internal errors: damaged run directories ----------------------------
    Case(
        "identity-newer-version",
        _damaged("show", _newer_identity),
        4,
        ("identity.json", "made by a newer tracegrade"),
        real=True,
    ),
    Case(
        "store-rows-not-json-show",
        _damaged("show", _sql("UPDATE questions SET row = '{not json'")),
        4,
        ("results.sqlite", "not JSON"),
    ),
    Case(
        "store-rows-not-json-grade",
        _damaged("grade", _sql("UPDATE grades SET checks = 'nope['")),
        4,
        ("results.sqlite", "not JSON"),
    ),
    Case("sqlite-bit-flip-show", _damaged("show", _flip_page), 4, ("results.sqlite", "damaged")),
    Case(
        "sqlite-bit-flip-compare",
        _damaged("compare", _flip_page),
        4,
        ("results.sqlite", "damaged"),
        real=True,
    ),
    Case(
        "scores-table-dropped-show",
        _damaged("show", _sql("DROP TABLE scores")),
        4,
        ("results.sqlite", "'scores' is missing"),
    ),
    Case(
        "scores-table-dropped-grade",
        _damaged("grade", _sql("DROP TABLE scores")),
        4,
        ("results.sqlite", "'scores' is missing"),
    ),
    Case(
        "trace-file-garbage-grade",  # lines no question owns: each named and skipped
        _damaged("grade", _garbage_trace),
        0,
        "not an OTLP JSON line; skipped",
        check=_garbage_lines_named,
    ),
    # -- internal errors: files that are not files, text that is not text ---------------------
    Case("dataset-fifo", _fifo_dataset, 4, ("questions.yaml", "FIFO", "/targets/t/dataset")),
    Case(
        "policy-dev-zero",
        _policy("/dev/zero", "run"),
        4,
        ("/dev/zero", "character device", "/targets/t/policy"),
        real=True,
    ),
    Case(
        "policy-not-utf8-validate",
        _policy(b"Refunds within 30 days \xe9\xff\n", "validate"),
        4,
        ("policy.md", "not UTF-8", "/targets/t/policy"),
    ),
    Case(
        "policy-not-utf8-run",
        _policy(b"Refunds within 30 days \xe9\xff\n", "run"),
        4,
        ("policy.md", "not UTF-8", "/targets/t/policy"),
    ),
    # -- false greens: catastrophic regular expressions ----------------------------------------
    Case(
        "trajectory-catastrophic-regex",  # (a+)+b against 64 a's: hours on a backtracking engine
        _trajectory_regex("(a+)+b"),
        2,
        ("long", "trajectory_grader"),
        real=True,
        in_process=False,
    ),
    Case(
        "trajectory-regex-re2-refuses",
        _trajectory_regex("(a)\\1"),
        4,
        ("questions.yaml", "regex does not compile", "RE2"),
    ),
    Case("rubric-regex-re2-refuses", _rubric_regex, 4, ("shape.yaml", "not a valid RE2 pattern")),
    # -- internal errors: deep and huge answers ------------------------------------------------
    # a graph compiled without a checkpointer runs without one (or with one that keeps what
    # msgpack cannot hold): arguments nested this deep no longer fail only under tracegrade
    Case(
        "arguments-260-levels-deep",
        _agent_says("deep args"),
        0,
        "exit code 0",
        check=_reports_whole,
    ),
    Case("answer-10-mb", _agent_says("huge answer"), 0, "exit code 0", check=_reports_whole),
    # -- false greens: resume and re-grade against changed inputs ------------------------------
    Case(
        "resume-after-dataset-edit",
        _resume_after_dataset_edit,
        4,
        ("questions.yaml", "/targets/t/dataset", "changed since the run started"),
        real=True,
        in_process=False,
    ),
    Case(
        "resume-other-config",
        _resume_other_config,
        4,
        ("--config", "the config changed since the run started", "tracegrade.yaml"),
        real=True,
        in_process=False,
    ),
    Case(
        "resume-with-limit",
        _resume_with_limit,
        4,
        ("--limit", "--resume"),
        real=True,
        in_process=False,
    ),
    Case(
        "grade-after-rubric-edit",
        _grade_after_rubric_edit,
        4,
        ("claims.yaml", "rubric file changed since the run started"),
    ),
    # -- false greens: questions no grader scored ----------------------------------------------
    Case(
        "questions-no-grader-scored",
        _unscored,
        0,
        ("2 question(s) no grader scored", "chat-a, chat-b"),
        check=_unscored_named_everywhere,
    ),
    # -- internal errors: a full disk, at start and mid-run -----------------------------------
    Case(
        "disk-full-at-start",
        _many_questions,
        3,
        ("results.sqlite", "could not write"),
        check=_resumes_once_space_is_back,
        real=True,
        in_process=False,
        fsize=60_000,
    ),
    Case(
        "disk-full-mid-run",
        _many_questions,
        3,
        ("results.sqlite", "could not write"),
        check=_resumes_once_space_is_back,
        real=True,
        in_process=False,
        fsize=200_000,
    ),
    # -- hostile text in reports ----------------------------------------------------------------
    Case(
        "console-control-characters",
        _hostile_ids,
        2,
        "worst questions",
        check=_console_escaped,
        real=True,
    ),
    Case("markdown-html-and-headings", _hostile_ids, 2, "must-pass", check=_markdown_escaped),
]


def _child_env() -> dict[str, str]:
    """The environment of a real `tracegrade` command: this checkout importable first."""
    return {
        "PYTHONPATH": os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(REPO)) if p),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }


def _prepare(case: Case, root: Path) -> list[str]:
    root.mkdir(parents=True, exist_ok=True)
    return case.setup(root)


def _expect(case: Case, root: Path, code: int, out: str) -> None:
    assert code == case.code, out
    for where in (case.where,) if isinstance(case.where, str) else case.where:
        assert where in out, f"{where!r} not in:\n{out}"
    assert "Traceback" not in out, out
    if case.check is not None:
        case.check(root, out)


@pytest.mark.parametrize("case", [c for c in CASES if c.in_process], ids=lambda c: c.name)
def test_fault(case: Case, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    argv = _prepare(case, tmp_path)
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    _expect(case, tmp_path, code, out + err)


@pytest.mark.parametrize("case", [c for c in CASES if c.real], ids=lambda c: c.name)
def test_fault_real_command(case: Case, tmp_path: Path) -> None:
    argv = _prepare(case, tmp_path)

    def limit_file_size() -> None:
        if case.fsize is not None:  # past the limit a write fails (EFBIG), as on a full disk
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (case.fsize, case.fsize))

    proc = subprocess.run(
        [sys.executable, "-m", "tracegrade", *argv],
        preexec_fn=limit_file_size,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,  # generous: a case that hung before its fix ends in seconds now
        env=_child_env(),
    )
    _expect(case, tmp_path, proc.returncode, proc.stdout + proc.stderr)


def test_corpus_names_every_case_once() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


UNSAFE = ["\x1b", "\x07", "\x00", "\x9b", "\u202e", "\u2066", "\u200f"]


@given(st.text())
def test_printable_leaves_no_control_or_bidi_character(text: str) -> None:
    shown = printable(text)
    assert not any(c in shown for c in UNSAFE)
    assert shown.count("\n") == text.count("\n")


@given(st.text())
def test_markdown_text_and_code_stay_on_one_line_without_markup(text: str) -> None:
    for shown in (md_text(text), md_code(text)):
        assert "\n" not in shown and "\r" not in shown
        assert not any(c in shown for c in UNSAFE)
        assert shown.replace("\\|", "").count("|") == 0  # never splits a table cell
    assert "<" not in md_text(text)
    code = md_code(text)
    fence = code[: len(code) - len(code.lstrip("`"))]
    inner = code[len(fence) : len(code) - len(fence)]
    assert code.endswith(fence) and fence not in inner  # nothing inside ends the span


def test_json_text_is_standard_json_whatever_the_numbers() -> None:
    text = to_json_text({"mean": float("nan"), "scores": [float("inf"), 1.5, -float("inf")]})

    def refuse(name: str) -> None:
        raise AssertionError(f"bare {name}")

    assert json.loads(text, parse_constant=refuse) == {"mean": None, "scores": [None, 1.5, None]}


def test_trace_file_on_a_full_disk_is_counted_and_the_run_incomplete(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    """The trace file's writes and its close fail with ENOSPC (its buffer still full at
    shutdown): counted, exit 3, never a traceback."""
    import errno

    from tracegrade.capture import tracefile

    class FullDisk:
        def __init__(self, file) -> None:
            self.file, self.closed = file, False

        def write(self, text: str) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        flush = write

        def close(self) -> None:
            self.closed = True
            self.file.close()
            raise OSError(errno.ENOSPC, "No space left on device")

        def tell(self) -> int:
            return self.file.tell()

    opened = tracefile.TraceFileExporter.__init__

    def full(self, *args, **kwargs) -> None:
        opened(self, *args, **kwargs)
        self._file = FullDisk(self._file)

    monkeypatch.setattr(tracefile.TraceFileExporter, "__init__", full)
    monkeypatch.chdir(tmp_path)
    _project(tmp_path)
    code = _run(tmp_path)
    out, err = capsys.readouterr()
    assert code == 3, out + err
    assert "could not be written to the trace file" in out + err and "No space left" in out + err
    assert "Traceback" not in err


SLOW_GRADER = """
import time
from pathlib import Path

from tracegrade.graders.code import grader


@grader(name="patient")
def patient(output):
    if Path("SLOW").exists():  # only the re-grade is slow: a CI cancel lands mid-way
        time.sleep(0.5)
    return "sunny" in output
"""


def test_grade_cancelled_mid_way_is_not_the_runs_latest(tmp_path: Path) -> None:
    """A `grade` SIGTERMed half-way (a CI cancel) ends as `run` does (143, the command to
    finish), and its partial grading never becomes what `show` reports."""
    questions = [dict(QUESTIONS["rome"], id=f"r{i:02d}") for i in range(12)]
    _project(tmp_path, questions=[], extra_questions=questions, target={"graders": MUST_PASS_TOOLS})
    (tmp_path / "data" / "graders.py").write_text(SLOW_GRADER, encoding="utf-8")
    ran = subprocess.run(
        [sys.executable, "-m", "tracegrade", "run", "--quiet"],
        cwd=tmp_path,
        env=_child_env(),
        capture_output=True,
        timeout=300,
    )
    assert ran.returncode == 2, ran.stderr  # every rome fails its must-pass grader
    (run_dir,) = _run_dirs(tmp_path)
    (tmp_path / "SLOW").touch()
    grade = subprocess.Popen(
        [sys.executable, "-m", "tracegrade", "grade", str(run_dir)],
        cwd=tmp_path,
        env=_child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    import sqlite3
    import time

    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:  # until the re-grade has committed a first question
        with sqlite3.connect(f"file:{run_dir / 'results.sqlite'}?mode=ro", uri=True) as db:
            if db.execute("SELECT count(*) FROM scores WHERE grading_id = 2").fetchone()[0]:
                break
        time.sleep(0.1)
    grade.send_signal(signal.SIGTERM)
    _, err = grade.communicate(timeout=120)
    assert grade.returncode == 143, err
    assert f"tracegrade grade {run_dir}" in err and "Traceback" not in err
    shown = subprocess.run(
        [sys.executable, "-m", "tracegrade", "show", str(run_dir)],
        cwd=tmp_path,
        env=_child_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert shown.returncode == 2, shown.stdout  # the run's own verdict, not a partial one
    assert "(grading 1)" in shown.stdout and "grading 2 was interrupted" in shown.stdout
    listed = subprocess.run(
        [sys.executable, "-m", "tracegrade", "runs"],
        cwd=tmp_path,
        env=_child_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "failed (2); grading 2 interrupted" in listed.stdout, listed.stdout
    as_json = subprocess.run(
        [sys.executable, "-m", "tracegrade", "runs", "--json"],
        cwd=tmp_path,
        env=_child_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    record = json.loads(as_json.stdout.splitlines()[0])
    assert (record["grading_id"], record["interrupted_gradings"]) == (1, [2])


def test_merge_killed_half_way_leaves_no_run(tmp_path: Path, monkeypatch, capsys) -> None:
    """A `merge --out` stopped half-way leaves nothing that `show` reads as a run."""
    from tracegrade.rundir.directory import RunDirectory

    monkeypatch.chdir(tmp_path)
    _project(tmp_path)
    for shard in ("1/2", "2/2"):
        assert _run(tmp_path, "--shard", shard) in (0, 3)
    parts = [str(d) for d in _run_dirs(tmp_path)]

    def killed(*args, **kwargs) -> None:
        raise KeyboardInterrupt  # as a kill half-way through copying the trace files

    monkeypatch.setattr(RunDirectory, "append_traces", killed)
    assert main(["merge", *parts, "--out", str(tmp_path / "merged")]) == 130
    capsys.readouterr()
    assert main(["show", str(tmp_path / "merged")]) == 4
    assert not any(p.name.startswith(".") for p in (tmp_path / "runs").iterdir())


def test_an_interrupt_inside_a_task_is_reported_once(caplog: pytest.LogCaptureFixture) -> None:
    """A SIGTERM that lands while one of the run's tasks (a grader) runs reaches the caller
    once; asyncio never prints that task's copy as 'Task exception was never retrieved' with a
    traceback after the CLI's clean message (seen on a loaded machine: a CI cancel of grade)."""
    import asyncio
    import gc

    from tracegrade.execution.executors.loops import run_without_loop

    async def grader() -> None:
        raise KeyboardInterrupt

    async def main() -> None:
        task = asyncio.ensure_future(grader())
        await asyncio.sleep(5)
        await task

    with caplog.at_level(logging.ERROR, logger="asyncio"), pytest.raises(KeyboardInterrupt):
        run_without_loop("main", main)
    gc.collect()
    assert not [r for r in caplog.records if r.name == "asyncio"], caplog.text
