"""The short path through the Python clients, against a real server: ``add``,
``search``, ``get_all``, ``delete`` and ``history(memory_id)``, the same on
:class:`Client` and :class:`AsyncClient`."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memledger import Memory
from memledger.client import AsyncClient, Client
from memledger.errors import InvalidEventError, InvalidQueryError, MemoryNotFoundError
from memledger.index.derived import DerivedIndex
from memledger.index.embedders import HashingEmbedder
from memledger.serve import ServeConfig, build_app
from memledger.testing import FrozenClock
from memledger.testing.http import serve

CHAT = [
    {"role": "user", "content": "I love spicy ramen."},
    {"role": "assistant", "content": "Noted!"},
    {"role": "user", "content": "I live in Lisbon."},
]


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    index = DerivedIndex(tmp_path / "m.index", embedder=HashingEmbedder())
    clock = FrozenClock(datetime(2026, 10, 1, 9, tzinfo=UTC))
    with Memory.open(tmp_path / "m.db", clock=clock, index=index) as opened:
        yield opened


@pytest.fixture
def served(memory: Memory, no_proxies: None) -> Iterator[tuple[str, str]]:
    _, token = memory.create_key("default", "chat-app", principal="service")
    with serve(build_app(memory, ServeConfig(mcp=False, web=False))) as url:
        yield url, token


def test_the_client_adds_searches_lists_and_deletes(served: tuple[str, str]) -> None:
    with Client(*served) as client:
        added = client.add(CHAT, user_id="alice", session="s1")
        assert len(added.event_ids) == 3 and not added.duplicate
        assert client.add(CHAT, user_id="alice", session="s1").duplicate
        found = client.search("where does alice live?", user_id="alice", k=3)
        assert found[0].memory == "Lives in Lisbon" and found[0].relevant
        assert found[0].score is not None and found[0].user_id == "alice"
        listed = client.get_all(user_id="alice")
        assert {m.id for m in listed} == {m.id for m in added.memories}
        city = next(m for m in listed if m.family == "home_city")
        assert [c.action for c in client.history(city.id)] == ["recorded"]
        receipt = client.delete(city.id)
        assert city.id in receipt.revoked and receipt.reason == "deleted"
        assert city.id not in {m.id for m in client.get_all(user_id="alice")}
        assert [c.action for c in client.history(city.id)] == ["recorded", "revoked"]
        # a family's history is still history(subject, family)
        assert [r.value for r in client.history("alice", "home_city", include_revoked=False)] == []
        with pytest.raises(MemoryNotFoundError):
            client.delete("mem-missing")
        with pytest.raises(InvalidEventError, match=r"messages\[0\]\.role"):
            client.add([{"role": "narrator", "content": "x"}], user_id="alice")
        with pytest.raises(InvalidQueryError, match="include_revoked"):
            client.history(city.id, include_revoked=True)
        with pytest.raises(InvalidQueryError, match="timezone-aware"):
            client.add("hi", user_id="alice", at=datetime(2026, 1, 1))


def test_the_async_client_has_the_same_short_path(served: tuple[str, str]) -> None:
    async def story() -> tuple[int, str, int]:
        async with AsyncClient(*served) as client:
            added = await client.add("I live in Porto.", user_id="bob", wait=False)
            assert added.pending == added.event_ids
            await client.process()
            found = await client.search("where does bob live?", user_id="bob")
            listed = await client.get_all(user_id="bob", limit=1)
            return len(added.event_ids), found[0].memory, len(listed)

    assert asyncio.run(story()) == (1, "Lives in Porto", 1)
