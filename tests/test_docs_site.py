"""The documentation site (``mkdocs.yml`` over ``docs/``): ``mkdocs build --strict``
succeeds and fails on a broken link; the built site asks nothing of another host, in
its markup and in headless Chromium; every page is in the nav; every ``python`` block
of every page runs as written; and neither the pages nor the README tell the
project's development history."""

from __future__ import annotations

import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CONFIG = ROOT / "mkdocs.yml"
PAGES = sorted(DOCS.rglob("*.md"))

RUN_ELSEWHERE = {
    "mem0.md": "tests/api/test_api_mem0.py runs it against a served app, given KEY and URL",
    "postgresql.md": "it opens a PostgreSQL primary and two replicas by their host names",
}
"""Pages whose ``python`` blocks need what a test cannot give as written, and why; their
blocks are still compiled."""


def _python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)


def _name(page: Path) -> str:
    return page.relative_to(DOCS).as_posix()


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``python -m mkdocs build --strict`` of ``config`` into ``site``."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(config),
            "--site-dir",
            str(site),
        ],
        cwd=config.parent,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )


@pytest.fixture(scope="module")
def built(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path_factory.mktemp("site")
    return build(CONFIG, out), out


@pytest.fixture
def site(built: tuple[subprocess.CompletedProcess[str], Path]) -> Path:
    done, out = built
    if done.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed (test_the_site_builds_strict):\n{done.stderr}")
    return out


def test_the_site_builds_strict(built: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    done, site = built
    assert done.returncode == 0, done.stderr
    assert (site / "index.html").exists()
    for page in PAGES:
        built = site / _name(page).removesuffix(".md") / "index.html"
        if page.name == "index.md":
            built = site / _name(page).removesuffix("index.md") / "index.html"
        assert built.exists(), f"docs/{_name(page)} was not built"
    assert (site / "search" / "search_index.json").exists()


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    shutil.copy(CONFIG, tmp_path / "mkdocs.yml")
    shutil.copytree(DOCS, tmp_path / "docs")
    with (tmp_path / "docs" / "concepts.md").open("a", encoding="utf-8") as page:
        page.write("\nSee [the missing page](no-such-page.md).\n")
    done = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-page.md" in done.stderr


FETCHING_TAGS = re.compile(r"<(?:script|link|img|iframe|source|video|audio|embed)\b[^>]*>", re.I)
ADDRESS = re.compile(r"""\b(?:src|href|srcset)\s*=\s*["']?\s*((?:https?:)?//[^"'\s>]*)""", re.I)


def test_the_built_site_asks_no_other_host(site: Path) -> None:
    """Scripts, stylesheets, icons, images and fonts all come from the site itself:
    ``font: false`` keeps Google Fonts out, and links in the text (``<a href>``) are
    the only addresses of other hosts."""
    pages = list(site.rglob("*.html"))
    assert len(pages) >= len(PAGES)
    for page in pages:
        html = page.read_text(encoding="utf-8")
        for tag in FETCHING_TAGS.findall(html):
            assert not ADDRESS.search(tag), f"{page.relative_to(site)}: {tag}"
        assert "fonts.googleapis" not in html and "fonts.gstatic" not in html, page
    for sheet in site.rglob("*.css"):
        css = sheet.read_text(encoding="utf-8")
        assert not re.search(r"""(?:url\(|@import)\s*["']?(?:https?:)?//""", css), sheet
        assert "fonts.googleapis" not in css, sheet
    assert "repo_url" not in CONFIG.read_text(), "repo_url makes the page ask GitHub's API"


class _QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def served(site: Path) -> Iterator[str]:
    handler = partial(_QuietFiles, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_the_site_in_a_browser_asks_no_other_host(served: str) -> None:
    """Chromium opens the home page and the benchmarks page and searches: every request
    goes to the site's own server, and every one is answered."""
    from web_helpers import chromium

    requested: list[str] = []
    failed: list[str] = []
    errors: list[str] = []
    with chromium() as browser:
        context = browser.new_context(base_url=served)
        page = context.new_page()
        page.on("request", lambda request: requested.append(request.url))
        page.on("requestfailed", lambda request: failed.append(request.url))
        page.on("response", lambda a: a.status < 400 or failed.append(f"{a.status} {a.url}"))
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto("/", wait_until="networkidle")
        assert page.locator("h1").first.inner_text().startswith("memledger")
        page.goto("/benchmarks/", wait_until="networkidle")
        page.keyboard.press("/")  # the search box, as a reader opens it
        page.keyboard.type("revocation", delay=20)
        page.locator(".md-search-result__item").first.wait_for(timeout=15_000)
        assert "matching" in page.locator(".md-search-result__meta").inner_text()
        page.wait_for_load_state("networkidle")
        context.close()
    assert errors == [], errors
    assert failed == [], failed
    hosts = {urlsplit(each).hostname for each in requested}
    assert hosts == {"127.0.0.1"}, sorted(requested)


def test_every_page_is_in_the_nav() -> None:
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    assert config["strict"] is True
    assert config["theme"]["font"] is False

    def pages_of(nav: object) -> Iterator[str]:
        if isinstance(nav, str):
            yield nav
        elif isinstance(nav, list):
            for each in nav:
                yield from pages_of(each)
        elif isinstance(nav, dict):
            for each in nav.values():
                yield from pages_of(each)

    in_nav = list(pages_of(config["nav"]))
    assert len(in_nav) == len(set(in_nav)), "a page is in the nav twice"
    assert sorted(in_nav) == sorted(_name(page) for page in PAGES)
    assert in_nav[0] == "index.md"


PAGES_WITH_PYTHON = [page for page in PAGES if _python_blocks(page)]


@pytest.mark.parametrize(
    "page", [p for p in PAGES_WITH_PYTHON if _name(p) not in RUN_ELSEWHERE], ids=_name
)
def test_docs_python_blocks_run(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each page's blocks run in order, in a fresh folder of their own, as written."""
    monkeypatch.chdir(tmp_path)
    for block in _python_blocks(page):
        exec(compile(block, str(page), "exec"), {"__name__": "docs"})


def test_the_pages_not_run_here_still_compile() -> None:
    assert len(PAGES_WITH_PYTHON) >= 15
    for name in RUN_ELSEWHERE:
        blocks = _python_blocks(DOCS / name)
        assert blocks, f"docs/{name} has no python block to leave out"
        for block in blocks:
            compile(block, name, "exec")
    mem0_test = (ROOT / "tests" / "api" / "test_api_mem0.py").read_text(encoding="utf-8")
    assert '"docs" / "mem0.md"' in mem0_test


HISTORY = re.compile(
    r"\bissues? #?\d+"
    r"|\bissue's\b"
    r"|\b(?:first|second|third|fourth|fifth|earlier|later|this) pass(?:es)?\b"
    r"|\bpasses of\b"
    r"|\bthis session\b"
    r"|\bstart of the session\b"
    r"|\bseed \d{3}\b",
    re.I,
)
"""Development history: issue numbers, tuning passes and sessions, the project's seeds.
Commit ids beside benchmark figures ("at d4a2429 on a 2-core ...") say which code was
measured, and stay."""


@pytest.mark.parametrize("path", [ROOT / "README.md", *PAGES], ids=lambda p: p.name)
def test_no_development_history(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    found = [
        f"line {text.count(chr(10), 0, hit.start()) + 1}: {hit.group(0)!r}"
        for hit in HISTORY.finditer(text)
    ]
    assert found == [], f"{path.relative_to(ROOT)} tells history: {found}"


def test_the_history_check_catches_what_it_bans() -> None:
    for told in (
        "before issue 10",
        "the third pass on the weights",
        "| start of the session (d136cd9) | 0.795 |",
        "Earlier passes of the tuning",
    ):
        assert HISTORY.search(told), told
    for product in (
        "at d4a2429 on a 2-core Intel Xeon machine",
        "what passes lends its score to neighbours",
        "the turns of a session",
    ):
        assert not HISTORY.search(product), product
