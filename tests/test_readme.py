"""The README's Python blocks run as written, and its first screen has the two set-up commands."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_python_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = _blocks("python")
    assert blocks, "the README has no python example"
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, str(README), "exec"), {"__name__": "readme"})
    assert (tmp_path / "example.db").exists()


@pytest.mark.parametrize("page", ["erasure.md", "undo.md", "decay.md", "compaction.md"])
def test_docs_python_blocks_run(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (README.parent / "docs" / page).read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, f"docs/{page} has no python example"
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, page, "exec"), {"__name__": "docs"})


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
