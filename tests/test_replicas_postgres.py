"""Read replicas of the PostgreSQL store behind the revision floor, on a real streaming
replica whose WAL replay the tests pause: a read carrying a fresh correction's token
never returns the superseded claim; once replay resumes the replica serves it; a process
reads its own writes; a replica that is down is skipped. The HTTP API's consistency
token routes the same way."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from memledger import Memory
from memledger.api import create_app
from memledger.errors import InvalidInputError, RevisionNotMetError
from memledger.index.derived import DerivedIndex
from memledger.store import open_store
from memledger.store.postgres import PostgresStore
from memledger.testing import FrozenClock
from memledger.testing.http import serve
from memledger.testing.postgres import PostgresServer, Replica, postgres_server
from memledger.testing.scenarios import FAMILY, SUBJECT, TENANT, day, event, pref
from memledger.wire_models import CONSISTENCY_HEADER

NOW = day(10, 5)


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """A server of this module's own: the replica copies only what these tests write,
    not every database the session's other PostgreSQL tests filled the shared one with."""
    with postgres_server() as running:
        yield running


@pytest.fixture(scope="module")
def replica(postgres: PostgresServer) -> Iterator[Replica]:
    with postgres.replica() as running:
        yield running


@pytest.fixture
def database(postgres: PostgresServer, replica: Replica) -> Iterator[tuple[str, str]]:
    """A fresh store on the primary, and its URL on the replica once replayed there."""
    url = postgres.create_database()
    open_store(url).close()
    name = url.rsplit("/", 1)[1]
    _caught_up(postgres, replica)
    on_replica = replica.url(name)
    yield url, on_replica
    replica.resume_replay()


def _caught_up(postgres: PostgresServer, replica: Replica) -> None:
    """Wait until the replica has replayed everything the primary has written so far."""
    ((lsn,),) = postgres.execute("SELECT pg_current_wal_insert_lsn()::text")
    _until(
        lambda: bool(replica.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [lsn])[0][0])
    )


def _until(done: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "the replica did not catch up"
        time.sleep(0.02)


def _open(url: str, tmp_path: Path, **options: object) -> Memory:
    index = DerivedIndex(tmp_path / f"{len(list(tmp_path.iterdir()))}.index", embedder=None)
    return Memory.open(url, clock=FrozenClock(NOW), index=index, **options)  # type: ignore[arg-type]


def _reads(memory: Memory) -> dict[str, int]:
    assert isinstance(memory.store, PostgresStore)
    return dict(memory.store.reads)


def _value(memory: Memory, **options: object) -> str:
    """The current value ("" for none yet)."""
    found = memory.current(SUBJECT, FAMILY, tenant=TENANT, valid_at=NOW, **options)  # type: ignore[arg-type]
    return ",".join(str(record.value) for record in found)


def test_a_read_with_a_fresh_token_never_gets_the_superseded_claim(
    database: tuple[str, str], replica: Replica, tmp_path: Path, postgres: PostgresServer
) -> None:
    url, on_replica = database
    writer = _open(url, tmp_path)
    reader = _open(url, tmp_path, replicas=[on_replica], replica_wait=0.3)
    strict = _open(url, tmp_path, replicas=[on_replica], replica_wait=0.3, stale="fail")
    writer.ingest(event("e-1", "Fridays", occurred_at=day(10, 2), sequence=1), [pref("friday")])
    _until(lambda: _value(reader) == "friday")  # served by the replica
    assert _reads(reader).get("replica", 0) >= 1 and "primary" not in _reads(reader)

    replica.pause_replay()
    fix = writer.ingest(
        event("e-2", "Mondays", occurred_at=day(10, 3), sequence=2), [pref("monday")]
    )
    (token,) = fix.revisions
    # no floor: a replica may lag (eventual), and says nothing it should not
    assert _value(reader) == "friday"
    # the correction's token: the lagging replica is passed over, the primary answers
    assert _value(reader, min_revision=token.revision) == "monday"
    assert _reads(reader)["primary"] == 1 and _reads(reader)["replica_behind"] == 1
    recalled = reader.recall(
        "delivery preference",
        tenant=TENANT,
        subject=SUBJECT,
        min_revision=token.revision,
        valid_at=NOW,
        sync=False,
    )
    assert "friday" not in [i.record.value for i in recalled.items]
    assert _reads(reader)["primary"] == 2
    with pytest.raises(RevisionNotMetError, match=r"no replica .* caught up"):
        _value(strict, min_revision=token.revision)

    replica.resume_replay()
    _caught_up(postgres, replica)  # however loaded the machine: then it must serve
    before = _reads(reader)["replica"]
    _until(lambda: _value(reader, min_revision=token.revision) == "monday")
    assert _reads(reader)["replica"] > before  # the replica serves it again
    assert _value(strict, min_revision=token.revision) == "monday"
    for memory in (writer, reader, strict):
        memory.close()


def test_a_process_reads_its_own_writes_past_a_lagging_replica(
    database: tuple[str, str], replica: Replica, tmp_path: Path
) -> None:
    url, on_replica = database
    memory = _open(url, tmp_path, replicas=[on_replica], replica_wait=0.2)
    memory.ingest(event("e-1", "Fridays", occurred_at=day(10, 2), sequence=1), [pref("friday")])
    _until(lambda: _reads(memory).get("replica", 0) > 0 or _value(memory) == "")
    replica.pause_replay()
    memory.ingest(event("e-2", "Mondays", occurred_at=day(10, 3), sequence=2), [pref("monday")])
    primary = _reads(memory).get("primary", 0)
    assert _value(memory) == "monday"  # no token needed for its own write
    assert _reads(memory)["primary"] == primary + 1
    replica.resume_replay()
    served = _reads(memory).get("replica", 0)
    _until(lambda: (_value(memory), _reads(memory).get("replica", 0))[1] > served)
    assert _value(memory) == "monday"
    memory.close()


def test_a_replica_that_does_not_answer_is_skipped(
    database: tuple[str, str], tmp_path: Path
) -> None:
    url, _ = database
    memory = _open(
        url, tmp_path, replicas=["postgresql://nobody@127.0.0.1:1/none"], replica_wait=0.1
    )
    memory.ingest(event("e-1", "Fridays", occurred_at=day(10, 2), sequence=1), [pref("friday")])
    primary = _reads(memory).get("primary", 0)
    assert _value(memory) == "friday"
    assert _reads(memory)["replica_down"] >= 1 and _reads(memory)["primary"] == primary + 1
    memory.close()


def test_replica_options_are_checked(database: tuple[str, str], tmp_path: Path) -> None:
    url, on_replica = database
    with pytest.raises(InvalidInputError, match="need a PostgreSQL store"):
        Memory.open(tmp_path / "m.db", replicas=[on_replica])
    with pytest.raises(InvalidInputError, match="list of URLs"):
        Memory.open(url, replicas=on_replica)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="stale must be"):
        Memory.open(url, replicas=[on_replica], stale="maybe")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="replica_wait"):
        Memory.open(url, replicas=[on_replica], replica_wait=-1)


