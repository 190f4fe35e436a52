"""Fixtures of the HTTP API tests: a real uvicorn server in a thread over a real SQLite
store, and httpx clients holding API keys (made with ``Memory.create_key``, as setup;
everything a test checks goes over HTTP)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from api_helpers import Clients, KeyClient, client, open_memory

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
def key_client(memory: Memory, base_url: str) -> Iterator[KeyClient]:
    """Makes clients holding new keys, and closes them after the test."""
    made: list[httpx.Client] = []

    def key(actor: str, tenant: str = TENANT, **options: object) -> httpx.Client:
        _, token = memory.create_key(tenant, actor, **options)  # type: ignore[arg-type]
        made.append(client(base_url, token))
        return made[-1]

    yield key
    for each in made:
        each.close()


@pytest.fixture
def clients(key_client: KeyClient, base_url: str) -> Iterator[Clients]:
    made = Clients(
        admin=key_client("admin-1", role="admin"),
        writer=key_client(SUBJECT, grants=[FAMILY]),
        ungranted=key_client(SUBJECT),
        reader=key_client("auditor", role="read"),
        service=key_client("account-service", principal="service", grants=["*"]),
        other=key_client("admin-g", "globex", role="admin", grants=["*"]),
        anonymous=client(base_url),
    )
    yield made
    made.close()
