"""The Swagger page at ``/docs`` loads nothing from another host: its script,
stylesheet and icon are served by the app under ``/docs/assets/``, also when the app
is mounted under a prefix. ``/redoc`` redirects to it; ``docs=False`` serves neither."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from memledger import Memory
from memledger.api import create_app
from memledger.testing.http import serve

CONTENT_TYPES = {
    ".js": ("text/javascript", "application/javascript"),
    ".css": ("text/css",),
    ".png": ("image/png",),
}


class Links(HTMLParser):
    """The ``src`` and ``href`` of every element of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [value for name, value in attrs if name in {"src", "href"} and value]


def page_urls(html: str) -> tuple[list[str], str]:
    """The asset URLs of the Swagger page and the OpenAPI URL it loads."""
    links = Links()
    links.feed(html)
    spec = re.search(r"url: '([^']+)'", html)
    assert spec is not None, html
    return links.urls, spec.group(1)


def check_page(base_url: str, prefix: str = "") -> None:
    with httpx.Client(base_url=base_url, trust_env=False, timeout=30) as http:
        page = http.get(f"{prefix}/docs")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert re.search(r"(?i)https?:|//[a-z0-9]", page.text) is None, page.text
        assets, spec = page_urls(page.text)
        assert sorted(Path(url).suffix for url in assets) == [".css", ".js", ".png"]
        for url in assets:
            assert url.startswith(f"{prefix}/docs/assets/"), url
            answer = http.get(url)
            assert answer.status_code == 200, url
            media = answer.headers["content-type"].split(";")[0]
            assert media in CONTENT_TYPES[Path(url).suffix], (url, media)
            assert len(answer.content) > 1000, url
        assert spec == f"{prefix}/openapi.json"
        document = http.get(spec)
        assert document.status_code == 200
        assert document.json()["info"]["title"] == "memledger"


def test_docs_page_loads_only_its_own_assets(base_url: str) -> None:
    check_page(base_url)


@pytest.fixture
def mounted_url(memory: Memory) -> Iterator[str]:
    with serve(Starlette(routes=[Mount("/memory", app=create_app(memory))])) as url:
        yield url


def test_docs_page_under_a_prefix(mounted_url: str) -> None:
    check_page(mounted_url, "/memory")
    with httpx.Client(base_url=mounted_url, trust_env=False) as http:
        moved = http.get("/memory/redoc")
        assert moved.status_code == 307
        assert moved.headers["location"] == "/memory/docs"


def test_redoc_redirects_to_the_docs(base_url: str) -> None:
    with httpx.Client(base_url=base_url, trust_env=False) as http:
        moved = http.get("/redoc")
        assert moved.status_code == 307
        assert moved.headers["location"] == "/docs"
        assert http.get("/redoc", follow_redirects=True).url.path == "/docs"


def test_missing_asset_is_a_problem(base_url: str) -> None:
    answer = httpx.get(f"{base_url}/docs/assets/missing.js", trust_env=False)
    assert answer.status_code == 404
    assert answer.headers["content-type"] == "application/problem+json"


def test_docs_can_be_off(memory: Memory) -> None:
    with serve(create_app(memory, docs=False)) as url:
        for path in ("/docs", "/docs/assets/swagger-ui.css", "/redoc"):
            assert httpx.get(f"{url}{path}", trust_env=False).status_code == 404, path
        assert httpx.get(f"{url}/openapi.json", trust_env=False).status_code == 200
