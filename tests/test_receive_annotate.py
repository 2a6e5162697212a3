"""`receive --annotate phoenix`: each grade written to a real Phoenix on loopback as a span
annotation on the root span it judged, as traces are graded (CODE for graders, LLM for
judges), read back through Phoenix's API; a dead Phoenix costs annotations (counted in the
monitor run), never receiving."""

from __future__ import annotations

import httpx
import pytest

from tests import openai_server as loopback
from tests.phoenix_server import phoenix  # noqa: F401  (the fixture)
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


def _root_id(request: dict) -> str:
    spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    return next(s["spanId"] for s in spans if "parentSpanId" not in s)


@pytest.mark.parametrize("workers", [0, 2])  # graded in the receiver, or by grading workers
def test_each_grade_is_annotated_in_phoenix_as_traces_are_graded(
    tmp_path,
    phoenix,  # noqa: F811
    openai_server,
    workers,
):
    openai_server.default = loopback.score(4, "on topic")
    config = _project(tmp_path, openai_server.base_url)
    requests = {"paris": _trace("a" * 32, "paris"), "rome": _trace("b" * 32, "rome")}
    with receiving(
        config,
        forward=f"{phoenix}/v1/traces",
        forward_wait_s=30.0,
        annotate=phoenix,
        workers=workers,
    ) as (receiver, url):
        for request in requests.values():
            assert httpx.post(url, content=json_to_protobuf(request), headers=PROTO).is_success
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
        assert httpx.post(url, json=_trace("c" * 32, "paris")).is_success
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
