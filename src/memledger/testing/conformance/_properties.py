"""Property tests over random histories: invariants 4, 5 and 7 for any sequence of writes."""

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


@dataclass(frozen=True)
class Write:
    sequence: int
    value: str
    start_day: int
    length_days: int | None
    granted: bool
    channel: Channel
    scope: str


@dataclass(frozen=True)
class Revoke:
    whole_family: bool


_write = st.builds(
    Write,
    sequence=st.integers(min_value=1, max_value=12),  # repeats and regressions happen
    value=st.sampled_from(["friday", "daily", "monday", "weekly"]),
    start_day=st.integers(min_value=0, max_value=40),
    length_days=st.one_of(st.none(), st.integers(min_value=1, max_value=30)),
    granted=st.booleans(),
    channel=st.sampled_from(["chat", "account_service"]),
    scope=st.sampled_from(["global", "email"]),
)
_operations = st.lists(
    st.one_of(_write, _write, _write, st.builds(Revoke, whole_family=st.booleans())),
    min_size=1,
    max_size=14,
)

Window = tuple[str, str, str, datetime, datetime | None, object]


def _view(memory: Memory, *, as_of: datetime | None = None) -> list[Window]:
    return [
        (r.memory_id, r.source_event_id, r.scope, r.valid_from, r.valid_until, r.value)
        for r in memory.timeline(SUBJECT, FAMILY, tenant=TENANT, as_of=as_of)
    ]


class PropertyChecks:
    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(operations=_operations)
    def test_random_histories_keep_the_invariants(
        self, fresh_url: UrlFactory, operations: list[Write | Revoke]
    ) -> None:
        clock = FrozenClock(day(10, 1))
        memory = Memory(open_store(fresh_url()), clock=clock)
        views: list[tuple[datetime, list[Window]]] = []
        revoked: set[str] = set()  # source events

        last_revision = 0
        for n, op in enumerate(operations):
            clock.advance(timedelta(minutes=1))
            if isinstance(op, Write):
                valid_from = day(10, 1) + timedelta(days=op.start_day)
                valid_until = (
                    None if op.length_days is None else valid_from + timedelta(days=op.length_days)
                )
                source = event(
                    f"evt-{n}",
                    f"delivery {op.value}",
                    occurred_at=day(10, 1),
                    sequence=op.sequence,
                    who=actor(FAMILY) if op.granted else UNGRANTED,
                    channel=op.channel,
                )
                receipt = memory.ingest(
                    source,
                    [
                        pref(
                            op.value, valid_from=valid_from, valid_until=valid_until, scope=op.scope
                        )
                    ],
                )
                if receipt.outcome == "committed" and receipt.revisions:
                    assert receipt.revisions[0].revision == last_revision + 1
                    last_revision += 1
            elif op.whole_family:
                history = memory.history(SUBJECT, FAMILY, tenant=TENANT)
                revoked.update(r.source_event_id for r in history)
                last_revision = memory.revoke_family(SUBJECT, FAMILY, tenant=TENANT).revision
            elif current := _view(memory):
                last_revision = memory.revoke(current[0][0], tenant=TENANT).revision
                revoked.add(current[0][1])
            view = _view(memory)
            assert overlaps(memory) == []  # invariant 4
            assert not revoked & {w[1] for w in view}  # invariant 7
            views.append((clock.now(), view))
        for moment, view in views:  # invariant 5: every past belief stays readable exactly
            assert _view(memory, as_of=moment) == [w for w in view if w[1] not in revoked]
        memory.close()
