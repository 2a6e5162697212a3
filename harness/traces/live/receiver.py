"""`tracegrade receive`: an OTLP/HTTP trace receiver that grades each agent trace as it
completes, into a monitor run (`monitor.Monitor`).

One process, one event loop: uvicorn serves `POST /v1/traces` (decoded and answered as
`ingest` says), the spans go to an `assembly.Assembler`, and a ticker hands each complete
trace to the monitor to grade, yielding to the server between traces and committing the graded
ones together (a batch, one transaction: up to `batch` traces). With `forward`, every
request received is posted to another OTLP endpoint (`forwarding.Forwarder`), a trace's root
span with its grades as `gen_ai.evaluation.result` events when they come within
`forward_wait_s`: a slow or failing endpoint costs forwards (counted), never receiving.

A stop (SIGINT, SIGTERM, the window's end, `stop()`) first lets the server finish the requests
it is answering and close, and the ticker its batch, then grades every trace whose root span
arrived (the quiet period is not waited for), persists the traces still waiting for their root
to the run directory, gives the forwarder a few seconds to drain, and decides the run's verdict (`outcome`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..grade import COMMIT_BATCH
from ..grading_workers import GradingPool, WorkerSpec
from ..phoenix import PhoenixAnnotator
from .alerts import Alerts, alerts_config
from .assembly import Assembler, Limits, sampled
from .forwarding import Forwarder
from .ingest import (
    MAX_BODY_BYTES,
    BadRequest,
    decode_request,
    error_body,
    inflate,
    media_type,
    success_body,
)
from .monitor import Monitor

__all__ = ["Receiver", "ReceiverOptions", "bind"]

log = logging.getLogger(__name__)

TOKEN_ENV = "TRACEGRADE_RECEIVE_TOKEN"
_HELD_ROOTS = 100_000
"""Root span ids kept for the conversations still open (to annotate when graded); past it the
oldest is forgotten (a conversation that paired with no question is never graded)."""
_PRELOAD = [
    "tracegrade.traces.grading_workers",
    "tracegrade.traces.live.monitor",
    "tracegrade.traces.live.alerts",
    "tracegrade.execution.run.stored_preload",
]
"""What the grading workers import and build before their first trace, loaded once in their
fork server (not the run's agent workers'): each worker imported the monitor and compiled the
dataset's validator itself (the summed PSS of an idle `receive --workers 2`: 219 MB)."""


@dataclass(slots=True)
class ReceiverOptions:
    token: str | None = None
    limits: Limits = field(default_factory=Limits)
    forward: str | None = None
    forward_queue: int = 1_000
    forward_timeout_s: float = 10.0
    forward_wait_s: float = 10.0
    """How long a request holding a trace's root span waits for its grade before it is
    forwarded ungraded (`forwarding`); 0 forwards every request at once, unchanged."""
    annotate: str | None = None
    """Phoenix's base URL: each grade written there as a span annotation (`phoenix`)."""
    annotate_headers: dict[str, str] = field(default_factory=dict)
    annotate_settle_s: float = 20.0
    """How long an annotation for a span Phoenix has not stored yet (404) is tried again: a
    busy Phoenix stores spans late."""
    max_body: int = MAX_BODY_BYTES
    window_s: float | None = None
    tick_s: float = 0.2
    checkpoint_s: float = 1.0
    drain_s: float = 5.0
    batch: int = COMMIT_BATCH
    """The most graded traces committed in one transaction: a kill -9 loses at most these."""
    batch_s: float = 1.0
    """A batch is committed once its first trace has waited this long (slow graders)."""
    workers: int = 0
    """Grading processes (`grading_workers`); 0 grades in the receiver's own process."""


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port): bound before any run directory is made, so a port
    in use is an error with nothing left behind. Port 0 picks a free one."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.setblocking(False)
    return sock


