"""The README: its Python blocks run as written, its first screen has the two set-up
commands, and it stays a short front page over the docs site (the three-line quick
start, the same over HTTP, and a link to every page of ``docs/``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
DOCS = README.parent / "docs"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_python_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = _blocks("python")
    assert blocks, "the README has no python example"
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, str(README), "exec"), {"__name__": "readme"})
    assert (tmp_path / "memledger.db").exists()  # the quick start's Memory()
    assert (tmp_path / "example.db").exists()  # the event API's story


def test_first_screen_has_the_two_setup_commands() -> None:
    first_screen = "\n".join(README.read_text().splitlines()[:30])
    commands = re.findall(r"```sh\n(.*?)```", first_screen, flags=re.S)
    assert [c.strip() for c in commands] == [
        "python3 -m venv .venv && .venv/bin/pip install -e '.[server]'"
        " && .venv/bin/memledger serve",
        "bash scripts/test.sh",
    ]
    ci = (README.parent / ".ci" / "run").read_text()
    assert "bash scripts/test.sh" in ci


def test_the_readme_is_a_short_front_page() -> None:
    assert len(README.read_text().splitlines()) <= 250


def test_the_quick_start_is_three_lines_of_the_short_path() -> None:
    quick = _blocks("python")[0]
    code = [line for line in quick.splitlines() if line.strip()]
    assert code[0] == "from memledger import Memory"
    assert re.match(r"m = Memory\(\)", code[1])
    assert re.match(r'm\.add\(\[\{"role": "user", "content": ".+"\}\], user_id="alice"\)', code[2])
    assert re.search(r'm\.search\(".+", user_id="alice"\)', code[3])
    assert len(code) == 4


def test_the_same_over_http_uses_the_printed_key() -> None:
    (http,) = [block for block in _blocks("sh") if "curl" in block]
    assert "memledger.db.admin-key" in http and "Authorization: Bearer" in http
    for route in ("/v1/memories ", "/v1/memories/search "):
        assert f"localhost:8765{route}" in http


def test_every_link_resolves_and_every_docs_page_is_linked() -> None:
    text = README.read_text()
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not re.match(r"[a-z]+:", t)]
    for target in local:
        assert (README.parent / target).exists(), target
    linked = {(README.parent / t).resolve() for t in local if t.startswith("docs/")}
    pages = {page.resolve() for page in DOCS.rglob("*.md")}
    assert pages - linked == set(), sorted(p.name for p in pages - linked)
    assert "mkdocs serve" in text
