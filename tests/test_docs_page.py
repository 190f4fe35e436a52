"""The Swagger page at ``/docs`` in headless Chromium, against ``memledger serve``'s app
under a real uvicorn server: it lists every operation of ``/openapi.json``, can call
one, and asks nothing of any host but the server. A screenshot goes to
``artifacts/web/docs.png``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from memledger.serve import ServeConfig, build_app
from memledger.testing import FrozenClock
from memledger.testing.http import serve
from web_helpers import ARTIFACTS, NOW, chromium, open_memory

playwright = pytest.importorskip("playwright.sync_api")
expect = playwright.expect

METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    memory = open_memory(tmp_path / "memledger.db", FrozenClock(NOW))
    try:
        with serve(build_app(memory, ServeConfig(mcp=False))) as base:
            yield base
    finally:
        memory.close()


def operations(base: str) -> int:
    document = httpx.get(f"{base}/openapi.json", trust_env=False, timeout=30).json()
    return sum(1 for item in document["paths"].values() for method in item if method in METHODS)


def test_docs_page_lists_the_operations_offline(url: str) -> None:
    expected = operations(url)
    assert expected > 30
    requested: list[str] = []
    failed: list[str] = []
    errors: list[str] = []
    with chromium() as browser:
        context = browser.new_context(base_url=url, viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.on("request", lambda request: requested.append(request.url))
        page.on("requestfailed", lambda request: failed.append(request.url))
        page.on("response", lambda answer: answer.ok or failed.append(answer.url))
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto("/docs")
        blocks = page.locator(".opblock")
        expect(blocks.first).to_be_visible(timeout=15_000)
        assert blocks.count() >= expected
        for summary in ("Ingest one source event", "Add chat messages"):
            expect(page.locator(".opblock-summary-description", has_text=summary)).to_be_visible()

        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=ARTIFACTS / "docs.png")

        health = page.locator("#operations-health-healthz_healthz_get")
        health.locator(".opblock-summary").click()
        health.get_by_role("button", name="Try it out").click()
        health.get_by_role("button", name="Execute").click()
        status = health.locator(".live-responses-table .response-col_status:not(.col_header)")
        expect(status).to_have_text("200")
        context.close()
    assert errors == [], errors
    assert failed == [], failed
    hosts = {urlsplit(each).hostname for each in requested}
    assert hosts == {"127.0.0.1"}, sorted(requested)
    assert any(each.endswith("/docs/assets/swagger-ui-bundle.js") for each in requested)
