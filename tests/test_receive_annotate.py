"""`receive --annotate phoenix`: each grade written to a real Phoenix on loopback as a span
annotation on the root span it judged, as traces are graded (CODE for graders, LLM for
judges), read back through Phoenix's API; a dead Phoenix costs annotations (counted in the
monitor run), never receiving."""

from __future__ import annotations

import hashlib

import httpx
import pytest

from tests import openai_server as loopback
from tests.loopback_timeout import LOOPBACK_TIMEOUT_S
from tests.runs_support import write_project
from tests.test_receive import _graded, _trace, _wait_for, receiving
from tracegrade.capture.otlp_http import json_to_protobuf
from tracegrade.cli import main
from tracegrade.traces.live.receiver import bind

openai_server = loopback.openai_server
PROTO = {"content-type": "application/x-protobuf"}


def _project(tmp_path, judge_url: str):
    judge = {"provider": "openai-compatible", "base_url": judge_url, "model": "m"}
    return write_project(
        tmp_path,
        questions=["paris", "rome"],
        target={"graders": ["tool_usage_grader", "relevance_grader"]},
        config={"judge": judge},
    )


def _annotations(phoenix_url: str, span_ids: list[str]) -> list[dict]:
    url = f"{phoenix_url}/v1/projects/default/span_annotations"
    reply = httpx.get(url, params={"span_ids": span_ids, "limit": 1000}, timeout=30)
    assert reply.status_code == 200, reply.text
    return reply.json()["data"]


