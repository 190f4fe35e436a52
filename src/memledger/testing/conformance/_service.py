"""The service's state as every store must keep it: API keys (hashed, one tenant each),
families registered per tenant, and review decisions with who, why and when.

Each check writes through one :class:`Memory` and reads through another opened on
the same URL, as another process of the service would.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from memledger.domain.families import Family
from memledger.domain.records import Grant
from memledger.errors import (
    AuthenticationError,
    ConflictError,
    KeyNotFoundError,
    LastAdminKeyError,
    UnknownFamilyError,
)
from memledger.memory import Memory
from memledger.ports import StoredTrace
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.scenarios import FAMILY, SUBJECT, TENANT, day, event, pref


@contextmanager
def _other(
    url: str, clock: FrozenClock, failpoint: Callable[[str], None] | None = None
) -> Iterator[Memory]:
    memory = Memory(open_store(url, failpoint=failpoint), clock=clock)
    try:
        yield memory
    finally:
        memory.close()


class ServiceChecks:
    def test_keys_authenticate_from_every_process_until_revoked(
        self, memory: Memory, store_url: str, clock: FrozenClock
    ) -> None:
        key, token = memory.create_key(TENANT, "agent-7", principal="agent", grants=[FAMILY])
        assert token.startswith(f"{key.key_id}.") and token not in repr(memory.keys(TENANT))
        with _other(store_url, clock) as other:
            who = other.authenticate(token)
            assert (who.tenant, who.actor.id, who.kind, who.role) == (
                TENANT,
                "agent-7",
                "agent",
                "write",
            )
            assert who.actor.authenticated and who.actor.grants == {Grant(family=FAMILY)}
            assert [k.key_id for k in other.keys(TENANT)] == [key.key_id]
            assert other.keys("globex") == ()
            with pytest.raises(KeyNotFoundError):
                other.revoke_key("globex", key.key_id)  # a key of another tenant
            other.revoke_key(TENANT, key.key_id)
        with pytest.raises(AuthenticationError):
            memory.authenticate(token)
        (stored,) = memory.keys(TENANT)
        assert stored.revoked_at == clock.now() and stored.last_used_at == clock.now()

    def test_the_last_live_admin_key_is_not_revoked(
        self, memory: Memory, store_url: str, clock: FrozenClock
    ) -> None:
        first, token = memory.create_key(TENANT, "admin-1", role="admin")
        writer, _ = memory.create_key(TENANT, "user-1")
        with pytest.raises(LastAdminKeyError, match="last live admin key"):
            memory.revoke_key(TENANT, first.key_id)
        assert memory.authenticate(token).role == "admin"  # nothing was written
        memory.revoke_key(TENANT, writer.key_id)  # not an admin key: no rule
        second, _ = memory.create_key(TENANT, "admin-2", role="admin")
        memory.revoke_key(TENANT, first.key_id)
        with pytest.raises(LastAdminKeyError):
            memory.revoke_key(TENANT, second.key_id)
        assert memory.revoke_key(TENANT, first.key_id).revoked  # again: a no-op

    def test_two_admin_keys_revoked_at_once_leave_one(
        self, memory: Memory, store_url: str, clock: FrozenClock
    ) -> None:
        """The first revocation holds its unit open past its write until the second has
        had a second to reach its own write: a store that lets both read the other's key
        as live before either commits ends with no admin key."""
        keys = [memory.create_key(TENANT, f"admin-{n}", role="admin")[0] for n in (1, 2)]
        first_in, second_in = threading.Event(), threading.Event()
        outcomes: list[str] = []

        def first_waits(step: str) -> None:
            if step == "revoke_key":
                first_in.set()
                second_in.wait(timeout=1)

        def second_arrives(step: str) -> None:
            if step == "revoke_key":
                second_in.set()

        def revoke(n: int, failpoint: Callable[[str], None]) -> None:
            with _other(store_url, clock, failpoint) as other:
                if n == 1:
                    first_in.wait(timeout=10)
                try:
                    other.revoke_key(TENANT, keys[n].key_id)
                    outcomes.append("revoked")
                except LastAdminKeyError:
                    outcomes.append("refused")

        threads = [
            threading.Thread(target=revoke, args=(0, first_waits)),
            threading.Thread(target=revoke, args=(1, second_arrives)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert sorted(outcomes) == ["refused", "revoked"], outcomes
        assert [k.revoked for k in memory.keys(TENANT)].count(False) == 1

    def test_registered_families_belong_to_their_tenant_and_persist(
        self, memory: Memory, store_url: str, clock: FrozenClock
    ) -> None:
        diet = Family(name="diet", kinds=frozenset({"preference"}), description="What one eats.")
        assert memory.register_family(TENANT, diet) == diet
        assert memory.register_family(TENANT, diet) == diet  # the same again: a no-op
        with pytest.raises(ConflictError):
            memory.register_family(TENANT, Family(name="diet", kinds=frozenset({"fact"})))
        with _other(store_url, clock) as other:
            assert other.families_of(TENANT).family("diet") == diet
            with pytest.raises(UnknownFamilyError):
                other.families_of("globex").family("diet")

    def test_review_decisions_are_kept_with_who_why_and_when(
        self, memory: Memory, store_url: str, clock: FrozenClock
    ) -> None:
        memory.ingest(event("a", "Fridays", occurred_at=day(10, 2), sequence=1), [pref("friday")])
        held = [
            memory.ingest(
                event(name, "Mondays", occurred_at=day(10, 3), sequence=1), [pref("monday")]
            ).review_id
            for name in ("b", "c")
        ]
        assert None not in held
        clock.set(day(10, 4))
        memory.resolve_review(TENANT, str(held[0]), decision="reject", by="ann", reason="typo")
        memory.resolve_review(TENANT, str(held[1]), decision="accept", by="bo", reason="phoned")
        with _other(store_url, clock) as other:
            assert other.reviews(tenant=TENANT) == ()
            items = other.reviews(tenant=TENANT, open_only=False)
            assert [
                (i.event_id, i.resolution, i.resolved_by, i.resolution_reason, i.resolved_at)
                for i in items
            ] == [
                ("b", "rejected", "ann", "typo", day(10, 4)),
                ("c", "accepted", "bo", "phoned", day(10, 4)),
            ]
            (now,) = other.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=day(10, 5))
            assert (now.value, now.source_event_id) == ("monday", "c")
            notes = [
                (c.action, c.memory_id, c.note)
                for c in other.changes(SUBJECT, FAMILY, tenant=TENANT)
                if c.action.startswith("review_")
            ]
            assert notes == [
                ("review_rejected", held[0], "rejected by ann: typo"),
                ("review_accepted", held[1], "accepted by bo: phoned"),
            ]
            assert other.family_events(SUBJECT, FAMILY, tenant=TENANT) == ("a", "c")

    def test_subjects_are_listed_per_tenant_in_pages(
        self, memory: Memory, store_url: str, clock: FrozenClock
    ) -> None:
        clock.set(day(10, 2))
        for n, subject in enumerate(("user-2", "user-10", "team:ops", "user-1")):
            memory.ingest(
                event(f"e{n}", "Deliver on Fridays.", occurred_at=day(10, 2), subject=subject),
                [pref("friday")] if subject != "team:ops" else None,
            )
        memory.ingest(
            event("g1", "Deliver on Mondays.", occurred_at=day(10, 2), tenant="globex"),
            [pref("monday")],
        )
        with _other(store_url, clock) as other:
            listed = other.subjects(tenant=TENANT)
            assert [s.subject for s in listed] == ["team:ops", "user-1", "user-10", "user-2"]
            assert [(s.families, s.events) for s in listed] == [(0, 1), (1, 1), (1, 1), (1, 1)]
            assert all(s.last_at is not None for s in listed)
            assert [s.subject for s in other.subjects(tenant=TENANT, prefix="user-1")] == [
                "user-1",
                "user-10",
            ]
            first = other.subjects(tenant=TENANT, limit=2)
            rest = other.subjects(tenant=TENANT, after=first[-1].subject, limit=2)
            assert [s.subject for s in (*first, *rest)] == [s.subject for s in listed]
            assert [s.subject for s in other.subjects(tenant="globex")] == [SUBJECT]
            assert other.subjects(tenant="initech") == ()

    def test_reads_filtered_by_namespace_leave_hidden_rows_out(
        self, memory: Memory, store_url: str, clock: FrozenClock
    ) -> None:
        clock.set(day(10, 2))
        subjects = ("agent:", "agent:/x", "agent:bo", "agent:planner", "agent:planner/c-7", "c-7")
        ids: dict[str, str | None] = {}
        for n, subject in enumerate(subjects):
            said = event(f"e{n}", "Deliver on Fridays.", occurred_at=day(10, 2), subject=subject)
            (result,) = memory.ingest(said, [pref("friday")]).results
            ids[subject] = result.memory_id
        with memory.store.write() as unit:
            for trace_id, whose, held in (
                ("ctx-True", None, ()),
                ("ctx-False", "agent:planner/c-7", ()),
                ("ctx-held", None, ("agent:bo", "agent:planner")),  # a packet of the tenant
            ):
                trace = StoredTrace(
                    tenant=TENANT,
                    trace_id=trace_id,
                    subject=whose,
                    created_at=day(10, 2),
                    rendered_sha256="0" * 64,
                    body="{}",
                    namespaces=frozenset(held),
                )
                unit.put_trace(trace)
        hidden = {"agent:bo", "agent:planner", "agent:planner/c-7"}
        with _other(store_url, clock) as other, other.store.read() as unit:
            for seen, shown in (
                (frozenset[str](), hidden),
                (frozenset({"agent:planner"}), {"agent:bo"}),
                (frozenset({"agent:planner", "agent:bo"}), set()),
            ):
                listed = [s.subject for s in unit.subjects(TENANT, limit=10, namespaces=seen)]
                assert listed == [s for s in subjects if s not in shown]
                after = unit.subjects(TENANT, after="agent:/x", limit=1, namespaces=seen)
                assert [s.subject for s in after] == [listed[2]]
                for n, subject in enumerate(subjects):
                    visible = subject not in shown
                    record = unit.get_record(TENANT, str(ids[subject]), namespaces=seen)
                    assert (record is not None) == visible, subject
                    assert (unit.get_event(TENANT, f"e{n}", namespaces=seen) is not None) == visible
                found = unit.get_trace(TENANT, "ctx-False", namespaces=seen)
                assert (found is not None) == ("agent:planner" in seen)
                assert unit.get_trace(TENANT, "ctx-True", namespaces=seen) is not None
                of_both = unit.get_trace(TENANT, "ctx-held", namespaces=seen)
                assert (of_both is not None) == (not shown)
                listed_traces = [t.trace_id for t in unit.traces(TENANT, namespaces=seen)]
                assert listed_traces == ["ctx-held"] * (not shown) + ["ctx-True"] + (
                    ["ctx-False"] if seen else []
                )
            assert unit.outbox_pending_subjects(TENANT, after=0) == dict.fromkeys(subjects, 1)
            every = unit.subjects(TENANT, limit=10, namespaces=None)
            assert [s.subject for s in every] == list(subjects)
