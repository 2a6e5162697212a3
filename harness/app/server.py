"""The app itself: routes, the objects they share, and `serve()` (uvicorn on 127.0.0.1).

Every path parameter is an id looked up where it lives (a run in the run index, a dataset in
the store, a question in its dataset): a name that is not there is 404, whatever it holds.
Handlers are plain functions Starlette runs in its thread pool (the stores are SQLite).
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..errors import TracegradeError
from ..redaction import DEFAULT_POLICY, RedactionPolicy
from .assets import ASSETS
from .index import RunIndex
from .layout import not_found
from .run_pages import default_baseline, render_compare_page, run_page_parts
from .runs_page import render_runs_page
from .security import SecurityMiddleware, new_token

__all__ = ["AppState", "build_app", "serve"]


@dataclass(slots=True)
class AppState:
    """What every handler reads: where runs and datasets live, and the config's options."""

    runs_dir: Path
    store_path: Path
    config: Any = None
    """The loaded config (checklists, the HTML report's options), None without one."""
    token: str = field(default_factory=new_token)
    author: str = ""
    """Who the app's decisions are recorded as (`--by`, $TRACEGRADE_USER, the login name)."""
    index: RunIndex = field(init=False)

    def __post_init__(self) -> None:
        self.index = RunIndex(self.runs_dir)
        if not self.author:
            self.author = _user()

    @property
    def redaction(self) -> RedactionPolicy:
        return getattr(self.config, "redaction", None) or DEFAULT_POLICY

    def report_options(self) -> dict[str, Any]:
        raw = getattr(self.config, "report", None) or {}
        if not isinstance(raw, dict):
            raw = {}
        return {
            "trace_url": raw.get("trace_url"),
            "project": raw.get("project"),
            "redaction": self.redaction,
        }


def _user() -> str:
    try:
        return os.environ.get("TRACEGRADE_USER") or getpass.getuser()
    except Exception:  # no login name (a container): still record something honest
        return "unknown"


def refusal(message: str, *, status: int = 400, problems: list[str] | None = None) -> JSONResponse:
    return JSONResponse({"ok": False, "message": message, "problems": problems or []}, status)


def _error_lines(exc: TracegradeError) -> list[str]:
    """Each problem of an input error, one line each (file, line and key where known)."""
    problems = exc.context.get("problems") if hasattr(exc, "context") else None
    if problems:
        return [str(p) for p in problems]
    return [str(exc)]


def runs_page(request: Request) -> Response:
    state: AppState = request.app.state.tg
    params = {k: v for k, v in request.query_params.items() if isinstance(v, str)}
    return HTMLResponse(render_runs_page(state.index.entries(), params, runs_dir=state.runs_dir))


def run_page(request: Request) -> Response:
    state: AppState = request.app.state.tg
    entry = state.index.get(request.path_params["run_id"])
    if entry is None or entry.outcome is None:
        return not_found(f"no run {request.path_params['run_id']!r} under {state.runs_dir}")
    options = state.report_options()
    # streamed: the summary and the first rows show while the rest is built (in a worker
    # thread: Starlette iterates a plain iterator off the event loop)
    parts = state.index.stream(entry, lambda e: run_page_parts(e, report_options=options))
    return StreamingResponse(parts, media_type="text/html; charset=utf-8")


def compare_page(request: Request) -> Response:
    state: AppState = request.app.state.tg
    entries = state.index.entries()
    by_id = {r.run_id: r for r in entries if r.problem is None}
    base_id, cand_id = request.query_params.get("base"), request.query_params.get("cand")
    for given in (base_id, cand_id):
        if given and given not in by_id:
            return not_found(f"no run {given!r} under {state.runs_dir}")
    cand = by_id.get(cand_id or "")
    base = by_id.get(base_id or "")
    if cand is None and base is None and entries:
        cand = next((r for r in entries if r.problem is None), None)
    if cand is not None and base is None:
        base = default_baseline(entries, cand)
    return HTMLResponse(render_compare_page(entries, base, cand))


def progress(request: Request) -> Response:
    state: AppState = request.app.state.tg
    return JSONResponse(
        {
            r.run_id: {"running": r.running, "done": r.questions, "total": r.selected}
            for r in state.index.entries()
            if r.problem is None
        }
    )


def asset(request: Request) -> Response:
    found = ASSETS.get(request.path_params["name"])
    if found is None:
        return Response("no such asset", status_code=404, media_type="text/plain")
    media, text = found
    return Response(text, media_type=media, headers={"cache-control": "no-cache"})


def _routes() -> list[Route]:
    from .datasets_pages import DATASET_ROUTES
    from .promote_pages import PROMOTE_ROUTES
    from .review_pages import REVIEW_ROUTES

    routes: list[tuple[str, Callable[..., Any], list[str]]] = [
        ("/", runs_page, ["GET"]),
        ("/runs/{run_id}", run_page, ["GET"]),
        ("/compare", compare_page, ["GET"]),
        ("/api/progress", progress, ["GET"]),
        ("/assets/{name}", asset, ["GET"]),
        *REVIEW_ROUTES,
        *DATASET_ROUTES,
        *PROMOTE_ROUTES,
    ]
    return [Route(path, fn, methods=methods) for path, fn, methods in routes]


def build_app(
    state: AppState, *, hosts: tuple[str, ...] = ("127.0.0.1", "localhost", "::1")
) -> Any:
    """The ASGI app over `state`, wrapped in the token, host and header checks."""
    app = Starlette(routes=_routes())
    app.state.tg = state
    return SecurityMiddleware(app, token=state.token, hosts=hosts)


def serve(
    state: AppState,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    announce: Callable[[str], None] = print,
) -> None:
    """Run the app until interrupted; `announce` gets the URL with its token once listening."""
    import uvicorn

    hosts = ("127.0.0.1", "localhost", "::1", host) if host not in ("0.0.0.0", "::") else ("*",)
    config = uvicorn.Config(
        build_app(state, hosts=hosts), host=host, port=port, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    state.index.warm()
    shown = f"[{host}]" if ":" in host else host

    original = server.startup

    async def startup(sockets: Any = None) -> None:
        await original(sockets=sockets)
        bound = port
        for s in server.servers:
            for sock in s.sockets:
                bound = sock.getsockname()[1]
        announce(f"http://{shown}:{bound}/?token={state.token}")

    server.startup = startup  # type: ignore[method-assign]
    server.run()
