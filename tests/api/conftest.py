"""Fixtures of the HTTP API tests: a real uvicorn server in a thread over a real SQLite
store, and httpx clients holding API keys (made with ``Memory.create_key``, as setup;
everything a test checks goes over HTTP)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from api_helpers import Clients, client, open_memory

from memledger import Memory
from memledger.api import create_app
from memledger.testing import FrozenClock
from memledger.testing.http import serve
from memledger.testing.scenarios import FAMILY, SUBJECT, TENANT, day


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(day(10, 1))


@pytest.fixture
def memory(tmp_path: Path, clock: FrozenClock) -> Iterator[Memory]:
    with open_memory(tmp_path / "memledger.db", clock) as opened:
        yield opened


@pytest.fixture
def base_url(memory: Memory) -> Iterator[str]:
    with serve(create_app(memory)) as url:
        yield url


@pytest.fixture
def clients(memory: Memory, base_url: str) -> Iterator[Clients]:
    def key(tenant: str, actor: str, **options: object) -> str:
        _, token = memory.create_key(tenant, actor, **options)  # type: ignore[arg-type]
        return token

    made = Clients(
        admin=client(base_url, key(TENANT, "admin-1", role="admin")),
        writer=client(base_url, key(TENANT, SUBJECT, grants=[FAMILY])),
        ungranted=client(base_url, key(TENANT, SUBJECT)),
        reader=client(base_url, key(TENANT, "auditor", role="read")),
        service=client(base_url, key(TENANT, "account-service", principal="service", grants=["*"])),
        other=client(base_url, key("globex", "admin-g", role="admin", grants=["*"])),
        anonymous=client(base_url),
    )
    yield made
    made.close()
