"""The web page to inspect and correct memory: static files, no build step.

:func:`web_app` serves ``static/`` (one HTML page, its ES modules, one style sheet);
``memledger serve`` mounts it at ``/ui/`` beside the HTTP API, which the page calls
from the same origin (``/v1/...``) with the API key the person types in. The page
holds no data of its own and no secret beyond that key, kept in the tab's
``sessionStorage``.

Every answer carries a strict Content-Security-Policy (scripts, styles and requests of
this origin only; no inline script), so that memory text, which anyone who can write an
event controls, cannot run in the page even if it were ever inserted as markup (the
page builds its DOM with ``textContent``, never from HTML strings).
"""

from __future__ import annotations

from pathlib import Path

from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["STATIC", "web_app"]

STATIC = Path(__file__).with_name("static")
"""Where the page's files are (shipped as package data)."""

HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-cache"),
)


class _Headers:
    """Adds :data:`HEADERS` to every HTTP answer of ``app``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in HEADERS}
                kept = [(n, v) for n, v in message.get("headers", []) if n.lower() not in names]
                message = {**message, "headers": [*kept, *HEADERS]}
            await send(message)

        await self.app(scope, receive, sending)


def web_app() -> ASGIApp:
    """The page as an ASGI app: ``index.html`` at its root, its script and style sheet
    beside it. Mount it under a path of the API's origin (``/ui``)."""
    return _Headers(StaticFiles(directory=STATIC, html=True))
