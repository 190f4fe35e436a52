"""Property tests over random histories: invariants 4, 5 and 7 for any sequence of writes.

The examples run per test are few by default (a quick suite). For a long, nightly
search run the conformance tests under the ``nightly`` profile, registered in the
repository's ``tests/conftest.py``::

    HYPOTHESIS_PROFILE=nightly .venv/bin/python -m pytest -p no:xdist -q \
        tests/test_conformance_sqlite.py

A backend's own test suite may register a profile of that name too: any loaded
profile asking for more than hypothesis's default 100 examples is used as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memledger.domain.records import Channel
from memledger.memory import Memory
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.conformance._base import UrlFactory
from memledger.testing.scenarios import (
    FAMILY,
    SUBJECT,
    TENANT,
    UNGRANTED,
    actor,
    day,
    event,
    overlaps,
    pref,
)

FAST_EXAMPLES = 25


def examples(fast: int = FAST_EXAMPLES) -> int:
    """``fast``, unless the loaded hypothesis profile asks for more than the default 100
    examples (the nightly profile): then that many."""
    loaded = settings().max_examples
    return loaded if loaded > 100 else fast


SUBJECTS = (SUBJECT, "user-7", "customer-account-72")
FAMILIES = (FAMILY, "contact_preference")
CHANNELS: tuple[Channel, ...] = ("chat", "account_service", "system", "tool", "document", "web")


@dataclass(frozen=True)
class Write:
    subject: str
    family: str
    sequence: int
    value: str
    occurred_day: int
    start_day: int
    length_days: int | None
    granted: bool
    channel: Channel
    scope: str


@dataclass(frozen=True)
class Revoke:
    subject: str
    family: str
    whole_family: bool


_write = st.builds(
    Write,
    subject=st.sampled_from(SUBJECTS),
    family=st.sampled_from(FAMILIES),
    sequence=st.integers(min_value=1, max_value=12),  # repeats and regressions happen
    value=st.sampled_from(["friday", "daily", "monday", "weekly"]),
    occurred_day=st.integers(min_value=0, max_value=20),  # arrival order is not time order
    start_day=st.integers(min_value=0, max_value=40),
    length_days=st.one_of(st.none(), st.integers(min_value=1, max_value=30)),
    granted=st.booleans(),
    channel=st.sampled_from(CHANNELS),
    scope=st.sampled_from(["global", "email"]),
)
_operations = st.lists(
    st.one_of(
        _write,
        _write,
        _write,
        st.builds(
            Revoke,
            subject=st.sampled_from(SUBJECTS),
            family=st.sampled_from(FAMILIES),
            whole_family=st.booleans(),
        ),
    ),
    min_size=1,
    max_size=20,
)

Window = tuple[str, str, str, datetime, datetime | None, object]
Slot = tuple[str, str]
SLOTS: tuple[Slot, ...] = tuple((s, f) for s in SUBJECTS for f in FAMILIES)


def _view(memory: Memory, slot: Slot, *, as_of: datetime | None = None) -> list[Window]:
    subject, family = slot
    return [
        (r.memory_id, r.source_event_id, r.scope, r.valid_from, r.valid_until, r.value)
        for r in memory.timeline(subject, family, tenant=TENANT, as_of=as_of)
    ]


class PropertyChecks:
    @settings(
        max_examples=examples(),
        deadline=None,
        # one method, one executor per backend (the SQLite and the PostgreSQL subclass):
        # the backend is the parameter, by design
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.differing_executors,
        ],
    )
    @given(operations=_operations)
    def test_random_histories_keep_the_invariants(
        self, fresh_url: UrlFactory, operations: list[Write | Revoke]
    ) -> None:
        clock = FrozenClock(day(11, 1))
        memory = Memory(open_store(fresh_url()), clock=clock)
        views: list[tuple[datetime, dict[Slot, list[Window]]]] = []
        revoked: set[str] = set()  # source events
        last_revision = dict.fromkeys(SLOTS, 0)
        for n, op in enumerate(operations):
            clock.advance(timedelta(minutes=1))
            slot = (op.subject, op.family)
            if isinstance(op, Write):
                valid_from = day(10, 1) + timedelta(days=op.start_day)
                valid_until = (
                    None if op.length_days is None else valid_from + timedelta(days=op.length_days)
                )
                source = event(
                    f"evt-{n}",
                    f"delivery {op.value}",
                    occurred_at=day(10, 1) + timedelta(days=op.occurred_day),
                    sequence=op.sequence,
                    who=actor(*FAMILIES, actor_id=op.subject) if op.granted else UNGRANTED,
                    channel=op.channel,
                    subject=op.subject,
                )
                claim = pref(
                    op.value,
                    valid_from=valid_from,
                    valid_until=valid_until,
                    scope=op.scope,
                    family=op.family,
                )
                receipt = memory.ingest(source, [claim])
                if receipt.outcome == "committed" and receipt.revisions:
                    assert [r.family for r in receipt.revisions] == [op.family]
                    assert receipt.revisions[0].revision == last_revision[slot] + 1
                    last_revision[slot] += 1
            elif op.whole_family:
                history = memory.history(op.subject, op.family, tenant=TENANT)
                revoked.update(r.source_event_id for r in history)
                family = memory.revoke_family(op.subject, op.family, tenant=TENANT)
                last_revision[slot] = family.revision
            elif current := _view(memory, slot):
                last_revision[slot] = memory.revoke(current[0][0], tenant=TENANT).revision
                revoked.add(current[0][1])
            view = {key: _view(memory, key) for key in SLOTS}
            for subject in SUBJECTS:
                assert overlaps(memory, subject=subject) == []  # invariant 4
            for windows in view.values():
                assert not revoked & {w[1] for w in windows}  # invariant 7
            views.append((clock.now(), view))
        for moment, view in views:  # invariant 5: every past belief stays readable exactly
            for key, windows in view.items():
                past = _view(memory, key, as_of=moment)
                assert past == [w for w in windows if w[1] not in revoked], (moment, key)
        memory.close()
