"""Benchmark: the HTML report of a 5,000-question run (the issue asks for at most a few KB per
question beyond the records themselves, and a page usable at that size).

Builds a synthetic run (six graders with rubric checks, a two-message input, an answer and four
tool calls per question, one in four questions failing), renders the page and prints:
- the page size per question, next to the size of the records it shows (input messages, answer,
  tool arguments and cut results, grader reasons and checks as compact JSON) and the overhead
  per question beyond them;
- the render time in Python, beside the same build as before the one-scan redaction and the
  held-off collector (interleaved, medians), and with the tool-usage marks re-graded;
- with Debian's chromium present: the time to open the page from disk until the first page of
  the list is drawn, and to narrow the list by a search, in a headless browser.

    .venv/bin/python bench/html_report.py [--questions N] [--out FILE] [--rounds N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from tracegrade.graders.tool_usage import ToolUsageGrader  # noqa: E402
from tracegrade.inputs.config import GateConfig  # noqa: E402
from tracegrade.records import Outcome, ToolCall, ToolRecord  # noqa: E402
from tracegrade.redaction import DEFAULT_POLICY  # noqa: E402
from tracegrade.reports.html import build_page_data, render_page  # noqa: E402
from tracegrade.reports.html import data as html_data  # noqa: E402
from tracegrade.reports.html import rows as html_module  # noqa: E402
from tracegrade.reports.html.data import RESULT_CHARS  # noqa: E402
from tracegrade.rundir.outcome import RunOutcome, TargetResult  # noqa: E402
from tracegrade.verdicts.gate import evaluate_gate  # noqa: E402
from tracegrade.verdicts.result import QuestionAnswer, QuestionResult  # noqa: E402
from tracegrade.verdicts.scoring import (  # noqa: E402
    GraderVerdict,
    score_question,
    summarise_graders,
)

EXPECTED = [
    {"tool": "lookup_customer", "should_run": True, "args": {"email": "x@example.com"}},
    {"tool": "check_availability", "should_run": True, "after": "lookup_customer"},
    {"tool": "book_appointment", "should_run": True, "after": "check_availability"},
    {"tool": "issue_refund", "should_run": False},
]
CHECKS = [
    {"id": f"check-{i}", "version": "1.0.0", "kind": "must_not_contain", "status": "pass",
     "severity": "major", "required": True, "reason": "contains none of 3 forbidden value(s)"}
    for i in range(3)
]  # fmt: skip


def G(grader_id, score, lo, hi, reason, **kw) -> GraderVerdict:
    """A grader verdict written positionally, as the table below lists them."""
    return GraderVerdict(
        grader_id=grader_id, score=score, min_score=lo, max_score=hi, reason=reason, **kw
    )


def synthetic(n: int, seed: int = 7):
    rng = random.Random(seed)
    scores, runs, records = [], {}, {}
    for i in range(n):
        qid = f"q{i:05d}"
        failing = i % 4 == 0
        graders = [
            G("tool_usage_grader", 3.75 if failing else 5.0, 0, 5,
                        "3 of 4 tool expectations met; unmet: book_appointment after "
                        "check_availability" if failing else "all 4 tool expectations met",
                        must_pass=True, threshold=5),
            G("state_grader", 0.0 if failing else 5.0, 0, 5,
                        "1 of 1 state assertion failed" if failing else "1 state assertion held",
                        binary=True, must_pass=True),
            G("format_grader", 5.0, 0, 5, "no text-rule violations"),
            G("rubric_checks", 5.0, 0, 5, "support@1 weighted_mean = 1: 3 pass",
                        checks=[dict(c) for c in CHECKS]),
            G("contains", None, 0, 1, "no expected.keyword in the question, skipping"),
            G("claims_match_record", 1.0, 0, 1, "claims match the record", binary=True),
        ]  # fmt: skip
        scores.append(
            score_question(
                QuestionResult(id=qid, target="desk", split=rng.choice(["test", "train"]),
                              bundle=rng.choice(["bookings", "refunds", "cancellations"]),
                              tags=["policy", rng.choice(["booking", "refund"])],
                              graders=graders, trace_id=f"{rng.getrandbits(128):032x}")
            )
        )  # fmt: skip
        email = f"customer{i}@example.com"
        runs[qid] = QuestionAnswer(
            row={"id": qid, "expected_tools": EXPECTED},
            messages=[{"role": "system", "content": "You are the support desk."},
                      {"role": "user", "content": f"Please book 2026-12-03 10:00 for {email}."}],
            response=f"Booked 2026-12-03 at 10:00 for {email}; your booking id is B{i}.",
            has_record=True, tool_call_count=4, latency_s=0.8,
        )  # fmt: skip
        calls = [
            ("lookup_customer", {"email": email}, {"status": "found", "customer_id": f"C{i}"}),
            ("check_availability", {"date": "2026-12-03", "slot": "10:00"}, {"available": True}),
            ("book_appointment", {"customer": f"C{i}", "date": "2026-12-03", "slot": "10:00"},
             {"status": "confirmed", "booking_id": f"B{i}", "notes": "x" * 300}),
            ("send_confirmation", {"email": email}, {"sent": True}),
        ]  # fmt: skip
        records[qid] = ToolRecord(
            [
                ToolCall(seq=k, name=name, qualified_id=f"desk:{name}", call_id=f"c{k}",
                         arguments=args, outcome=Outcome.OK, result=json.dumps(result),
                         agent="desk", model_turn=k, index_in_turn=0,
                         start_ns=1000 * k, end_ns=1000 * k + 500)
                for k, (name, args, result) in enumerate(calls)
            ]
        )  # fmt: skip
        # what a run stores of the tool-usage grader: its details on this record
        graded = ToolUsageGrader().grade("", "", {"expected_tools": EXPECTED,
                                                  "tool_calls": records[qid]})  # fmt: skip
        scores[-1].graders[0].details = dict(graded.details)
    return scores, runs, records


def records_size(scores, runs, records) -> int:
    """Bytes of what the page shows, as compact JSON with nothing added: the floor."""
    total = 0
    for q in scores:
        run, rec = runs[q.id], records[q.id]
        shown = {
            "messages": run.messages,
            "response": run.response,
            "calls": [
                [c.qualified_id, dict(c.arguments), str(c.result)[:RESULT_CHARS]] for c in rec
            ],
            "graders": [[g.grader_id, g.score, g.reason, g.checks] for g in q.graders],
        }
        total += len(json.dumps(shown, separators=(",", ":"), ensure_ascii=False).encode())
    return total


@contextlib.contextmanager
def before_this_change() -> Iterator[None]:
    """The page built as it was before #44's changes (every text scanned alone, the collector
    running, the store's rows read as whole validated results, no rows kept in the run
    directory): the reference printed beside today's figure."""
    saved = html_data.build_question, html_module.build_question, html_data.gc_paused
    loader = html_data.load_sources

    def each_text(q, *, stored, record, trace_url=None, redaction=DEFAULT_POLICY, **_):
        # verdict= and seen= are dropped: the verdict judged again, each grader row built anew
        return html_data._question(
            q,
            stored=stored,
            record=record,
            trace_url=trace_url,
            policy=redaction,
            verdict=html_data.question_verdict(q),  # judged again per row, as before
        )

    def whole_runs(run_dir, targets):  # the store's results, each validated, then their answers
        from tracegrade.capture.tracefile import read_trial_records
        from tracegrade.rundir.directory import RunDirectory

        run = RunDirectory(run_dir)
        runs = {t: {} for t in targets}
        records = {t: {} for t in targets}
        if run.has_store():
            with run.read_store() as store:
                for target in targets:
                    runs[target] = {(r.id, r.trial): r.answer for r in store.load_runs(target)}
        for target in targets:
            if run.trace_file(target).is_file():
                records[target] = read_trial_records(run.trace_file(target))
        return runs, records

    row_code, first_records = html_module._row_code, html_module._first_records
    html_data.build_question = html_module.build_question = each_text
    html_data.load_sources = html_module.load_sources = whole_runs
    html_data.gc_paused = html_module.gc_paused = contextlib.nullcontext  # type: ignore[assignment]
    html_module._row_code = lambda: None  # type: ignore[assignment]  # no rows kept or read back
    html_module._first_records = lambda outcome, names, *_: whole_runs(  # type: ignore[assignment]
        Path(outcome.run_dir), names
    )  # the trace file read whole before the first rows
    try:
        yield
    finally:
        html_data.build_question, html_module.build_question, html_data.gc_paused = saved
        html_module.gc_paused = saved[2]
        html_data.load_sources = html_module.load_sources = loader
        html_module._row_code = row_code  # type: ignore[method-assign]
        html_module._first_records = first_records


