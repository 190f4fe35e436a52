"""Reversible retraction and extractor rollback: an undo
restores what a revocation, a forgotten event, a correction or a rollback closed, as
a new revision, fills only the valid time nothing open holds, and keeps both in
history; a rollback takes back one extractor version's records, and can re-derive
its events with another extractor."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from memledger.domain.records import Claim, SourceEvent
from memledger.errors import ConflictError, ExtractionError, InvalidInputError, NotFoundError
from memledger.memory import Memory
from memledger.testing import FrozenClock, FunctionExtractor
from memledger.testing.scenarios import SUBJECT, TENANT, actor, day, event, fact
from memledger.write.worker import WorkerSettings, episode_of

ANYONE = actor("*")
NO_LEASE = WorkerSettings()


def _say(memory: Memory, event_id: str, city: str, month: int) -> dict[str, str]:
    """``I moved to CITY.`` on the 1st of ``month``: the city, and the turn's episode."""
    said = event(event_id, f"I moved to {city}.", occurred_at=day(month, 1), who=ANYONE)
    claim = fact("home_city", f"Lives in {city}", city, grounding=f"moved to {city}")
    receipt = memory.ingest(said, [claim, episode_of(said)])
    assert receipt.outcome == "committed", receipt
    return {r.family: r.memory_id for r in receipt.results if r.memory_id is not None}


def _city(memory: Memory, *, month: int = 12) -> list[object]:
    return [
        r.value
        for r in memory.current(SUBJECT, "home_city", tenant=TENANT, valid_at=day(month, 20))
    ]


def _windows(memory: Memory) -> list[tuple[object, int, int | None]]:
    return sorted(
        (r.value, r.valid_from.month, None if r.valid_until is None else r.valid_until.month)
        for r in memory.timeline(SUBJECT, "home_city", tenant=TENANT)
    )


