"""The Swagger page at ``/docs``, with every file it loads served by the app itself:
Swagger UI's script, stylesheet and icon come from the ``fastapi-offline`` package
(part of the ``server`` extra) under ``/docs/assets/``, so the page works with no
network. ``/redoc``, the other page FastAPI apps often have, redirects here."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.staticfiles import StaticFiles
from starlette.responses import HTMLResponse, RedirectResponse

__all__ = ["ASSETS", "DOCS", "serve_docs"]

DOCS = "/docs"
ASSETS = f"{DOCS}/assets"
"""Where the page's script, stylesheet and icon are served."""


def serve_docs(app: FastAPI) -> None:
    """Add ``/docs``, its assets under :data:`ASSETS`, and ``/redoc`` redirecting to
    ``/docs``. URLs on the page start with the request's ``root_path``, so the page
    works where the app is mounted under a prefix."""

    async def docs(request: Request) -> HTMLResponse:
        root = str(request.scope.get("root_path", "")).rstrip("/")
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS}/favicon.png",
        )

    async def redoc(request: Request) -> RedirectResponse:
        root = str(request.scope.get("root_path", "")).rstrip("/")
        return RedirectResponse(f"{root}{DOCS}")

    app.add_route(DOCS, docs, include_in_schema=False)
    app.add_route("/redoc", redoc, include_in_schema=False)
    app.mount(ASSETS, StaticFiles(packages=[("fastapi_offline", "static")]), name="docs-assets")