def _traced(trace_id: str, qid: str) -> dict:
    """`_trace`, its span ids made its own (the helper's are the same in every trace, and one
    Phoenix serves the whole session)."""
    request = _trace(trace_id, qid)
    for span in request["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for key in ("spanId", "parentSpanId"):
            if key in span:
                span[key] = hashlib.sha256(f"{trace_id}{span[key]}".encode()).hexdigest()[:16]
    return request


def _root_id(request: dict) -> str:
    spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    return next(s["spanId"] for s in spans if "parentSpanId" not in s)


@pytest.mark.parametrize("workers", [0, 2])  # graded in the receiver, or by grading workers
def test_each_grade_is_annotated_in_phoenix_as_traces_are_graded(
    tmp_path,
    phoenix,
    openai_server,
    workers,
):
    openai_server.default = loopback.score(4, "on topic")
    config = _project(tmp_path, openai_server.base_url)
    requests = {"paris": _traced("a" * 32, "paris"), "rome": _traced("b" * 32, "rome")}
    assert _root_id(requests["paris"]) != _root_id(requests["rome"])
    with receiving(
        config,
        forward=f"{phoenix}/v1/traces",
        forward_wait_s=30.0,
        annotate=phoenix,
        workers=workers,
    ) as (receiver, url):
        for request in requests.values():
            assert httpx.post(
                url, content=json_to_protobuf(request), headers=PROTO, timeout=LOOPBACK_TIMEOUT_S
            ).is_success
        _wait_for(lambda: receiver.counts["annotations_written"] >= 6, seconds=300)
    roots = {qid: _root_id(r) for qid, r in requests.items()}
    found = _annotations(phoenix, list(roots.values()))
    by_span: dict[str, dict[str, dict]] = {}
    for a in found:
        by_span.setdefault(a["span_id"], {})[a["name"]] = a
    paris, rome = by_span[roots["paris"]], by_span[roots["rome"]]
    assert set(paris) == set(rome) == {"tool_usage_grader", "relevance_grader", "tracegrade"}
    assert paris["tool_usage_grader"]["annotator_kind"] == "CODE"
    assert paris["relevance_grader"]["annotator_kind"] == "LLM"
    assert paris["relevance_grader"]["result"]["score"] == 4
    assert paris["tracegrade"]["result"]["label"] == "pass"
    stored = {q.id: q for t in receiver.outcome.targets for q in t.questions}
    unmet = next(g for g in stored["rome"].graders if g.grader_id == "tool_usage_grader")
    assert rome["tool_usage_grader"]["result"]["label"] == ("pass" if unmet.passed else "fail")
    assert rome["tracegrade"]["result"]["label"] == (
        "fail" if stored["rome"].must_pass_failures or stored["rome"].unmet else "pass"
    )
    assert receiver.counts["annotations_written"] == 6
    assert not receiver.counts["annotations_failed"]
    assert "6 Phoenix annotations written" in " ".join(receiver.outcome.notes)


def test_a_dead_phoenix_costs_annotations_counted_never_grading(tmp_path, openai_server):
    openai_server.default = loopback.score(4, "on topic")
    config = _project(tmp_path, openai_server.base_url)
    dead = bind("127.0.0.1", 0)
    dead_url = f"http://127.0.0.1:{dead.getsockname()[1]}"
    dead.close()
    with receiving(config, annotate=dead_url) as (receiver, url):
        assert httpx.post(
            url, json=_trace("c" * 32, "paris"), timeout=LOOPBACK_TIMEOUT_S
        ).is_success
        _wait_for(lambda: receiver.counts["annotations_failed"] == 3 and _graded(receiver) == 1)
    assert receiver.outcome.exit_code == 0
    assert "3 Phoenix annotations failed" in " ".join(receiver.outcome.notes)


def test_annotate_needs_an_endpoint(tmp_path, capsys):
    config = write_project(tmp_path, questions=["paris"])
    base = ["receive", "--config", str(config), "--target", "t", "--port", "0"]
    assert main([*base, "--annotate", "phoenix"]) == 4
    assert "--annotate-endpoint" in capsys.readouterr().err
    assert main([*base, "--annotate", "phoenix", "--annotate-endpoint", "localhost:6006"]) == 4
    assert main([*base, "--annotate-endpoint", "http://localhost:6006"]) == 4


def test_the_roots_kept_for_open_conversations_are_bounded(monkeypatch):
    from types import SimpleNamespace

    from tracegrade.traces.live import receiver as module
    from tracegrade.traces.live.receiver import Receiver

    monkeypatch.setattr(module, "_HELD_ROOTS", 3)
    monitor = SimpleNamespace(config=SimpleNamespace(data={}), run_id="r", holds=lambda _t: True)
    sock = bind("127.0.0.1", 0)
    try:
        receiver = Receiver(monitor, sock, announce=lambda _t: None)
        receiver._annotator = object()  # annotating: held roots are kept
        for n in range(10):
            receiver._graded(f"{n:032x}", None, f"{n:016x}")
        assert list(receiver._roots) == [f"{n:032x}" for n in (7, 8, 9)]
    finally:
        sock.close()


def _annotation(span_id: str, name: str) -> dict:
    return {
        "span_id": span_id,
        "name": name,
        "annotator_kind": "CODE",
        "result": {"label": "pass", "score": 1.0},
        "identifier": f"tracegrade-{span_id}-{name}",
    }


def _in_phoenix(phoenix_url: str, trace_id: str) -> str:
    """A trace sent to Phoenix's own OTLP endpoint, once Phoenix has stored it; its root span's
    id. Phoenix stores what it receives in the background: under load (stress --cpu 2 on 2
    cores) a span sent just before took longer than a test's 3 s settling window, and a batch
    meant to mix a stored span with a missing one held two missing ones."""
    request = _traced(trace_id, "paris")
    sent = httpx.post(
        f"{phoenix_url}/v1/traces",
        content=json_to_protobuf(request),
        headers=PROTO,
        timeout=LOOPBACK_TIMEOUT_S,
    )
    assert sent.is_success, sent.text
    root = _root_id(request)
    url = f"{phoenix_url}/v1/projects/default/spans"
    _wait_for(
        lambda: (
            httpx.get(url, params={"span_id": [root]}, timeout=LOOPBACK_TIMEOUT_S)
            .json()
            .get("data")
        ),
        120,
    )
    return root


def test_a_span_phoenix_never_stored_costs_only_its_own_annotations(phoenix):
    """Phoenix refuses a whole request (404) when any one span in it is unknown: a batch that
    mixes a span it never got (not exported there, sampled out) with ones it has still writes
    those, on export and live."""
    from collections import Counter

    from tracegrade.traces.phoenix import PhoenixAnnotator, annotate_spans

    missing = "e" * 16  # never sent to Phoenix
    stored = _in_phoenix(phoenix, "d" * 32)
    batch = [_annotation(span, name) for span in (stored, missing) for name in ("a", "b")]
    report = annotate_spans(phoenix, batch, settle_s=3.0)
    assert (report.written, report.failed) == (2, 2), report
    assert missing in (report.first_failure or "")
    assert {a["name"] for a in _annotations(phoenix, [stored])} == {"a", "b"}

    live = _in_phoenix(phoenix, "f" * 32)
    counts: Counter[str] = Counter()

    async def annotate() -> None:
        import asyncio

        annotator = PhoenixAnnotator(phoenix, counts, settle_s=3.0)
        annotator.offer([_annotation(span, name) for span in (missing, live) for name in "cd"])
        running = asyncio.create_task(annotator.run())
        await annotator.drain(120)
        running.cancel()

    import asyncio

    asyncio.run(annotate())
    assert (counts["annotations_written"], counts["annotations_failed"]) == (2, 2), counts
    assert not counts["annotations_dropped"]
    assert {a["name"] for a in _annotations(phoenix, [live])} == {"c", "d"}
