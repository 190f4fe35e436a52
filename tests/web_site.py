"""The web page tests' shared parts: the fixtures ``browser`` (headless Chromium) and
``site`` (the seeded store served by a real uvicorn server, :class:`Site`), a page on it
with its clock at :data:`web_helpers.NOW`, and what the tests do on the page (sign in,
open a subject, save a screenshot)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from memledger import Memory
from memledger.serve import ServeConfig, build_app
from memledger.testing import FrozenClock
from memledger.testing.http import serve
from memledger.testing.scenarios import FAMILY, SUBJECT, TENANT, day
from web_helpers import ARTIFACTS, NOW, chromium, open_memory, seed

playwright = pytest.importorskip("playwright.sync_api")
Browser = playwright.Browser
Page = playwright.Page
expect = playwright.expect
expect.set_options(timeout=10_000)

NOW_Z = "2026-10-28T12:00:00Z"


@dataclass(frozen=True, slots=True)
class Site:
    memory: Memory
    url: str
    admin: str
    """An admin key of ``acme`` (actor ``admin-1``, every grant)."""
    reader: str
    """A read-only key of ``acme``."""

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token or self.admin}"}
        return httpx.Client(base_url=self.url, headers=headers, trust_env=False, timeout=30)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium, one for a test module (a module takes it as ``browser =
    web_site.browser``)."""
    with chromium() as launched:
        yield launched


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    """The seeded store in the test's folder (see :func:`web_helpers.seed`), with an admin
    and a read-only key, under ``memledger serve``'s app (no MCP)."""
    clock = FrozenClock(day(10, 1))
    memory = open_memory(tmp_path / "memledger.db", clock)
    seed(memory, clock)
    _, admin = memory.create_key(TENANT, "admin-1", role="admin", grants=["*"])
    _, reader = memory.create_key(TENANT, "auditor", role="read")
    try:
        with serve(build_app(memory, ServeConfig(mcp=False))) as url:
            yield Site(memory=memory, url=url, admin=admin, reader=reader)
    finally:
        memory.close()


@contextmanager
def opened(browser: Browser, site: Site, *, width: int, height: int) -> Iterator[Page]:
    """A page of a new browser context with a ``width`` x ``height`` window, in light
    colours, its clock fixed at :data:`NOW`; on leaving, no script error may have been
    raised in it."""
    context = browser.new_context(
        base_url=site.url, viewport={"width": width, "height": height}, color_scheme="light"
    )
    page = context.new_page()
    page.clock.set_fixed_time(NOW)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert errors == [], errors


def shot(page: Page, name: str, *, full_page: bool = True) -> None:
    """Save a screenshot: the whole page (scrolled to the top first, so that the sticky
    header sits where it belongs), or what the window shows."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    if full_page:
        page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=ARTIFACTS / f"{name}.png", full_page=full_page)


def sign_in(page: Page, token: str) -> None:
    page.goto("/ui/")
    page.fill("#key", token)
    page.press("#key", "Enter")
    expect(page.locator("#who-text")).to_be_visible()


def open_subject(page: Page, subject: str) -> None:
    page.locator(f"#subject-list a[data-subject='{subject}']").click()
    expect(page.locator("#view h1")).to_have_text(subject)


def family(page: Page, name: str = FAMILY) -> playwright.Locator:
    return page.locator(f"section.family[data-family='{name}']")


def records(site: Site) -> list[dict[str, object]]:
    with site.client() as api:
        found = api.get(f"/v1/subjects/{SUBJECT}/records", params={"valid_at": NOW_Z})
        assert found.status_code == 200, found.text
        return found.json()  # type: ignore[no-any-return]


def daily_id(site: Site) -> str:
    (current,) = records(site)
    assert current["value"] == "daily"
    return str(current["memory_id"])
