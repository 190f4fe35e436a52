"""Fixtures of the MCP tests: ``store``, the SQLite file ``mem.db`` in the test's folder,
and ``memory``, a ``Memory`` over it with the index the CLI's ``--embedder hashing``
opens (what a ``memledger mcp`` child started on that file sees)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_helpers import open_memory
from memledger import Memory


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "mem.db"


@pytest.fixture
def memory(store: Path) -> Iterator[Memory]:
    with open_memory(store) as opened:
        yield opened
