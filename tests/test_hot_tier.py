"""Latency tiers (issue 11, item 7): the hot cache and prepared results never serve a
revoked memory once the revocation is acknowledged; deferred writes; the voice budget."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memledger import Actor, Claim, InvalidInputError, Memory, SourceEvent
from memledger.domain.records import Grant
from memledger.read.hot import DeferredWriter, HotTier, voice_budget
from memledger.store import open_store
from memledger.testing import FrozenClock

NOW = datetime(2026, 10, 28, 9, tzinfo=UTC)
WHO = Actor(id="u1", authenticated=True, grants=frozenset({Grant(family="delivery_preference")}))
ASK = "When should the digest be delivered?"


def event(n: int, text: str, *, subject: str = "u1") -> SourceEvent:
    return SourceEvent(
        tenant="acme",
        event_id=f"e{n}",
        subject=subject,
        actor=WHO if subject == "u1" else Actor(id=subject, authenticated=True),
        channel="chat",
        occurred_at=NOW - timedelta(days=10 - n),
        text=text,
    )


def digest(value: str) -> list[Claim]:
    return [
        Claim(
            family="delivery_preference",
            kind="preference",
            statement=f"Digest delivered {value}",
            value=value,
            grounding=f"digest {value}",
        )
    ]


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    memory = Memory(open_store(tmp_path / "m.db"), clock=FrozenClock(NOW))
    memory.ingest(event(1, "Send me the digest fridays please."), digest("fridays"))
    yield memory
    memory.close()


def values(memory: Memory) -> list[object]:
    found = memory.hot.current(memory, tenant="acme", subject="u1").values
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
    assert memory.hot.prepared(memory, tenant="acme", subject="u1") is None
    assert memory.hot.stats.prepared_dropped >= 1


def test_a_prepared_result_is_dropped_after_any_commit_of_the_subject(memory: Memory) -> None:
    tier = HotTier()
    tier.prepare(memory, ASK, tenant="acme", subject="u1")
    assert tier.prepared(memory, tenant="acme", subject="u1") is not None
    memory.ingest(event(5, "Other talk.", subject="u2"))  # another subject: kept
    assert tier.prepared(memory, tenant="acme", subject="u1") is not None
    memory.ingest(event(6, "The digest mondays now."), digest("mondays"))
    assert tier.prepared(memory, tenant="acme", subject="u1") is None


def test_the_hot_tiers_need_a_subject(memory: Memory) -> None:
    with pytest.raises(InvalidInputError, match="needs a subject"):
        memory.context(ASK, tenant="acme", tier="hot")


def test_deferred_writes_land_after_the_caller_moved_on(memory: Memory) -> None:
    writer = DeferredWriter(memory)
    for n in range(10, 15):
        writer.submit(event(n, f"Deferred turn number {n}."))
    writer.submit(event(1, "Another text under an event id already used."))  # a conflict
    report = writer.close()
    assert sorted(r.event_id for r in report.done) == [f"e{n}" for n in range(10, 15)]
    assert [event_id for event_id, _ in report.failed] == ["e1"]
    assert all(memory.event(f"e{n}", tenant="acme") for n in range(10, 15))  # stored
    with pytest.raises(InvalidInputError):
        DeferredWriter(memory).submit("not an event")  # type: ignore[arg-type]


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
