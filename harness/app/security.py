"""What makes the app safe to leave open on a laptop: a per-process token for every write, a
host check against DNS rebinding, and headers that forbid anything the pages do not need.

The token is printed with the URL (`/?token=...`). Opening that URL stores it in a cookie
(`SameSite=Strict`, so no other site's page ever sends it) and redirects to the plain URL.
A write (any method but GET and HEAD) carries the token in the `X-Tracegrade-Token` header
(the pages' script copies it from the cookie), or in the cookie with an `Origin` of this very
app: a form or script on another site has neither, so it gets 403.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from http.cookies import SimpleCookie
from urllib.parse import urlsplit

from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["COOKIE", "CSP", "HEADER", "SecurityMiddleware", "new_token"]

COOKIE = "tracegrade_token"
HEADER = "x-tracegrade-token"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
"""No inline script or style, nothing from elsewhere: markup an answer smuggles in cannot run."""
_SAFE = {"GET", "HEAD"}
_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]


def new_token() -> str:
    """A fresh token for one server process."""
    return secrets.token_urlsafe(24)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key == name:
            return value.decode("latin-1")
    return None


def _cookie(scope: Scope) -> str | None:
    raw = _header(scope, b"cookie")
    if not raw:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw)
    except Exception:  # a malformed cookie header is no token
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None else None


class SecurityMiddleware:
    """Host check, write token and security headers around the whole app."""

    def __init__(self, app: ASGIApp, *, token: str, hosts: Iterable[str]) -> None:
        self.app = app
        self.token = token
        self.hosts = {h.lower() for h in hosts}

    def _host_ok(self, scope: Scope) -> bool:
        if "*" in self.hosts:
            return True
        host = _header(scope, b"host") or ""
        name = urlsplit(f"//{host}").hostname or ""
        return name.lower() in self.hosts

    def _same_origin(self, scope: Scope) -> bool:
        origin = _header(scope, b"origin")
        host = _header(scope, b"host")
        return bool(origin and host) and urlsplit(origin or "").netloc == host

    def _may_write(self, scope: Scope) -> bool:
        given = _header(scope, HEADER.encode())
        if given is not None:
            return secrets.compare_digest(given.encode(), self.token.encode())
        cookie = _cookie(scope)
        return (
            cookie is not None
            and secrets.compare_digest(cookie.encode(), self.token.encode())
            and self._same_origin(scope)
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                have = {k.lower() for k, _ in message["headers"]}
                message["headers"] = list(message["headers"]) + [
                    (k, v) for k, v in _HEADERS if k not in have
                ]
            await send(message)

        response: Response | None = None
        if not self._host_ok(scope):
            response = PlainTextResponse("unknown host", status_code=421)
        elif scope["method"] not in _SAFE and not self._may_write(scope):
            response = PlainTextResponse(
                "403: this change needs the token tracegrade serve printed with its URL "
                "(open that URL once in this browser)",
                status_code=403,
            )
        elif scope["method"] in _SAFE and _query_token(scope) is not None:
            given = _query_token(scope) or ""
            if secrets.compare_digest(given.encode(), self.token.encode()):
                response = RedirectResponse(scope.get("path") or "/", status_code=303)
                response.set_cookie(COOKIE, self.token, samesite="strict", path="/")
            else:
                response = PlainTextResponse("403: wrong token", status_code=403)
        if response is not None:
            await response(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)


def _query_token(scope: Scope) -> str | None:
    from urllib.parse import parse_qs

    query = parse_qs((scope.get("query_string") or b"").decode("latin-1"))
    values = query.get("token")
    return values[0] if values else None
