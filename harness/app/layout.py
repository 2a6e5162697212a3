"""The app's document shell: one stylesheet and scripts loaded from the app itself (the
Content-Security-Policy allows nothing inline), a navigation bar, and the escaping helper
every page uses for every value it did not write itself."""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import quote

from starlette.responses import HTMLResponse

__all__ = ["NAV", "e", "not_found", "page", "q", "url"]

NAV = (
    ("runs", "/", "Runs"),
    ("compare", "/compare", "Compare"),
    ("review", "/review", "Review queue"),
    ("datasets", "/datasets", "Datasets"),
)


def e(value: Any) -> str:
    """Escaped text (quotes too: safe in an attribute)."""
    return escape("" if value is None else str(value), quote=True)


def q(value: Any) -> str:
    """A path segment or query value, percent-encoded."""
    return quote(str(value), safe="")


def url(path: str, **params: Any) -> str:
    """`path` with the non-empty `params` as its query, escaped for an attribute."""
    from urllib.parse import urlencode

    query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    return e(f"{path}?{query}" if query else path)


def page(title: str, body: str, *, active: str = "", scripts: tuple[str, ...] = ("app",)) -> str:
    """A whole document: `body` inside the shell, `scripts` (asset names) at its end."""
    nav = "".join(
        f'<a href="{href}"{" aria-current=page" if key == active else ""}>{e(label)}</a>'
        for key, href, label in NAV
    )
    tags = "".join(f'<script src="/assets/{name}.js"></script>' for name in scripts)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)} · tracegrade</title>"
        '<link rel="stylesheet" href="/assets/app.css"></head><body>'
        f'<nav class="appnav" aria-label="tracegrade">{nav}</nav>'
        '<p id="flash" class="flash" role="status" aria-live="polite" hidden></p>'
        f"{body}{tags}</body></html>"
    )


def not_found(what: str) -> HTMLResponse:
    body = f'<main><h1>Not found</h1><p class="advisory">{e(what)}</p></main>'
    return HTMLResponse(page("Not found", body), status_code=404)
