"""Episodic compaction: old sessions become one summary record each; the episodes leave
the index and stay in the store; whatever closes or erases a covered turn reaches the
summary (memledger.write.compact)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from memledger.errors import MemoryNotFoundError
from memledger.memory import Memory
from memledger.testing import FrozenClock
from memledger.testing.scenarios import SUBJECT, TENANT, actor, day, event, fact, snapshot
from memledger.write.compact import CompactionReceipt
from memledger.write.worker import episode_of

ANYONE = actor("*")
OLD = (
    "I adopted a greyhound named Biscuit.",
    "Biscuit sprints along Quarrington beach at dawn.",
    "We walk past the harbour lighthouse every Sunday.",
)
"""Three turns of an old session (March); ``Quarrington`` is said in the second only."""


def _session(memory: Memory) -> list[str]:
    """The old session (three turns, the second with a claim) and a recent one (two
    turns, September); returns the old turns' event ids."""
    ids = []
    for n, text in enumerate(OLD):
        said = replace(
            event(f"old-{n}", text, occurred_at=day(3, 1) + timedelta(minutes=n), who=ANYONE),
            metadata={"session": "march"},
        )
        claims = [episode_of(said)]
        if n == 1:
            claims.append(fact("habit", "Runs the dog on Quarrington beach", "Quarrington beach",
                               grounding="Quarrington beach"))  # fmt: skip
        assert memory.ingest(said, claims).outcome == "committed"
        ids.append(said.event_id)
    for n, text in enumerate(("Today I bought a red kite.", "It flew over the dunes.")):
        recent = replace(  # a session of two turns, too recent to compact
            event(f"recent-{n}", text, occurred_at=day(9, 28) + timedelta(minutes=n), who=ANYONE),
            metadata={"session": "september"},
        )
        memory.ingest(recent, [episode_of(recent)])
    return ids


def _found(memory: Memory, query: str) -> list[str]:
    """The events recall finds for ``query`` (a summary is found by its compaction)."""
    result = memory.recall(query, tenant=TENANT, subject=SUBJECT, touch=False)
    return [item.record.source_event_id for item in result.items]


def _summaries(memory: Memory) -> list[str]:
    result = memory.recall("greyhound Biscuit harbour", tenant=TENANT, touch=False)
    return [i.record.memory_id for i in result.items if i.record.summary_of is not None]


def _compact(memory: Memory) -> CompactionReceipt:
    receipt = memory.compact(tenant=TENANT, older_than=timedelta(days=30))
    assert len(receipt.sessions) == 1
    return receipt