class UndoChecks:
    def test_an_undone_revocation_comes_back_as_a_new_revision(
        self, memory: Memory, clock: FrozenClock
    ) -> None:
        ids = _say(memory, "evt-lyon", "Lyon", 3)
        revoked = memory.revoke(ids["home_city"], tenant=TENANT, reason="typo")
        assert revoked.change_id is not None
        assert _city(memory) == []
        episode = memory.get(ids["conversation"], tenant=TENANT)
        assert episode.superseded_at is not None  # re-issued without "Lyon"

        clock.advance(timedelta(minutes=5))
        undone = memory.undo(revoked.change_id, tenant=TENANT, reason="it was right")
        assert undone.undid == revoked.change_id and undone.kind == "revocation"
        assert not undone.duplicate and not undone.not_restored
        assert _city(memory) == ["Lyon"]
        (back,) = memory.current(SUBJECT, "home_city", tenant=TENANT)
        assert back.memory_id != ids["home_city"] and back.supersedes == ids["home_city"]
        assert back.memory_id in undone.restored
        assert back.source_event_id == "evt-lyon" and back.revision > revoked.revision
        # the turn's words are back too: the redacted episode is closed, the original restored
        texts = [
            r.value["text"]  # type: ignore[index,call-overload]
            for r in memory.current(SUBJECT, "conversation", tenant=TENANT, scope=None)
        ]
        assert texts == ["I moved to Lyon."]
        # history shows the revocation and the undo
        actions = [
            (e.action, e.memory_id) for e in memory.changes(SUBJECT, "home_city", tenant=TENANT)
        ]
        assert ("revoked", ids["home_city"]) in actions
        assert ("restored", back.memory_id) in actions
        # the read path serves it again: its source is no longer revoked
        hits = memory.recall("where does the user live?", tenant=TENANT, subject=SUBJECT)
        assert back.memory_id in [item.record.memory_id for item in hits.items]
        # undoing again changes nothing and says so
        again = memory.undo(revoked.change_id, tenant=TENANT)
        assert again.duplicate and again.restored == undone.restored
        assert len(memory.current(SUBJECT, "home_city", tenant=TENANT)) == 1

    def test_restore_undoes_the_change_that_closed_a_memory(self, memory: Memory) -> None:
        ids = _say(memory, "evt-lyon", "Lyon", 3)
        memory.revoke(ids["home_city"], tenant=TENANT)
        restored = memory.restore(ids["home_city"], tenant=TENANT)
        assert restored.kind == "revocation" and _city(memory) == ["Lyon"]
        with pytest.raises(InvalidInputError, match="open"):
            memory.restore(restored.restored[0], tenant=TENANT)

    def test_an_undone_correction_restores_the_window_it_closed(
        self, memory: Memory, clock: FrozenClock
    ) -> None:
        first = _say(memory, "evt-lyon", "Lyon", 3)
        _say(memory, "evt-paris", "Paris", 5)
        assert _windows(memory) == [("Lyon", 3, 5), ("Paris", 5, None)]
        clock.advance(timedelta(minutes=5))
        undone = memory.undo("evt-paris", tenant=TENANT, reason="Paris was a mishearing")
        assert undone.kind == "correction"
        assert _windows(memory) == [("Lyon", 3, None)]
        # the remnant the correction left and the original are both accounted for
        assert first["home_city"] in [
            memory.get(i, tenant=TENANT).supersedes for i in undone.restored
        ]
        # the turn itself is not undone: the Paris episode stays
        episodes = memory.current(SUBJECT, "conversation", tenant=TENANT, scope=None)
        assert sorted(r.source_event_id for r in episodes) == ["evt-lyon", "evt-paris"]
        # a later event applies as usual over the restored window
        _say(memory, "evt-rome", "Rome", 7)
        assert _windows(memory) == [("Lyon", 3, 7), ("Rome", 7, None)]
        assert memory.undo("evt-paris", tenant=TENANT).duplicate

    def test_an_undo_fills_gaps_and_never_closes_what_is_true_now(self, memory: Memory) -> None:
        ids = _say(memory, "evt-lyon", "Lyon", 3)
        revoked = memory.revoke(ids["home_city"], tenant=TENANT)
        _say(memory, "evt-rome", "Rome", 6)
        assert revoked.change_id is not None
        memory.undo(revoked.change_id, tenant=TENANT)
        assert _windows(memory) == [("Lyon", 3, 6), ("Rome", 6, None)]

    def test_a_window_held_entirely_by_newer_records_is_reported_covered(
        self, memory: Memory
    ) -> None:
        ids = _say(memory, "evt-lyon", "Lyon", 3)
        revoked = memory.revoke(ids["home_city"], tenant=TENANT)
        said = event(
            "evt-rome", "I've lived in Rome since February.", occurred_at=day(6, 1), who=ANYONE
        )
        rome = fact("home_city", "Lives in Rome", "Rome", grounding="lived in Rome")
        since = replace(rome, valid_from=day(2, 1))  # Lyon's whole window, and before
        assert memory.ingest(said, [since]).outcome == "committed"
        assert revoked.change_id is not None
        undone = memory.undo(revoked.change_id, tenant=TENANT)
        assert [(n.memory_id, n.why) for n in undone.not_restored] == [
            (ids["home_city"], "covered")
        ]
        assert _windows(memory) == [("Rome", 2, None)]

    def test_a_later_revocation_of_the_family_must_be_undone_first(self, memory: Memory) -> None:
        lyon = _say(memory, "evt-lyon", "Lyon", 3)
        first = memory.revoke(lyon["home_city"], tenant=TENANT)
        rome = _say(memory, "evt-rome", "Rome", 6)
        second = memory.revoke(rome["home_city"], tenant=TENANT)
        assert first.change_id and second.change_id
        before = _windows(memory)
        with pytest.raises(ConflictError, match="undo that first"):
            memory.undo(first.change_id, tenant=TENANT)
        assert _windows(memory) == before  # nothing half done
        memory.undo(second.change_id, tenant=TENANT)
        memory.undo(first.change_id, tenant=TENANT)
        assert _windows(memory) == [("Lyon", 3, 6), ("Rome", 6, None)]

    def test_an_undone_forget_lets_the_event_be_used_again(self, memory: Memory) -> None:
        _say(memory, "evt-lyon", "Lyon", 3)
        forgot = memory.forget("evt-lyon", tenant=TENANT)
        assert forgot.change_id is not None and _city(memory) == []
        undone = memory.undo(forgot.change_id, tenant=TENANT)
        assert undone.kind == "forget" and undone.unforgotten == ("evt-lyon",)
        assert _city(memory) == ["Lyon"]
        # forgetting it again works as the first time
        again = memory.forget("evt-lyon", tenant=TENANT)
        assert again.change_id not in (None, forgot.change_id) and _city(memory) == []

    def test_an_episode_redacted_again_since_keeps_that_redaction(self, memory: Memory) -> None:
        said = event(
            "evt-move", "I moved to Lyon and I work at Initech.", occurred_at=day(3, 1), who=ANYONE
        )
        city = fact("home_city", "Lives in Lyon", "Lyon", grounding="moved to Lyon")
        work = fact("employer", "Works at Initech", "Initech", grounding="work at Initech")
        receipt = memory.ingest(said, [city, work, episode_of(said)])
        ids = {r.family: r.memory_id for r in receipt.results if r.memory_id is not None}
        first = memory.revoke(ids["home_city"], tenant=TENANT)
        memory.revoke(ids["employer"], tenant=TENANT)  # redacts the same episode again
        assert first.change_id is not None
        undone = memory.undo(first.change_id, tenant=TENANT)
        assert "changed" in [n.why for n in undone.not_restored]
        assert _city(memory) == ["Lyon"]
        texts = [
            str(r.value) for r in memory.current(SUBJECT, "conversation", tenant=TENANT, scope=None)
        ]
        assert len(texts) == 1 and "Initech" not in texts[0]

    def test_a_forget_made_since_must_be_undone_first(self, memory: Memory) -> None:
        ids = _say(memory, "evt-lyon", "Lyon", 3)
        revoked = memory.revoke(ids["home_city"], tenant=TENANT)
        forgot = memory.forget("evt-lyon", tenant=TENANT)  # no new revocation of home_city
        assert revoked.change_id is not None and forgot.change_id is not None
        with pytest.raises(ConflictError, match="forgotten after"):
            memory.undo(revoked.change_id, tenant=TENANT)
        assert _city(memory) == []
        memory.undo(forgot.change_id, tenant=TENANT)
        assert _city(memory) == []  # the forget is undone; the revocation still stands
        assert memory.restore(ids["home_city"], tenant=TENANT).kind == "revocation"
        assert _city(memory) == ["Lyon"]

    def test_a_correction_undone_after_its_family_was_revoked_restores_nothing(
        self, memory: Memory
    ) -> None:
        lyon = _say(memory, "evt-lyon", "Lyon", 3)
        _say(memory, "evt-paris", "Paris", 5)
        memory.revoke_family(SUBJECT, "home_city", tenant=TENANT)  # every source, ever
        undone = memory.undo("evt-paris", tenant=TENANT)
        assert (lyon["home_city"], "revoked") in [(n.memory_id, n.why) for n in undone.not_restored]
        assert _windows(memory) == []

    def test_an_erased_record_is_never_restored(self, memory: Memory) -> None:
        ids = _say(memory, "evt-lyon", "Lyon", 3)
        revoked = memory.revoke(ids["home_city"], tenant=TENANT)
        memory.erase(tenant=TENANT, event="evt-lyon")
        assert revoked.change_id is not None
        undone = memory.undo(revoked.change_id, tenant=TENANT)
        assert {n.why for n in undone.not_restored} == {"erased"}
        assert undone.restored == () and _city(memory) == []

    def test_bad_undo_requests_change_nothing(self, memory: Memory, clock: FrozenClock) -> None:
        ids = _say(memory, "evt-lyon", "Lyon", 3)
        revoked = memory.revoke(ids["home_city"], tenant=TENANT)
        assert revoked.change_id is not None
        with pytest.raises(NotFoundError):
            memory.undo("chg-nothing", tenant=TENANT)
        with pytest.raises(InvalidInputError):
            memory.undo(revoked.change_id, tenant=TENANT, reason="x" * 100_000)
        with pytest.raises(NotFoundError):
            memory.undo(revoked.change_id, tenant="other-tenant")
        assert _city(memory) == []
        clock.advance()
        undone = memory.undo(revoked.change_id, tenant=TENANT)
        with pytest.raises(InvalidInputError, match="is an undo"):
            memory.undo(undone.change_id, tenant=TENANT)
        kinds = [c.kind for c in memory.change_log(tenant=TENANT)]
        assert kinds == ["undo", "revocation"]