def test_the_api_token_routes_every_read_of_its_request(
    database: tuple[str, str], replica: Replica, tmp_path: Path, postgres: PostgresServer
) -> None:
    url, on_replica = database
    writer = _open(url, tmp_path)
    reader = _open(url, tmp_path, replicas=[on_replica], replica_wait=0.2)
    _, token = reader.create_key(TENANT, SUBJECT, grants=[FAMILY])
    writer.ingest(event("e-1", "Fridays", occurred_at=day(10, 2), sequence=1), [pref("friday")])
    # the replica itself holds it (a slow replica would have let the primary answer)
    _caught_up(postgres, replica)
    replica.pause_replay()
    fix = writer.ingest(
        event("e-2", "Mondays", occurred_at=day(10, 3), sequence=2), [pref("monday")]
    )
    header = f"{SUBJECT}/{FAMILY}@{fix.revisions[0].revision}"
    slot = f"/v1/subjects/{SUBJECT}/families/{FAMILY}"
    with (
        serve(create_app(reader)) as base,
        httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as api,
    ):
        stale = api.get(f"{slot}/current", params={"valid_at": NOW.isoformat()})
        fresh = api.get(
            f"{slot}/current",
            params={"valid_at": NOW.isoformat()},
            headers={CONSISTENCY_HEADER: header},
        )
        recalled = api.post(
            "/v1/recall",
            json={"query": "delivery preference", "valid_at": NOW.isoformat()},
            headers={CONSISTENCY_HEADER: header},
        )
        metrics = api.get("/metrics").text
    assert [r["value"] for r in stale.json()] == ["friday"]  # no token: the replica's view
    assert [r["value"] for r in fresh.json()] == ["monday"]
    # recall across the tenant: the token's floor holds for the whole request
    assert recalled.status_code == 200, recalled.text
    assert "friday" not in [i["record"]["value"] for i in recalled.json()["items"]]
    # where reads went, for the operator: the token's reads missed the lagging replica
    routes = dict(re.findall(r'memledger_store_reads_total\{route="(\w+)"\} (\d+)', metrics))
    assert int(routes["replica_behind"]) >= 2 and int(routes["replica"]) >= 1, metrics
    writer.close()
    reader.close()


def test_serve_reads_from_replicas_it_is_given(
    database: tuple[str, str], replica: Replica, tmp_path: Path
) -> None:
    from serve_helpers import start_serve, stop_serve

    url, on_replica = database
    key_file = tmp_path / "admin-key"
    child, base, lines = start_serve(
        url,
        *("--replica", on_replica, "--key-file", str(key_file)),
        *("--tenant", TENANT, "--no-worker"),
    )
    try:
        assert "(reads also from 1 replica(s))" in "".join(lines)
        auth = {"Authorization": f"Bearer {key_file.read_text().strip()}"}
        with httpx.Client(base_url=base, timeout=30, headers=auth) as admin:
            made = admin.post("/v1/keys", json={"actor": SUBJECT, "grants": [FAMILY]})
            assert made.status_code == 201, made.text
        auth = {"Authorization": f"Bearer {made.json()['token']}"}
        with httpx.Client(base_url=base, timeout=30, headers=auth) as api:
            assert api.get("/v1/me").json()["tenant"] == TENANT
            sent = api.post(
                "/v1/events",
                json={
                    "event_id": "e-1",
                    "subject": SUBJECT,
                    "actor": {"id": SUBJECT},
                    "channel": "chat",
                    "occurred_at": day(10, 2).isoformat(),
                    "text": "Fridays suit me.",
                    "claims": [
                        {
                            "family": FAMILY,
                            "kind": "preference",
                            "statement": "Fridays",
                            "value": "friday",
                            "grounding": "Fridays",
                        }
                    ],
                },
            )
            assert sent.status_code in (200, 201), sent.text
            token = sent.headers[CONSISTENCY_HEADER]
            current = api.get(
                f"/v1/subjects/{SUBJECT}/families/{FAMILY}/current",
                params={"valid_at": NOW.isoformat()},
                headers={CONSISTENCY_HEADER: token},
            )
            assert [r["value"] for r in current.json()] == ["friday"], current.text
    finally:
        out = stop_serve(child)
    assert child.returncode == 0, out
