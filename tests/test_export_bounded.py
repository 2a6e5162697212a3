"""A hung OTLP backend cannot stall CI: `tracegrade export` to a backend that accepts connections
and never answers stops after a few unanswered requests (its breaker) or at its deadline, exits 3
and says what was and was not delivered. The backend is a real server on loopback that accepts
every connection, reads each request and never answers; it counts the requests it got, so the
bound is asserted by count, not by the clock."""

from __future__ import annotations

import selectors
import socket
import threading
from pathlib import Path

import pytest

from tests.otlp_receiver import otlp_receiver  # noqa: F401 (a fixture)
from tests.runs_support import QUESTIONS, write_project
from tracegrade.cli import main


class HungBackend:
    """Accepts connections and reads requests; never writes a byte back.

    One thread owns every socket: it accepts, reads and, when the backend closes, closes them.
    A socket closed under another thread's accept or recv gives its descriptor's number to the
    next socket opened, which that late call then served: under `stress --cpu 6` a backend
    thread lagging from one test took a request of the next test's receiver (a ReadTimeout
    with --timeout 120). The count is read after `settle()`, not while the thread lags."""

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0), backlog=64)
        self._server.setblocking(False)
        self.endpoint = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        self.requests = 0
        self._stop = threading.Event()
        self._pass = threading.Condition()
        self._passes = 0
        self._quiet = -1  # the latest pass that found no connection waiting and none open
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self._server, selectors.EVENT_READ)
        unread: dict[socket.socket, bytes] = {}  # each open connection: what is not yet a head
        try:
            while not self._stop.is_set():
                events = selector.select(timeout=0.05)
                for key, _ in events:
                    if key.fileobj is self._server:
                        try:
                            conn, _ = self._server.accept()
                        except BlockingIOError:
                            continue
                        conn.setblocking(False)
                        selector.register(conn, selectors.EVENT_READ)
                        unread[conn] = b""
                        continue
                    conn = key.fileobj
                    try:
                        chunk = conn.recv(65536)
                    except BlockingIOError:
                        continue
                    except OSError:
                        chunk = b""
                    if chunk:
                        unread[conn] = self._count(unread[conn] + chunk)
                    else:  # the client closed it: every request it sent is counted
                        selector.unregister(conn)
                        conn.close()
                        del unread[conn]
                with self._pass:
                    self._passes += 1
                    if not events and not unread:
                        self._quiet = self._passes
                        self._pass.notify_all()
        finally:
            for conn in unread:
                conn.close()
            selector.close()
            self._server.close()

    def _count(self, seen: bytes) -> bytes:
        while b"\r\n\r\n" in seen:  # one request's head: count it, answer nothing
            head, _, seen = seen.partition(b"\r\n\r\n")
            if head.startswith(b"POST "):
                self.requests += 1
            seen = b""
        return seen

    def settle(self, timeout_s: float = 300) -> int:
        """The requests counted once every connection made before this call was accepted and
        read to its end (the client has closed them all): a pass begun after this call found
        none waiting and none open. Waited on by that condition; generous for a loaded machine."""
        with self._pass:
            after = self._passes + 1  # the pass under way may have begun before this call
            if not self._pass.wait_for(lambda: self._quiet > after, timeout=timeout_s):
                raise AssertionError(f"the hung backend never went quiet in {timeout_s} s")
        return self.requests

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=300)  # its sockets close in that thread, never under a call


@pytest.fixture
def hung():
    backend = HungBackend()
    yield backend
    backend.close()


def _stored_run(tmp_path: Path, capsys) -> Path:
    questions = [{**QUESTIONS["paris"], "id": f"p{i}"} for i in range(6)]
    # concurrency 1: each question is committed, and its spans flushed, on its own (questions
    # finishing together at higher concurrency share one flush), so the file holds several
    # requests for the breaker to stop
    path = write_project(
        tmp_path, questions=[], extra_questions=questions, target={"concurrency": 1}
    )
    assert main(["run", "--config", str(path), "--quiet"]) == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    lines = (run_dir / "traces" / "t.jsonl").read_text().splitlines()
    assert len(lines) >= 4  # one request per question, or near it
    capsys.readouterr()
    return run_dir


def test_a_hung_backend_trips_the_breaker_and_exits_3(tmp_path, hung, capsys):
    run_dir = _stored_run(tmp_path, capsys)
    lines = len((run_dir / "traces" / "t.jsonl").read_text().splitlines())
    argv = ["export", str(run_dir), "--endpoint", hung.endpoint, "--timeout", "0.5"]
    assert main(argv) == 3
    out = capsys.readouterr().out
    assert hung.settle() == 2  # the breaker opened after two unanswered requests
    assert f"0 of {lines} request(s) delivered" in out
    assert "span(s) not delivered: ReadTimeout" in out and "span(s) not sent" in out
    assert "export stopped: gave up after 2 consecutive requests went unanswered" in out


def test_the_whole_export_has_one_deadline(tmp_path, hung, capsys):
    run_dir = _stored_run(tmp_path, capsys)
    argv = ["export", str(run_dir), "--endpoint", hung.endpoint]
    assert main([*argv, "--timeout", "1", "--deadline", "1.5", "--breaker", "100"]) == 3
    out = capsys.readouterr().out
    assert 1 <= hung.settle() <= 2  # 1 s, then what is left of 1.5 s; then nothing more
    assert "export stopped: the export's deadline of 1.5 s passed" in out


def test_a_backend_that_answers_gets_everything(tmp_path, otlp_receiver, capsys):  # noqa: F811
    run_dir = _stored_run(tmp_path, capsys)
    lines = len((run_dir / "traces" / "t.jsonl").read_text().splitlines())
    # generous bounds: this test is about delivery, and under `stress --cpu 6` one request to
    # the loopback receiver took past the default 10 s
    argv = ["export", str(run_dir), "--endpoint", otlp_receiver.endpoint]
    code = main([*argv, "--timeout", "120", "--deadline", "600"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"{lines} of {lines} request(s) delivered" in out and "not sent" not in out