def _extract(city: str, *, name: str, version: str) -> FunctionExtractor:
    """An extractor that reads the city of "I moved to Paris last month." as ``city``
    (a bad version: "Paris last", the trailing time phrase kept in the value)."""

    def run(source: SourceEvent) -> list[Claim]:
        if "moved" not in source.text:
            return []
        return [fact("home_city", f"Lives in {city}", city, grounding="moved to Paris")]

    return FunctionExtractor(run, name=name, version=version)


class RollbackChecks:
    def _extracted(self, memory: Memory, extractor: FunctionExtractor) -> None:
        said = event("evt-move", "I moved to Paris last month.", occurred_at=day(5, 1), who=ANYONE)
        memory.ingest(said)
        report = memory.process(extractor=extractor, tenant=TENANT, settings=NO_LEASE)
        assert report.jobs == 1

    def test_a_rollback_takes_back_one_extractor_version_and_restores_what_it_closed(
        self, memory: Memory, clock: FrozenClock
    ) -> None:
        _say(memory, "evt-lyon", "Lyon", 3)  # stated by a caller
        self._extracted(memory, _extract("Paris last", name="bad", version="7"))
        assert _windows(memory) == [("Lyon", 3, 5), ("Paris last", 5, None)]
        clock.advance(timedelta(minutes=5))
        rolled = memory.rollback("bad@7", tenant=TENANT, reason="bad prompt")
        assert rolled.events == ("evt-move",) and rolled.change_id is not None
        assert _windows(memory) == [("Lyon", 3, None)]
        # the turn is kept: its episode was written by the same job
        episodes = memory.current(SUBJECT, "conversation", tenant=TENANT, scope=None)
        assert "evt-move" in [r.source_event_id for r in episodes]
        # another version of the same name is not touched, nor what callers stated
        assert memory.rollback("bad@8", tenant=TENANT).change_id is None
        # the rollback is reversible
        undone = memory.undo(rolled.change_id, tenant=TENANT)
        assert undone.kind == "rollback"
        assert _windows(memory) == [("Lyon", 3, 5), ("Paris last", 5, None)]

    def test_a_rollback_can_re_derive_the_events_with_another_extractor(
        self, memory: Memory
    ) -> None:
        _say(memory, "evt-lyon", "Lyon", 3)
        self._extracted(memory, _extract("Paris last", name="bad", version="7"))
        _say(memory, "evt-rome", "Rome", 8)  # a later caller statement
        rolled = memory.rollback(
            "bad@7", tenant=TENANT, rederive_with=_extract("Paris", name="good", version="1")
        )
        assert rolled.rederived and rolled.held == ()
        # re-derived at its place in the business timeline: Paris from May, Rome from August
        assert _windows(memory) == [("Lyon", 3, 5), ("Paris", 5, 8), ("Rome", 8, None)]
        made = memory.get(rolled.rederived[0], tenant=TENANT)
        assert (made.extractor.name, made.extractor.version) == ("good", "1")
        assert rolled.change_id is not None
        memory.undo(rolled.change_id, tenant=TENANT)
        back = [("Lyon", 3, 5), ("Paris last", 5, 8), ("Rome", 8, None)]
        assert _windows(memory) == back
        # the re-derived records are closed now: rolling their version back takes nothing
        # of the first version's, restored on the same event
        memory.rollback("good@1", tenant=TENANT)
        assert _windows(memory) == back

    def test_a_re_derivation_writes_nothing_from_a_revoked_source(
        self, memory: Memory, clock: FrozenClock
    ) -> None:
        _say(memory, "evt-lyon", "Lyon", 3)
        self._extracted(memory, _extract("Paris last", name="bad", version="7"))
        (paris,) = memory.current(SUBJECT, "home_city", tenant=TENANT)
        revoked = memory.revoke(paris.memory_id, tenant=TENANT)
        assert revoked.change_id is not None
        clock.advance(timedelta(minutes=5))
        rolled = memory.rollback(
            "bad@7", tenant=TENANT, rederive_with=_extract("Paris", name="good", version="1")
        )
        assert rolled.events == ("evt-move",) and rolled.rederived == ()
        with memory.store.read() as unit:
            opened = unit.event_records(TENANT, "evt-move", open_only=True)
            assert [r.family for r in opened] == ["conversation"]  # the turn, not its city
        # undoing the revocation lets the words back in, not a re-derived record: the
        # rollback still stands for what the bad version wrote
        clock.advance(timedelta(minutes=5))
        memory.undo(revoked.change_id, tenant=TENANT)
        assert _windows(memory) == [("Lyon", 3, None)]

    def test_a_failing_re_derivation_changes_nothing(self, memory: Memory) -> None:
        _say(memory, "evt-lyon", "Lyon", 3)
        self._extracted(memory, _extract("Paris last", name="bad", version="7"))
        before = _windows(memory)

        def down(source: SourceEvent) -> list[Claim]:
            raise ExtractionError("endpoint down", reason="endpoint_unavailable")

        with pytest.raises(ExtractionError):
            memory.rollback("bad@7", tenant=TENANT, rederive_with=FunctionExtractor(down))
        assert _windows(memory) == before and memory.change_log(tenant=TENANT) == ()

    def test_a_rollback_of_an_unknown_form_is_refused(self, memory: Memory) -> None:
        for bad in ("rules", "@1", "rules@", "a@b@c"):
            with pytest.raises(InvalidInputError, match="NAME@VERSION"):
                memory.rollback(bad, tenant=TENANT)


