"""Grants survive the store unchanged: the worker decides exactly as the direct path.

A job's event is read back from the ledger, grants included, before its claims are
committed; a grant that came back wider than it went in would authorise on the
worker path what the direct path refused (issue 9, defect 4).
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memledger import Actor, Claim, Grant, Memory, SourceEvent
from memledger.store.sqlite import SQLiteStore
from memledger.testing import FrozenClock, FunctionExtractor
from memledger.testing.scenarios import day
from memledger.write.worker import WorkerSettings

FAMILIES = ["delivery_preference", "home_city", "plan"]
SCOPES = ["global", "email", "x", "turn:a", "x:y"]

_grant = st.builds(
    Grant,
    family=st.sampled_from(["*", *FAMILIES]),
    scope=st.sampled_from(["*", *SCOPES]),
)
_claim = st.tuples(st.sampled_from(FAMILIES), st.sampled_from(SCOPES))
_tenants = itertools.count()
TEXT = "Please remember that this is what I want from now on."


def _claim_of(family: str, scope: str) -> Claim:
    kind = "preference" if family == "delivery_preference" else "fact"
    return Claim(
        family=family,
        kind=kind,
        statement=TEXT,
        value="v",
        scope=scope,
        grounding=TEXT,
    )


def _event(
    tenant: str, event_id: str, grants: frozenset[Grant], authenticated: bool
) -> SourceEvent:
    return SourceEvent(
        tenant=tenant,
        event_id=event_id,
        subject="user-1",
        actor=Actor(id="user-1", authenticated=authenticated, grants=grants),
        channel="chat",
        occurred_at=day(3, 1),
        text=TEXT,
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    grants=st.frozensets(_grant, max_size=3),
    claims=st.lists(_claim, min_size=1, max_size=3, unique=True),
    authenticated=st.booleans(),
)
def test_the_worker_path_decides_as_the_direct_path(
    tmp_path_factory: object,
    grants: frozenset[Grant],
    claims: list[tuple[str, str]],
    authenticated: bool,
) -> None:
    tenant = f"t{next(_tenants)}"
    folder = Path(tmp_path_factory.mktemp("grants"))  # type: ignore[attr-defined]
    memory = Memory.open(f"sqlite:///{folder / 'm.db'}", clock=FrozenClock(day(3, 2)))
    try:
        proposed = [_claim_of(family, scope) for family, scope in claims]
        direct = memory.ingest(_event(tenant, "direct", grants, authenticated), proposed)
        tenant = f"{tenant}-worker"  # the same words, decided again elsewhere
        memory.ingest(_event(tenant, "queued", grants, authenticated))
        stored = memory.event("queued", tenant=tenant)
        assert stored.actor.grants == grants  # not one grant wider, narrower or split
        memory.process(
            extractor=FunctionExtractor(lambda _: proposed),
            tenant=tenant,
            settings=WorkerSettings(episodes=False),
        )
        (job,) = memory.jobs(tenant=tenant, open_only=False)
        worker = memory.ingest(_event(tenant, "queued", grants, authenticated))
        assert worker.duplicate and job.status == "done"

        def decisions(receipt_results: object) -> list[tuple[str, str, str, str | None]]:
            return sorted(
                (r.family, r.scope, r.disposition, r.reason)
                for r in receipt_results  # type: ignore[attr-defined]
            )

        assert decisions(worker.results) == decisions(direct.results)
    finally:
        memory.close()


def test_grants_are_stored_as_pairs(tmp_path: Path) -> None:
    memory = Memory.open(f"sqlite:///{tmp_path / 'm.db'}", clock=FrozenClock(day(3, 2)))
    grants = frozenset({Grant(family="plan", scope="x:y"), Grant(family="*", scope="email")})
    memory.ingest(_event("acme", "e1", grants, True))
    memory.close()
    with sqlite3.connect(tmp_path / "m.db") as conn:
        (text,) = conn.execute("SELECT actor_grants FROM events").fetchone()
    assert json.loads(text) == [["*", "email"], ["plan", "x:y"]]


def test_old_grant_text_is_never_read_wider(tmp_path: Path) -> None:
    """Rows written before schema 3 kept grants as "family:scope" text. Text that no valid
    grant writes (it came from Grant(scope=""), Grant("*", ""), Grant("plan:x")) granted
    nothing on the direct path, so it grants nothing when read back."""
    path = tmp_path / "m.db"
    memory = Memory.open(f"sqlite:///{path}", clock=FrozenClock(day(3, 2)))
    memory.ingest(_event("acme", "old", frozenset(), True))
    memory.close()
    legacy = ["home_city:", "*:", "plan:x:*", "delivery_preference:email", "home_city:*"]
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE events SET actor_grants = ?", (json.dumps(legacy),))
    store = SQLiteStore(path)
    try:
        with store.read() as unit:
            stored = unit.get_event("acme", "old")
        assert stored is not None
        assert stored.event.actor.grants == frozenset(
            {Grant(family="delivery_preference", scope="email"), Grant(family="home_city")}
        )
    finally:
        store.close()
