"""Latency tiers (issue 11, item 7): the hot cache and prepared results never serve a
revoked memory once the revocation is acknowledged; deferred writes; the voice budget."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from hot_helpers import NOW, digest, event
from memledger import InvalidInputError, Memory
from memledger.read.hot import (
    DeferredWriter,
    HotCacheError,
    HotKey,
    HotTier,
    HotValues,
    InProcessHotCache,
    store_name,
    voice_budget,
)
from memledger.store import open_store
from memledger.testing import FrozenClock

ASK = "When should the digest be delivered?"


@pytest.fixture
def memory(backend_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Memory]:
    """On both stores: the hot tiers stamp what they hold with the canonical store's
    revisions, whichever store that is."""
    if backend_url.startswith("postgresql://"):
        monkeypatch.setenv("MEMLEDGER_INDEX_DIR", str(tmp_path))  # the full tier's index
    memory = Memory(open_store(backend_url), clock=FrozenClock(NOW))
    memory.ingest(event(1, "Send me the digest fridays please."), digest("fridays"))
    yield memory
    memory.close()


def values(memory: Memory) -> list[object]:
    found = memory.hot.current(memory.reading, tenant="acme", subject="u1").values
    return [r.value for r in found.get("delivery_preference", ())]


def test_the_hot_cache_reloads_after_every_commit_and_revocation(memory: Memory) -> None:
    assert values(memory) == ["fridays"]
    assert values(memory) == ["fridays"] and memory.hot.stats.hits == 1
    memory.ingest(event(2, "Actually the digest daily."), digest("daily"))
    assert values(memory) == ["daily"]  # the commit moved the family's revision
    (current,) = memory.current("u1", "delivery_preference", tenant="acme")
    memory.revoke(current.memory_id, tenant="acme", reason="asked to forget")
    assert values(memory) == []  # at once: no stale value after the acknowledgement
    assert memory.hot.stats.reloads == 3


def test_a_revoked_preference_never_reaches_a_packet_from_any_tier(memory: Memory) -> None:
    memory.prepare(ASK, tenant="acme", subject="u1")
    for tier in ("full", "prepared", "hot"):
        packet = memory.context(ASK, tenant="acme", subject="u1", budget=800, tier=tier)  # type: ignore[arg-type]
        assert "fridays" in packet.text, tier
    ready = memory.context(ASK, tenant="acme", subject="u1", budget=800, tier="prepared")
    assert any("prepared for" in note for note in ready.notes)
    memory.prepare(ASK, tenant="acme", subject="u1")  # made before the revocation
    (current,) = memory.current("u1", "delivery_preference", tenant="acme")
    memory.revoke(current.memory_id, tenant="acme", reason="asked to forget")
    for tier in ("prepared", "hot", "full"):
        packet = memory.context(ASK, tenant="acme", subject="u1", budget=800, tier=tier)  # type: ignore[arg-type]
        assert "fridays" not in packet.text and current.memory_id not in packet.text, tier
    assert memory.hot.prepared(memory.reading, tenant="acme", subject="u1") is None
    assert memory.hot.stats.prepared_dropped >= 1


def test_a_prepared_result_is_dropped_after_any_commit_of_the_subject(memory: Memory) -> None:
    tier, ports = HotTier(), memory.reading
    tier.keep(
        ports,
        ASK,
        tenant="acme",
        subject="u1",
        recall=lambda: memory.recall(ASK, tenant="acme", subject="u1", touch=False),
    )
    assert tier.prepared(ports, tenant="acme", subject="u1") is not None
    memory.ingest(event(5, "Other talk.", subject="u2"))  # another subject: kept
    assert tier.prepared(ports, tenant="acme", subject="u1") is not None
    memory.ingest(event(6, "The digest mondays now."), digest("mondays"))
    assert tier.prepared(ports, tenant="acme", subject="u1") is None


def test_the_hot_tiers_need_a_subject(memory: Memory) -> None:
    with pytest.raises(InvalidInputError, match="needs a subject"):
        memory.context(ASK, tenant="acme", tier="hot")


def test_deferred_writes_land_after_the_caller_moved_on(memory: Memory) -> None:
    writer = DeferredWriter(memory.ingest)
    for n in range(10, 15):
        writer.submit(event(n, f"Deferred turn number {n}."))
    writer.submit(event(1, "Another text under an event id already used."))  # a conflict
    report = writer.close()
    assert sorted(r.event_id for r in report.done) == [f"e{n}" for n in range(10, 15)]
    assert [event_id for event_id, _ in report.failed] == ["e1"]
    assert all(memory.event(f"e{n}", tenant="acme") for n in range(10, 15))  # stored
    with pytest.raises(InvalidInputError):
        DeferredWriter(memory.ingest).submit("not an event")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("llm", "band", "tiers"),
    [
        (200, "green", ("full", "prepared", "hot")),  # 100 ms left
        (201, "amber", ("prepared", "hot")),
        (250, "amber", ("prepared", "hot")),  # 50 ms left
        (251, "red", ("hot",)),
        (299, "red", ("hot",)),
        (300, "none", ()),  # nothing left
        (900, "none", ()),
    ],
)
def test_the_voice_budget(llm: int, band: str, tiers: tuple[str, ...]) -> None:
    found = voice_budget(800, vad_ms=100, stt_ms=150, llm_first_token_ms=llm, tts_ms=250)
    assert (found.band, found.tiers) == (band, tiers)
    assert found.residual_ms == max(0, 800 - (100 + 150 + llm + 250))
    with pytest.raises(InvalidInputError):
        voice_budget(-1, vad_ms=0, stt_ms=0, llm_first_token_ms=0, tts_ms=0)


def test_the_hot_tier_opens_no_index(tmp_path: Path) -> None:
    """A voice agent's first hot packet must not wait for the index (and its embedding
    model) to load."""
    memory = Memory(open_store(tmp_path / "m.db"), clock=FrozenClock(NOW))
    memory.ingest(event(1, "Send me the digest fridays please."), digest("fridays"))
    packet = memory.context(ASK, tenant="acme", subject="u1", budget=800, tier="hot")
    assert "fridays" in packet.text
    assert memory._index is None
    assert not (tmp_path / "m.db.index").exists()
    memory.close()


# -- where the values live ----------------------------------------------------------------


class _DownCache:
    """A cache whose server is gone: every call fails as a Redis outage would."""

    def __init__(self) -> None:
        self.calls = 0

    def get(self, key: HotKey, /) -> HotValues | None:
        self.calls += 1
        raise HotCacheError("down")

    def put(self, key: HotKey, values: HotValues, /) -> None:
        self.calls += 1
        raise HotCacheError("down")

    def delete(self, key: HotKey, /) -> None:
        self.calls += 1
        raise HotCacheError("down")


def test_a_failing_cache_never_fails_or_falsifies_a_read(memory: Memory) -> None:
    down = _DownCache()
    memory.hot = HotTier(cache=down)
    assert values(memory) == ["fridays"]
    (current,) = memory.current("u1", "delivery_preference", tenant="acme")
    memory.revoke(current.memory_id, tenant="acme", reason="asked to forget")
    assert values(memory) == []
    assert memory.hot.stats.fallbacks == 2 and memory.hot.stats.reloads == 2
    assert down.calls == 2  # no write-back to a cache that just failed
    memory.hot.invalidate("acme", "u1")  # swallowed, counted
    assert memory.hot.stats.cache_errors == 3 and memory.hot.stats.hits == 0


def test_the_in_process_cache_drops_the_least_recently_used(memory: Memory) -> None:
    memory.ingest(event(2, "Hello from u2.", subject="u2"))
    memory.ingest(event(3, "Hello from u3.", subject="u3"))
    cache = InProcessHotCache(capacity=2)
    memory.hot = HotTier(cache=cache)
    for subject in ("u1", "u2", "u1", "u3"):  # u2 is the least recently used at u3
        memory.hot.current(memory.reading, tenant="acme", subject=subject)
    assert len(cache) == 2 and memory.hot.stats.hits == 1
    memory.hot.current(memory.reading, tenant="acme", subject="u1")
    assert memory.hot.stats.hits == 2  # u1 was kept
    memory.hot.current(memory.reading, tenant="acme", subject="u2")
    assert memory.hot.stats.hits == 2  # u2 was dropped
    with pytest.raises(InvalidInputError, match="capacity"):
        InProcessHotCache(capacity=0)
    with pytest.raises(InvalidInputError, match="capacity"):
        HotTier(capacity=0)
    with pytest.raises(InvalidInputError, match="capacity sizes"):
        HotTier(cache=cache, capacity=5)
    with pytest.raises(InvalidInputError, match="HotTier"):
        Memory(memory.store, hot=cache)  # type: ignore[arg-type]


def test_a_value_leaves_the_hot_cache_when_its_valid_time_ends(tmp_path: Path) -> None:
    """Nothing is committed when a value's ``valid_until`` passes or a future value's
    ``valid_from`` comes, so the stamps do not move: the cached window does."""
    clock = FrozenClock(NOW)
    memory = Memory(open_store(tmp_path / "m.db"), clock=clock)
    claims = [
        replace(digest("fridays")[0], valid_until=NOW + timedelta(days=1)),
        replace(digest("mondays")[0], valid_from=NOW + timedelta(days=3), scope="later"),
    ]
    memory.ingest(event(1, "The digest fridays until tomorrow, the digest mondays later."), claims)
    assert values(memory) == ["fridays"] and values(memory) == ["fridays"]
    assert memory.hot.stats.hits == 1
    clock.advance(timedelta(days=2))
    assert values(memory) == [] and values(memory) == []
    assert memory.hot.stats.reloads == 2  # read again once, then served
    clock.advance(timedelta(days=2))
    assert values(memory) == ["mondays"]
    assert memory.current("u1", "delivery_preference", tenant="acme")[0].value == "mondays"
    memory.close()


def test_a_shared_tier_never_mixes_two_stores(tmp_path: Path) -> None:
    """Stamps of two stores can be equal (revision 1 of the same family): the store is
    part of the key."""
    tier = HotTier()
    one = Memory(open_store(tmp_path / "one.db"), clock=FrozenClock(NOW), hot=tier)
    two = Memory(open_store(tmp_path / "two.db"), clock=FrozenClock(NOW), hot=tier)
    one.ingest(event(1, "Send me the digest fridays please."), digest("fridays"))
    two.ingest(event(1, "Send me the digest daily please."), digest("daily"))
    assert values(one) == ["fridays"] and values(two) == ["daily"]
    assert values(one) == ["fridays"] and values(two) == ["daily"]
    one.prepare(ASK, tenant="acme", subject="u1")
    assert tier.prepared(two.reading, tenant="acme", subject="u1") is None
    assert tier.prepared(one.reading, tenant="acme", subject="u1") is not None
    one.close()
    two.close()


def test_a_store_is_named_by_its_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``memledger.db`` in two working folders is two stores (their stamps may be equal);
    the same file by a relative and an absolute path is one."""
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
    monkeypatch.chdir(tmp_path / "one")
    first = open_store("memledger.db")
    assert store_name(first) == f"sqlite:///{tmp_path / 'one' / 'memledger.db'}"
    monkeypatch.chdir(tmp_path / "two")
    second = open_store("sqlite:///memledger.db")
    same = open_store(tmp_path / "two" / "memledger.db")
    assert store_name(first) != store_name(second) == store_name(same)
    memory = open_store(":memory:")
    assert store_name(memory) != store_name(open_store(":memory:"))
    for store in (first, second, same, memory):
        store.close()