def _like(
    memory: Memory,
    event_id: str,
    scope: str,
    month: int,
    statement: str = "Likes jazz",
    value: str = "jazz",
) -> str:
    said = event(event_id, f"{statement}.", occurred_at=day(month, 1), who=ANYONE)
    claim = Claim(
        family="likes",
        kind="preference",
        statement=statement,
        value=value,
        scope=scope,
        grounding=statement,
    )
    receipt = memory.ingest(said, [claim])
    (result,) = receipt.results
    assert result.disposition == "current" and result.memory_id is not None, receipt
    return result.memory_id


def _likes(memory: Memory) -> list[tuple[str, int, int]]:
    return sorted(
        (r.scope, r.valid_from.month, r.mentions)
        for r in memory.timeline(SUBJECT, "likes", tenant=TENANT)
    )


class ConsolidationChecks:
    def test_near_duplicates_merge_into_one_and_an_undo_restores_them(
        self, memory: Memory, clock: FrozenClock
    ) -> None:
        first = _like(memory, "evt-jazz", "music:jazz", 3)
        second = _like(memory, "evt-jazz-2", "music:Jazz", 2)  # said earlier, filed apart
        assert _likes(memory) == [("music:Jazz", 2, 1), ("music:jazz", 3, 1)]
        dry = memory.consolidate(tenant=TENANT, subject=SUBJECT, dry_run=True)
        assert [(m.survivor, m.duplicates, m.into) for m in dry.merges] == [
            (first, (second,), None)
        ]
        assert dry.change_id is None and len(_likes(memory)) == 2  # nothing written
        clock.advance(timedelta(minutes=5))
        done = memory.consolidate(tenant=TENANT)  # every subject
        (merge,) = done.merges
        assert done.change_id is not None and merge.into is not None
        assert _likes(memory) == [("music:jazz", 2, 2)]  # the hull of both, mentions summed
        merged = memory.get(merge.into, tenant=TENANT)
        assert merged.supersedes == first and merged.confidence >= 0.65
        # nothing left to merge: consolidating again changes nothing
        assert memory.consolidate(tenant=TENANT).change_id is None
        memory.undo(done.change_id, tenant=TENANT)
        assert _likes(memory) == [("music:Jazz", 2, 1), ("music:jazz", 3, 1)]

    def test_revoking_a_merged_record_revokes_every_source_that_said_it(
        self, memory: Memory
    ) -> None:
        _like(memory, "evt-jazz", "music:jazz", 3)
        _like(memory, "evt-jazz-2", "music:Jazz", 2)
        (merge,) = memory.consolidate(tenant=TENANT, subject=SUBJECT).merges
        assert merge.into is not None
        memory.revoke(merge.into, tenant=TENANT)
        assert _likes(memory) == []
        with memory.store.read() as unit:
            revoked = unit.revoked_sources(TENANT, SUBJECT, "likes")
        assert revoked == {"evt-jazz", "evt-jazz-2"}

    def test_a_negation_keeps_records_apart_and_bad_settings_are_refused(
        self, memory: Memory
    ) -> None:
        _like(memory, "evt-jazz", "music:jazz", 3)
        _like(memory, "evt-no-jazz", "music:Jazz", 2, statement="Does not like jazz")
        assert memory.consolidate(tenant=TENANT, threshold=0.2).merges == ()
        for bad in (0, 1.5, True, "0.9"):
            with pytest.raises(InvalidInputError, match="threshold"):
                memory.consolidate(tenant=TENANT, threshold=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="give subject"):
            memory.consolidate(tenant=TENANT, family="likes")

    def test_a_merge_is_no_newer_state_for_a_late_event(self, memory: Memory) -> None:
        old = _like(memory, "evt-jazz-a", "music:jazz", 2)
        repeat = Claim(family="likes", kind="preference", statement="Likes jazz", value="jazz",
                       scope="music:jazz", grounding="Likes jazz")  # fmt: skip
        again = event("evt-jazz-a2", "Likes jazz.", occurred_at=day(2, 2), who=ANYONE)
        memory.ingest(again, [repeat])  # a NOOP: two mentions
        _like(memory, "evt-jazz-b", "music:Jazz", 1)  # said earlier, filed apart
        _like(memory, "evt-rock", "music:rock", 5, "Likes rock", "rock")  # moves the family
        (merge,) = memory.consolidate(tenant=TENANT, subject=SUBJECT).merges
        assert merge.survivor == old
        late = event("evt-jazz-c", "Likes jazz.", occurred_at=day(3, 1), who=ANYONE)
        (result,) = memory.ingest(late, [repeat]).results
        # behind the family, but nothing newer holds its scope: counted on the merged record
        assert (result.disposition, result.decision) == ("current", "noop")
        assert result.memory_id == merge.into

    def test_records_of_disjoint_times_are_history_not_duplicates(self, memory: Memory) -> None:
        said = event("evt-jazz-then", "Liked jazz in January.", occurred_at=day(1, 1), who=ANYONE)
        then = Claim(family="likes", kind="preference", statement="Likes jazz", value="jazz",
                     scope="music:jazz", grounding="Liked jazz", valid_until=day(2, 1))  # fmt: skip
        memory.ingest(said, [then])
        _like(memory, "evt-jazz-now", "music:Jazz", 6)
        assert len(_likes(memory)) == 2
        assert memory.consolidate(tenant=TENANT, subject=SUBJECT).merges == ()
