"""A real HTTP server on loopback standing in for the GitHub REST API (issue comments) and the
GitLab REST API (merge-request notes), for the sticky-comment tests.

It keeps comments in memory per list path, pages them (`per_page`, `page`), and records every
request with its headers. `status` makes every request answer with that code; `hang_s` makes
every request wait that long before answering (a hung API).
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["ApiServer"]

_GITHUB_ITEM = re.compile(r"^/repos/([^/]+/[^/]+)/issues/comments/(\d+)$")
_GITLAB_ITEM = re.compile(r"^(/projects/[^/]+/merge_requests/\d+/notes)/(\d+)$")


@dataclass
class ApiServer:
    comments: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, str], Any]] = field(default_factory=list)
    status: int | None = None
    hang_s: float = 0.0
    _next_id: int = 100

    def start(self) -> ApiServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, code: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                server.requests.append((method, parts.path, dict(self.headers), body))
                if server.hang_s:
                    time.sleep(server.hang_s)
                if server.status is not None:
                    self._answer(server.status, {"message": "Resource not accessible"})
                    return
                self._answer(*server.route(method, parts.path, parse_qs(parts.query), body))

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_PATCH(self) -> None:
                self._handle("PATCH")

            def do_PUT(self) -> None:
                self._handle("PUT")

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        threading.Thread(target=self._http.serve_forever, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()

    def route(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple:
        github_item, gitlab_item = _GITHUB_ITEM.match(path), _GITLAB_ITEM.match(path)
        if github_item or gitlab_item:
            wanted = int((github_item or gitlab_item).group(2))  # type: ignore[union-attr]
            for items in self.comments.values():
                for item in items:
                    if item["id"] == wanted:
                        item["body"] = body["body"]
                        return 200, item
            return 404, {"message": "Not Found"}
        items = self.comments.setdefault(path, [])
        if method == "GET":
            per_page = int(query.get("per_page", ["30"])[0])
            page = int(query.get("page", ["1"])[0])
            return 200, items[(page - 1) * per_page : page * per_page]
        if method == "POST":
            self._next_id += 1
            item = {"id": self._next_id, "body": body["body"]}
            items.append(item)
            return 201, item
        return 405, {"message": "Method Not Allowed"}
