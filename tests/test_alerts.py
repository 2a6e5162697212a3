"""Alerts from `tracegrade receive`: a falling pass rate over the sliding window posts exactly one
JSON message (Slack-compatible) to a loopback webhook, and the cooldown holds however many more
failing traces arrive; a dead webhook is counted, never a stalled receiver; a bad `alerts:` block
is invalid input naming its line and key."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
import yaml

from tests.loopback_timeout import LOOPBACK_TIMEOUT_S
from tests.test_grade_traces import _project
from tests.test_receive import _graded, _trace, _wait_for, receiving
from tracegrade.cli import main
from tracegrade.traces.live.alerts import AlertRule, Alerts, AlertsConfig


class Webhook:
    """A loopback endpoint recording every JSON body posted to it."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                hook.bodies.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/hook"

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def webhook():
    hook = Webhook()
    yield hook
    hook.close()


def _with_alerts(config: Path, block: dict) -> Path:
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["alerts"] = block
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return config


@pytest.mark.parametrize("workers", [0, 2])  # graded in the receiver, or by grading workers
def test_a_falling_pass_rate_posts_one_alert_and_the_cooldown_holds(tmp_path, webhook, workers):
    config = _with_alerts(
        _project(tmp_path / "proj"),
        {
            "webhook": webhook.url,
            "window_s": 600,
            "cooldown_s": 600,
            "min_traces": 4,
            "rules": [{"metric": "pass_rate", "below": 0.75}],
        },
    )
    with receiving(config, workers=workers) as (receiver, url):
        for i in range(4):  # paris looked up as it should: the window passes
            assert (
                httpx.post(
                    url, json=_trace(f"{i + 1:032x}"), timeout=LOOPBACK_TIMEOUT_S
                ).status_code
                == 200
            )
        _wait_for(lambda: _graded(receiver) == 4)
        assert receiver.counts.get("alerts_fired", 0) == 0
        for i in range(4, 12):  # paris answered with the wrong tool: the pass rate falls
            body = _trace(f"{i + 1:032x}", tool="cancel")
            assert httpx.post(url, json=body, timeout=LOOPBACK_TIMEOUT_S).status_code == 200
        _wait_for(lambda: _graded(receiver) == 12 and len(webhook.bodies) == 1)
        _wait_for(lambda: receiver.counts.get("alerts_delivered", 0) == 1)
    assert len(webhook.bodies) == 1  # the cooldown held for every later failing trace
    (alert,) = webhook.bodies
    assert alert["metric"] == "pass_rate" and alert["value"] < 0.75
    assert "pass_rate below 0.75" in alert["text"] and receiver.monitor.run_id in alert["text"]
    assert receiver.counts["alerts_fired"] == 1
    hours = receiver.monitor.rollups.values()
    assert sum(h.get("alerts_delivered", 0) for h in hours) == 1  # kept in the monitor run


def test_a_dead_webhook_is_counted_and_grading_goes_on(tmp_path):
    dead = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    url_dead = f"http://127.0.0.1:{dead.server_address[1]}/hook"
    dead.server_close()
    config = _with_alerts(
        _project(tmp_path / "proj"),
        {
            "webhook": url_dead,
            "min_traces": 1,
            "retries": 1,
            "timeout_s": 1,
            "rules": [{"metric": "errors", "above": -1, "name": "anything graded"}],
        },
    )
    with receiving(config) as (receiver, url):
        assert httpx.post(url, json=_trace("a" * 32), timeout=LOOPBACK_TIMEOUT_S).status_code == 200
        _wait_for(lambda: receiver.counts.get("alerts_failed", 0) == 1)
        assert httpx.post(url, json=_trace("b" * 32), timeout=LOOPBACK_TIMEOUT_S).status_code == 200
        _wait_for(lambda: _graded(receiver) == 2)
    assert receiver.counts["alerts_fired"] == 1


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class _Score:
    def __init__(self, passed: bool) -> None:
        self.passed, self.degraded, self.usage = passed, False, None
        self.errored, self.ended_early, self.over_budget, self.graders = False, False, [], []


def test_the_window_slides_and_a_rule_fires_again_after_its_cooldown(monkeypatch):
    import tracegrade.traces.live.alerts as alerts_module

    monkeypatch.setattr(alerts_module, "question_passed", lambda s: s.passed)
    clock, counts = _Clock(), {}
    alerts = Alerts(
        AlertsConfig(
            webhook="http://127.0.0.1:9/x",
            rules=(AlertRule("pass_rate", below=0.5),),
            window_s=60,
            cooldown_s=100,
            min_traces=2,
        ),
        counts,
        clock=clock,
    )
    for _ in range(3):
        alerts.observe(_Score(False))
    assert len(alerts.check()) == 1 and alerts.check() == []  # fired, then cooling down
    clock.now += 61  # the failures left the window: nothing to read
    assert alerts.figures()["traces"] == 0 and alerts.check() == []
    for _ in range(2):
        alerts.observe(_Score(False))
    clock.now += 40  # 101 s after firing: the cooldown is over, the window still failing
    assert [a["rule"] for a in alerts.check()] == ["pass_rate below 0.5"]
    assert counts["alerts_fired"] == 2


def test_a_bad_alerts_block_is_invalid_input_at_its_line_and_key(tmp_path, capsys):
    config = _with_alerts(
        _project(tmp_path / "proj"),
        {"webhook": "hooks.example/x", "rules": [{"metric": "pass_rate", "below": 0.9}]},
    )
    code = main(["validate", str(config)])
    out = capsys.readouterr()
    text = out.out + out.err
    assert code == 4
    assert "/alerts/webhook" in text and str(config.name) in text