def test_the_memory_itself_still_works_where_the_read_ports_go_with_a_warning(
    memory: Memory,
) -> None:
    with pytest.warns(DeprecationWarning, match=r"memory\.reading"):
        old = memory.hot.current(memory, tenant="acme", subject="u1")
    assert old == memory.hot.current(memory.reading, tenant="acme", subject="u1")
    assert old.values["delivery_preference"][0].value == "fridays"
    with pytest.warns(DeprecationWarning, match=r"memory\.prepare"):
        memory.hot.prepare(memory, ASK, tenant="acme", subject="u1")
    with pytest.warns(DeprecationWarning, match=r"memory\.reading"):
        prepared = memory.hot.prepared(memory, tenant="acme", subject="u1")
    assert prepared is not None and prepared.items
    with pytest.warns(DeprecationWarning, match=r"memory\.ingest"):
        writer = DeferredWriter(memory)  # type: ignore[arg-type]
    writer.submit(event(12, "A deferred turn."))
    assert [r.event_id for r in writer.close().done] == ["e12"]


def test_the_hot_tier_refuses_what_is_not_the_read_ports(memory: Memory) -> None:
    with pytest.raises(InvalidInputError, match=r"memory\.reading"):
        memory.hot.current(memory.store, tenant="acme", subject="u1")  # type: ignore[arg-type]