def interleaved(
    builds: dict[str, Callable[[], object]], rounds: int
) -> dict[str, tuple[float, float]]:
    """(median wall seconds, median CPU seconds) of each build, run in turn `rounds` times:
    load on a shared machine drifts, and the ratio of builds measured side by side survives
    it; the build is one thread's work, so its CPU time is what a quiet machine's wall time
    would be."""
    took: dict[str, list[tuple[float, float]]] = {k: [] for k in builds}
    for _ in range(rounds):
        for key, build in builds.items():
            started, cpu = time.perf_counter(), time.process_time()
            build()
            took[key].append((time.perf_counter() - started, time.process_time() - cpu))
    return {
        k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
        for k, v in took.items()
    }


def browser_timing(path: Path, questions: int) -> tuple[float, float] | None:
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        return None
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium), headless=True)
        page = browser.new_page()
        started = time.perf_counter()
        page.goto(path.resolve().as_uri())
        page.wait_for_selector("#question-table tbody tr")
        opened = time.perf_counter() - started
        started = time.perf_counter()
        page.fill("#f-text", f"customer{questions - 1}@")
        expect(page.locator("#question-table tbody tr")).to_have_count(1)
        searched = time.perf_counter() - started
        browser.close()
    return opened, searched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=5000)
    parser.add_argument("--out", type=Path, default=None, help="keep the page here")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved builds of each")
    args = parser.parse_args()
    n = args.questions
    scores, runs, records = synthetic(n)
    outcome = RunOutcome(
        run_id="bench",
        run_dir=Path("."),
        targets=[
            TargetResult(
                "desk",
                "agent",
                "bench.yaml",
                scores,
                evaluate_gate(scores, GateConfig()),
                summarise_graders(scores),
            )
        ],
        manifest=None,
        grading_id=1,
    )
    sources = {
        "runs": {"desk": {(qid, 0): r for qid, r in runs.items()}},
        "records": {"desk": {(qid, 0): r for qid, r in records.items()}},
    }

    # in the same run, interleaved (this machine is shared): the page as built before this
    # change (every text scanned alone, the collector running), then as built now; and as
    # before the stored tool-usage verdict was read (a run whose grader was not attached
    # still pays that). Each build starts with the redaction policy's memory of texts empty.
    def build() -> str:
        DEFAULT_POLICY._memo.clear()
        return render_page(outcome, build_page_data(outcome, **sources))

    kept = [q.graders[0].details for q in scores]

    def regraded() -> str:
        for q in scores:
            q.graders[0].details = {}
        try:
            return build()
        finally:
            for q, details in zip(scores, kept, strict=True):
                q.graders[0].details = details

    def as_before() -> str:
        with before_this_change():
            return build()

    times = interleaved({"now": build, "before": as_before, "regraded": regraded}, args.rounds)
    html = build()
    size = len(html.encode())
    floor = records_size(scores, runs, records)
    print(f"questions                     {n}")
    print(f"page size                     {size / 1e6:.2f} MB ({size / n:,.0f} B per question)")
    print(f"records shown (compact JSON)  {floor / 1e6:.2f} MB ({floor / n:,.0f} B per question)")
    print(f"beyond the records            {(size - floor) / n:,.0f} B per question")
    print(f"ratio page / records          {size / floor:.2f}")
    for label, key in (
        ("render in Python", "now"),
        ("  before (reference)", "before"),
        ("  with the marks re-graded", "regraded"),
    ):
        wall, cpu = times[key]
        print(
            f"{label:30s}{wall:.2f} s ({wall / n * 1e3:.2f} ms/question); "
            f"CPU {cpu:.2f} s ({cpu / n * 1e3:.2f} ms/question)"
        )
    print(
        f"  now / before                wall {times['now'][0] / times['before'][0]:.2f}, "
        f"CPU {times['now'][1] / times['before'][1]:.2f}  (medians of {args.rounds})"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = args.out or Path(tmp) / "bench.html"
        path.write_text(html, encoding="utf-8")
        timing = browser_timing(path, n)
    if timing is None:
        print("browser                       (no /usr/bin/chromium: not measured)")
    else:
        print(f"chromium: open to first rows  {timing[0]:.2f} s")
        print(f"chromium: search narrows list {timing[1] * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