class _Server:
    """uvicorn's server, taking SIGINT/SIGTERM as a request to stop (and remembering which)
    without raising the signal again once stopped: the receiver decides what happens next."""

    def __new__(cls, config: Any) -> Any:
        import uvicorn

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                if threading.current_thread() is not threading.main_thread():
                    yield
                    return
                handled = (signal.SIGINT, signal.SIGTERM)
                previous = {s: signal.signal(s, self.handle_exit) for s in handled}
                try:
                    yield
                finally:
                    for s, handler in previous.items():
                        signal.signal(s, handler)

        return Server(config)


class Receiver:
    """Serves OTLP/HTTP on `sock` and grades into `monitor` until stopped (`run`)."""

    def __init__(
        self,
        monitor: Monitor,
        sock: socket.socket,
        options: ReceiverOptions | None = None,
        *,
        announce: Callable[[str], None] = print,
    ) -> None:
        self.monitor = monitor
        self.sock = sock
        self.options = options or ReceiverOptions()
        self.announce = announce
        self.assembler = Assembler(self.options.limits)
        self.counts = self.assembler.counts
        self.port: int = sock.getsockname()[1]
        self.started = threading.Event()
        self.outcome: Any = None
        self.stopped_by: str | None = None
        self.grading_failed: list[str] = []
        self._server: Any = None
        self._forwarder: Forwarder | None = None
        self._annotator: PhoenixAnnotator | None = None
        self._annotating: asyncio.Task[None] | None = None
        self._roots: dict[str, str] = {}
        """trace id -> root span id of the traces held for their conversation (annotated
        when it is graded)."""
        self.pool: GradingPool | None = None
        settings = alerts_config((getattr(monitor.config, "data", None) or {}).get("alerts"))
        self.alerts = (
            Alerts(settings, self.counts, run_id=monitor.run_id) if settings is not None else None
        )

    # -- the endpoint -----------------------------------------------------------------------
    def app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.routing import Route

        return Starlette(
            routes=[
                Route("/v1/traces", self._traces, methods=["POST"]),
                Route("/status", self._status, methods=["GET"]),
            ]
        )

    def status(self) -> dict[str, Any]:
        """What the receiver holds and has done: its counts, the traces held (waiting for
        their root or their quiet period) and ready to grade, and the traces graded."""
        assembler = self.assembler
        graded = sum(c.get("graded", 0) for c in self.monitor.rollups.values())
        return {
            "run_id": self.monitor.run_id,
            "counts": dict(self.counts),
            "traces_held": len(assembler.held),
            "traces_ready": len(assembler.ready),
            "spans_held": assembler.spans_held,
            "bytes_held": assembler.bytes_held,
            "traces_graded": graded,
            "workers": [w.process.pid for w in self.pool.workers] if self.pool else [],
        }

    async def _status(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        if not self._authorized(request.headers.get("authorization")):
            return JSONResponse({"message": "a bearer token is required"}, 401)
        return JSONResponse(self.status())

    def _authorized(self, header: str | None) -> bool:
        token = self.options.token
        if not token:
            return True
        scheme, _, given = (header or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token)

    async def _body(self, request: Any) -> bytes:
        limit = self.options.max_body
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > limit:
            raise BadRequest(413, f"the body is larger than {limit} bytes")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise BadRequest(413, f"the body is larger than {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    async def _traces(self, request: Any) -> Any:
        from starlette.responses import Response

        kind: str | None = None
        try:
            if not self._authorized(request.headers.get("authorization")):
                self.counts["requests_unauthorized"] += 1
                data, media = error_body(None, 401, "a bearer token is required")
                return Response(data, 401, media_type=media, headers={"www-authenticate": "Bearer"})
            kind = media_type(request.headers.get("content-type"))
            raw = await self._body(request)
            encoding = request.headers.get("content-encoding")
            body = inflate(raw, encoding, limit=self.options.max_body)
            spans = decode_request(body, kind)
        except BadRequest as exc:
            self.counts["requests_refused"] += 1
            data, media = error_body(kind, exc.status, exc.message)
            return Response(data, exc.status, media_type=media)
        except Exception as exc:  # isolation point: a bug here is the sender's 500, logged
            log.exception("receiving a request failed")
            self.counts["requests_failed"] += 1
            data, media = error_body(kind, 500, f"the receiver failed: {type(exc).__name__}")
            return Response(data, 500, media_type=media)
        self.counts["requests"] += 1
        refused = self.assembler.add(spans)
        if self._forwarder is not None:
            headers = {"content-type": request.headers.get("content-type", kind)}
            if encoding:
                headers["content-encoding"] = encoding
            rate = self.options.limits.sample
            roots = [
                s.trace_id
                for s in spans
                if not s.parent_id
                and sampled(s.trace_id, rate)
                and self.assembler.finished.get(s.trace_id) is None
            ]
            self._forwarder.offer(raw, headers, body=body, kind=kind, roots=roots)
        message = ""
        if refused:
            limits = self.options.limits
            message = (
                f"{refused} span(s) refused: the receiver holds at most {limits.max_traces} "
                f"traces, {limits.max_spans} spans ({limits.max_bytes // 2**20} MB), "
                f"{limits.max_spans_per_trace} per trace"
            )
        return Response(success_body(kind, rejected=refused, message=message), media_type=kind)

    # -- running ----------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask the receiver to stop (from any thread)."""
        if self._server is not None:
            self._server.should_exit = True

    def run(self) -> Any:
        """Serve until stopped; returns the monitor run's outcome (also `self.outcome`)."""
        asyncio.run(self._main())
        return self.outcome

    async def _main(self) -> None:
        import uvicorn

        pending = self.monitor.start()
        self.assembler.remember(self.monitor.graded_ids)
        for trace in pending:
            self.assembler.add(trace)
        self.counts["spans_received"] -= sum(len(t) for t in pending)  # counted when received
        if self.options.workers > 0:
            self.pool = self._pool(self.options.workers)
            self.pool.attach()
            try:
                await self.pool.started()
            except BaseException:
                self.pool.close()
                self.monitor.close()
                raise
        config = uvicorn.Config(
            self.app(),
            log_level="warning",
            lifespan="off",
            timeout_graceful_shutdown=10,
            access_log=False,
        )
        self._server = server = _Server(config)
        ticking = asyncio.create_task(self._tick(server))
        tasks = []
        if self.options.forward:
            self._forwarder = Forwarder(
                self.options.forward,
                self.counts,
                queue_size=self.options.forward_queue,
                timeout_s=self.options.forward_timeout_s,
                wait_s=self.options.forward_wait_s,
            )
            self._forwarder.start()
        if self.options.window_s is not None:
            tasks.append(asyncio.create_task(self._window(server, self.options.window_s)))
        if self.options.annotate:
            self._annotator = PhoenixAnnotator(
                self.options.annotate,
                self.counts,
                headers=self.options.annotate_headers,
                settle_s=self.options.annotate_settle_s,
            )
            self._annotating = asyncio.create_task(self._annotator.run())
        delivering = asyncio.create_task(self.alerts.deliver()) if self.alerts else None
        try:
            self.announce(f"listening on {self._where()}/v1/traces; run {self.monitor.run_dir}")
            self.started.set()
            await server.serve(sockets=[self.sock])
        finally:
            self.stopped_by = _signal_name(getattr(server, "_captured_signals", []))
            server.should_exit = True
            await ticking  # it ends its batch (never cancelled half way through a trace)
            if delivering is not None and self.alerts is not None:
                await self.alerts.drain(self.options.drain_s)
                tasks.append(delivering)
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            try:
                await self._finish()
            finally:
                if self.pool is not None:
                    self.pool.close()

    def _where(self) -> str:
        host = self.sock.getsockname()[0]
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    async def _window(self, server: Any, seconds: float) -> None:
        await asyncio.sleep(seconds)
        server.should_exit = True

    async def _tick(self, server: Any) -> None:
        loop = asyncio.get_running_loop()
        last = loop.time()
        while not server.should_exit:
            await asyncio.sleep(self.options.tick_s)
            await self._grade_ready(force=False)
            if self._forwarder is not None:
                self._forwarder.release()
            if self.alerts is not None:
                self.alerts.check()
            if loop.time() - last >= self.options.checkpoint_s:
                last = loop.time()
                self._checkpoint()

    def _pool(self, workers: int) -> GradingPool:
        monitor, options = self.monitor, self.options
        book = monitor.conversations
        specs = [
            WorkerSpec(
                config_path=str(monitor.config.path),
                target=monitor.target,
                run_dir=str(monitor.run_dir),
                use_cache=monitor.use_cache,
                sample=monitor.sample,
                policy=monitor.policy,
                conversations=(
                    None
                    if book is None
                    else (book.quiet_s, -(-book.max_open // workers), book.max_turns)
                ),
                index=k,
                part=f"w{k}",
                batch=options.batch,
                batch_s=options.batch_s,
                tick_s=options.tick_s,
                verdicts=bool(options.forward or options.annotate),
            )
            for k in range(workers)
        ]
        return GradingPool(
            specs,
            on_report=self._reported,
            on_failed=self._failed,
            on_room=self._route,
            by_conversation=book is not None,
            preload=_PRELOAD,
        )

    def _reported(self, rollups: dict, listed: dict, runs: int, seen: list, verdicts: list) -> None:
        """A grading worker committed a batch: what it graded joins the run's rollups, and
        each trace's grades go where they are wanted (`verdicts`: trace id, root span id,
        evaluations or None, held for its conversation)."""
        self.monitor.absorb(rollups, listed, runs)
        if self.alerts is not None:
            for figures in seen:
                self.alerts.observe_seen(*figures)
        for trace_id, root, evaluations, held in verdicts:
            self._resolved(trace_id, evaluations, root, held=held)

    def _route(self) -> bool:
        """The complete traces sent to the grading workers while they have room; True when
        none is left waiting."""
        assert self.pool is not None
        return self.pool.take(self.assembler.ready, self.assembler.pop_ready)

    async def _grade_ready(self, *, force: bool) -> None:
        """Grade the complete traces, committed in batches (`options.batch` traces, or what
        was graded in `options.batch_s`): a batch is committed however this ends, a
        cancellation included. With grading workers, they are sent to them (every one of
        them with `force`, waiting for room)."""
        loop = asyncio.get_running_loop()
        self.assembler.collect(force=force)
        if self.pool is not None:
            while not self._route() and force:
                await asyncio.sleep(0.02)
            return
        batch: list[tuple[str, int]] = []  # (trace id, spans) graded, not committed yet
        started = loop.time()
        try:
            while (item := self.assembler.pop_ready()) is not None:
                trace_id, spans = item
                try:
                    score = await self.monitor.grade(trace_id, spans)
                    if score is not None:
                        batch.append((trace_id, len(spans)))
                        if self.alerts is not None:
                            self.alerts.observe(score)
                    self._graded(trace_id, score, _root_of(spans))
                except Exception:  # isolation point: a trace's failure is counted, not the server's
                    log.exception("grading trace %s failed", trace_id)
                    self._failed(trace_id, len(spans))
                if (
                    len(batch) >= self.options.batch
                    or loop.time() - started >= self.options.batch_s
                ):
                    done, batch, started = batch, [], loop.time()
                    self._commit(done)
                await asyncio.sleep(0)  # the server answers between two traces
            for score in await self.monitor.grade_conversations(force=force):
                batch.append((score.trace_id or "", 0))
                if self.alerts is not None:
                    self.alerts.observe(score)
                tid = score.trace_id or ""
                self._graded(tid, score, self._roots.pop(tid, None))
                for turn in self.monitor.members(tid)[1:]:  # graded within the conversation
                    self._roots.pop(turn, None)
                    if (forwarder := self.forwarder_of(turn)) is not None:
                        forwarder.resolve(turn, [])
        finally:
            self._commit(batch)

    def _graded(self, trace_id: str, score: Any, root: str | None) -> None:
        """A trace's grades to the forwarder (none when it will get none: not an agent trace,
        no question; a trace held for its conversation is not done yet) and to Phoenix."""
        if score is None:
            self._resolved(trace_id, None, root, held=self.monitor.holds(trace_id))
        elif self.wants_verdicts(trace_id, root):
            from ...rundir.evaluations import evaluations_of

            self._resolved(trace_id, evaluations_of([score]), root)

    def wants_verdicts(self, trace_id: str, root: str | None) -> bool:
        """Whether a trace's grades go anywhere (the forwarder holds it, Phoenix is written)."""
        return self.forwarder_of(trace_id) is not None or (
            self._annotator is not None and bool(root)
        )

    def _resolved(
        self, trace_id: str, evaluations: list | None, root: str | None, *, held: bool = False
    ) -> None:
        """A trace's grades (`evaluations`; None: it gets none, or not yet when `held` for its
        conversation) to the forwarder and to Phoenix."""
        forwarder = self.forwarder_of(trace_id)
        if evaluations is None:
            if held:
                if root and self._annotator is not None:
                    if len(self._roots) >= _HELD_ROOTS:  # a conversation no question took
                        self._roots.pop(next(iter(self._roots)))
                    self._roots[trace_id] = root
            elif forwarder is not None:
                forwarder.resolve(trace_id, [])
            return
        if forwarder is None and (self._annotator is None or not root):
            return
        from ...rundir.evaluations import otlp_events, phoenix_annotation

        text = self.monitor.config.redaction.text
        if forwarder is not None:
            events = otlp_events(evaluations, text=text)
            forwarder.resolve(trace_id, events.get(trace_id, []))
        if self._annotator is not None and root:
            self._annotator.offer(
                [phoenix_annotation(e, root, explanation=text(e.explanation)) for e in evaluations]
            )

    def forwarder_of(self, trace_id: str) -> Forwarder | None:
        forwarder = self._forwarder
        return forwarder if forwarder is not None and trace_id in forwarder.waiting else None

    def _commit(self, batch: list[tuple[str, int]]) -> None:
        try:
            self.monitor.commit()
        except Exception:  # isolation point: the batch is lost (counted), never the server
            log.exception("storing %d graded trace(s) failed", len(batch))
            for trace_id, spans in batch:
                self._failed(trace_id, spans)

    def _failed(self, trace_id: str, spans: int) -> None:
        self.counts["grading_failed"] += 1
        self.counts["spans_grading_failed"] += spans
        if len(self.grading_failed) < 20:
            self.grading_failed.append(trace_id)

    def _checkpoint(self) -> None:
        self.monitor.receiver_counts(self.counts)
        self.monitor.note_dropped(self.assembler.dropped_agent_traces)
        self.monitor.checkpoint()

    async def _finish(self) -> None:
        await self._grade_ready(force=True)
        if self.pool is not None:
            await self.pool.stop()
            self.monitor.directory.fold_traces(self.monitor.target)
        unfinished = self.assembler.take_unfinished()
        persisted = self.monitor.persist_pending(unfinished)
        self.counts["spans_pending"] = persisted
        if self._forwarder is not None:
            await self._forwarder.drain(self.options.drain_s)
        if self._annotator is not None and self._annotating is not None:
            await self._annotator.drain(self.options.drain_s)
            self._annotating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._annotating
        self._checkpoint()
        lost = self.counts["agent_spans_dropped"] + self.counts["spans_grading_failed"]
        self.outcome = self.monitor.close(lost_spans=lost)
        if persisted:
            self.outcome.notes.append(
                f"{persisted} span(s) of {len(unfinished)} trace(s) still waiting for their root "
                f"span were kept in {self.monitor.run_dir / 'pending.jsonl'}: receive --run "
                f"{self.monitor.run_id} reads them back"
            )
        if self.pool is not None and self.pool.failures:  # never a pass, lost spans or not
            self.outcome.notes.extend(self.pool.failures)
            self.outcome.extra_exit_codes.append(3)
        if self.grading_failed:
            self.outcome.notes.append(
                f"grading failed for {self.counts['grading_failed']} trace(s): "
                + ", ".join(self.grading_failed)
            )


def _root_of(spans: list[Any]) -> str | None:
    return next((s.span_id for s in spans if not s.parent_id), None)


def _signal_name(captured: list[int]) -> str | None:
    return signal.Signals(captured[0]).name if captured else None