class CompactionChecks:
    def test_an_old_session_becomes_a_summary_naming_its_episodes(
        self, memory: Memory, clock: FrozenClock
    ) -> None:
        turns = _session(memory)
        before = _found(memory, "Quarrington beach")
        assert "old-1" in before
        receipt = _compact(memory)
        (done,) = receipt.sessions
        assert done.session == "march" and done.subject == SUBJECT  # September is too recent
        summary = memory.get(done.summary or "", tenant=TENANT)
        assert summary.summary_of == "march" and summary.kind == "episode"
        assert isinstance(summary.value, dict) and summary.value["covers"] == list(done.covers)
        assert "Quarrington" in summary.claim  # what the turns said, compressed
        episodes = [memory.get(m, tenant=TENANT) for m in done.covers]
        assert [e.source_event_id for e in episodes] == turns
        assert all(e.status == "active" and e.superseded_at is None for e in episodes)
        # the turns left the index: recall finds the summary instead of them
        found = _found(memory, "Quarrington beach")
        assert summary.source_event_id in found
        assert not set(found) & set(turns) - {"old-1"}  # old-1's claim (a fact) stays
        assert summary.memory_id in _summaries(memory)
        # history says so, the ledger holds the compaction without the turns' words
        actions = [h.action for h in memory.changes(SUBJECT, "conversation", tenant=TENANT)]
        assert actions.count("compacted") == 3
        ledger = memory.event(summary.source_event_id, tenant=TENANT)
        assert ledger.channel == "system" and "Quarrington" not in ledger.text
        (change,) = [c for c in memory.change_log(tenant=TENANT) if c.kind == "compaction"]
        assert change.change_id == receipt.change_id
        # compacting again finds nothing new; the index rebuilt keeps them out
        assert memory.compact(tenant=TENANT, older_than=timedelta(days=30)).sessions == ()
        memory.reindex(tenant=TENANT)
        assert _summaries(memory) == [summary.memory_id]
        assert not set(_found(memory, "greyhound harbour lighthouse")) & set(turns)

    def test_a_dry_run_writes_nothing(self, memory: Memory) -> None:
        _session(memory)
        held = snapshot(memory)
        dry = memory.compact(tenant=TENANT, older_than=timedelta(days=30), dry_run=True)
        assert [s.session for s in dry.sessions] == ["march"]
        assert dry.sessions[0].summary is None and dry.change_id is None
        assert snapshot(memory) == held

    def test_an_undo_returns_the_episodes_to_the_index(self, memory: Memory) -> None:
        _session(memory)
        receipt = _compact(memory)
        covers = receipt.sessions[0].covers
        held = [memory.get(m, tenant=TENANT) for m in covers]
        undone = memory.undo(receipt.change_id or "", tenant=TENANT)
        assert undone.closed == (receipt.sessions[0].summary,)
        assert _summaries(memory) == []
        assert "old-2" in _found(memory, "harbour lighthouse")
        assert [memory.get(m, tenant=TENANT) for m in covers] == held  # never rewritten
        again = memory.compact(tenant=TENANT, older_than=timedelta(days=30))
        assert [s.covers for s in again.sessions] == [covers]  # a new summary of them

    def test_forgetting_a_covered_turn_dissolves_the_summary(self, memory: Memory) -> None:
        _session(memory)
        summary = _compact(memory).sessions[0].summary or ""
        memory.forget("old-0", tenant=TENANT)
        closed = memory.get(summary, tenant=TENANT)
        assert closed.status == "superseded" and closed.superseded_at is not None
        assert _summaries(memory) == []
        assert "old-2" in _found(memory, "harbour lighthouse")  # back in the index
        assert "old-0" not in _found(memory, "greyhound Biscuit")  # forgotten

    def test_a_redacted_turn_dissolves_the_summary(self, memory: Memory) -> None:
        _session(memory)
        summary = _compact(memory).sessions[0].summary or ""
        (habit,) = memory.current(SUBJECT, "habit", tenant=TENANT)
        memory.revoke(habit.memory_id, tenant=TENANT)  # its words leave the turn too
        assert memory.get(summary, tenant=TENANT).status == "superseded"
        assert _summaries(memory) == []
        assert not any("Quarrington" in t for t in self._texts(memory))

    def _texts(self, memory: Memory) -> list[str]:
        result = memory.recall("beach dawn sprints", tenant=TENANT, touch=False)
        return [i.record.claim for i in result.items]

    def test_revoking_the_summary_returns_its_episodes(self, memory: Memory) -> None:
        _session(memory)
        summary = _compact(memory).sessions[0].summary or ""
        memory.revoke(summary, tenant=TENANT)
        assert _summaries(memory) == []
        assert "old-2" in _found(memory, "harbour lighthouse")
        assert "old-0" in _found(memory, "greyhound Biscuit")  # no turn was revoked

    def test_erasing_a_covered_turn_erases_the_summary(self, memory: Memory) -> None:
        _session(memory)
        summary = _compact(memory).sessions[0].summary or ""
        memory.erase(event="old-1", tenant=TENANT, reason="asked")
        with pytest.raises(MemoryNotFoundError):
            memory.get(summary, tenant=TENANT)
        with memory.store.read() as unit:
            rows = unit.conn.execute(  # type: ignore[attr-defined]
                "SELECT * FROM records WHERE tenant = ?", (TENANT,)
            ).fetchall()
            assert unit.compacted(TENANT, summary) == []
        assert not any("Quarrington" in repr(row) for row in rows)
        assert "old-2" in _found(memory, "harbour lighthouse")  # the rest is back

    def test_a_summary_erased_alone_returns_its_episodes_to_the_index(
        self, memory: Memory, clock: FrozenClock
    ) -> None:
        """The store's side of it: erasing an open summary (as its own expiry would)
        takes its compactions with it and feeds its open episodes to the index again."""
        _session(memory)
        summary = _compact(memory).sessions[0].summary or ""
        with memory.store.write() as unit:
            unit.erase_records(TENANT, [summary], erasure_id="era-1", at=clock.now())
            assert unit.compacted(TENANT, summary) == []
        assert "old-2" in _found(memory, "harbour lighthouse")

    def test_expiry_keeps_the_summary_past_its_episodes(
        self, memory: Memory, clock: FrozenClock
    ) -> None:
        """Episodes kept 240 days from when they were written (March): they expire in
        November; the summary, written in October, lasts until June."""
        clock.set(day(3, 2))
        _session(memory)
        clock.set(day(10, 1))
        memory.set_retention("episode", 240, tenant=TENANT)
        summary = _compact(memory).sessions[0].summary or ""
        assert memory.get(summary, tenant=TENANT).expires_at == day(10, 1) + timedelta(days=240)
        clock.set(day(11, 15))
        memory.expire(tenant=TENANT)
        kept = memory.get(summary, tenant=TENANT)
        assert kept.status == "active" and isinstance(kept.value, dict)
        for episode in kept.value["covers"]:  # type: ignore[union-attr]
            with pytest.raises(MemoryNotFoundError):
                memory.get(str(episode), tenant=TENANT)
        with memory.store.read() as unit:  # no row names an erased episode
            assert unit.compacted(TENANT, summary) == []
        assert _summaries(memory) == [summary]

    def test_bad_compaction_requests_change_nothing(self, memory: Memory) -> None:
        from memledger.errors import InvalidInputError, InvalidQueryError

        _session(memory)
        held = snapshot(memory)
        for bad in (
            {"older_than": timedelta(days=-1)},
            {"older_than": 30},
            {"before": day(3, 1), "older_than": timedelta(days=1)},
            {"min_turns": 1},
            {"max_tokens": 5},
            {"min_turns": True},
            {"reason": ""},
        ):
            with pytest.raises((InvalidInputError, InvalidQueryError)):
                memory.compact(tenant=TENANT, **bad)
        with pytest.raises(InvalidQueryError):
            memory.compact(tenant=TENANT, before=day(3, 1).replace(tzinfo=None))
        assert snapshot(memory) == held
