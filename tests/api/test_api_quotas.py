"""Per-tenant quotas over HTTP: each kind at exactly its limit and one past it, the
refusal a 429 ``quota_exceeded`` (with ``Retry-After`` where waiting helps) that
changes nothing. The quotas are set over HTTP; what a test checks goes over HTTP."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from api_helpers import Clients, event_json, ok, pref_json, problem

from memledger import Memory
from memledger.domain.quotas import RateGate
from memledger.testing import FrozenClock
from memledger.testing.scenarios import FAMILY, SUBJECT, day
from memledger.wire import isoformat

WHEN = isoformat(day(10, 1))


@pytest.fixture
def still(memory: Memory) -> list[float]:
    """The time of the server's recall buckets, held still: a test moves it by hand."""
    now = [0.0]
    memory._tenant_quotas.rates = RateGate(clock=lambda: now[0])
    return now


def _quotas(clients: Clients, **quotas: int) -> None:
    ok(clients.admin.put("/v1/quotas", json=quotas))


def _stated(event_id: str, subject: str) -> dict[str, object]:
    return event_json(
        event_id, "Fridays", occurred_at=WHEN, subject=subject, claims=[pref_json("friday")]
    )


def _queued(event_id: str) -> dict[str, object]:
    return event_json(event_id, "Deliver my digest on Fridays.", occurred_at=WHEN)


def _current(api: httpx.Client, subject: str) -> list[object]:
    found = ok(api.get(f"/v1/subjects/{subject}/families/{FAMILY}/current")).json()
    return [r["value"] for r in found]


def _refused(response: httpx.Response, quota: str) -> dict[str, object]:
    body = problem(response, 429, "quota_exceeded")
    assert quota in str(body["detail"]), body
    return body


def test_records_past_the_quota_are_429_and_change_nothing(clients: Clients) -> None:
    _quotas(clients, max_records=2)
    api = clients.service
    for n in range(2):  # exactly the quota
        ok(api.post("/v1/events", json=_stated(f"e{n}", f"s{n}")))
    refused = api.post("/v1/events", json=_stated("e2", "s2"))
    _refused(refused, "max_records")
    assert "Retry-After" not in refused.headers  # not until the tenant holds less
    _refused(api.post("/v1/events/batch", json=[_stated("e3", "s3")]), "max_records")
    assert _current(api, "s2") == [] and _current(api, "s3") == []
    for event_id in ("e2", "e3"):
        problem(api.get(f"/v1/events/{event_id}"), 404, "event_not_found")
    assert ok(api.post("/v1/events", json=_stated("e0", "s0"))).json()["duplicate"]


def test_jobs_past_the_minute_quota_are_429_with_retry_after_and_change_nothing(
    clients: Clients, clock: FrozenClock
) -> None:
    _quotas(clients, jobs_per_minute=2)
    api = clients.writer
    for n in range(2):  # exactly the quota
        assert ok(api.post("/v1/events", json=_queued(f"q{n}"))).json()["outcome"] == "queued"
    one = api.post("/v1/events", json=_queued("q2"))
    _refused(one, "jobs_per_minute")
    assert one.headers["Retry-After"] == "60"
    batch = api.post("/v1/events/batch", json=[_queued("q3")])
    assert "event #1" in str(_refused(batch, "jobs_per_minute")["detail"])
    assert batch.headers["Retry-After"] == "60"  # a batch's refusal says when, too
    for event_id in ("q2", "q3"):
        problem(api.get(f"/v1/events/{event_id}"), 404, "event_not_found")
    assert len(ok(clients.admin.get("/v1/jobs")).json()) == 2
    clock.advance(timedelta(minutes=1, seconds=1))
    assert ok(api.post("/v1/events", json=_queued("q2"))).json()["outcome"] == "queued"


def test_recalls_past_a_seconds_worth_are_429_with_retry_after(
    clients: Clients, still: list[float]
) -> None:
    _quotas(clients, recalls_per_second=2)
    reader = clients.reader
    for _ in range(2):  # a second's worth, exactly
        ok(reader.post("/v1/recall", json={"query": "digest", "subject": SUBJECT}))
    busy = reader.post("/v1/recall", json={"query": "digest", "subject": SUBJECT})
    _refused(busy, "recalls per second")
    assert busy.headers["Retry-After"] == "1"  # half a second, rounded up
    packet = clients.admin.post("/v1/context", json={"request": "digest", "budget": 100})
    _refused(packet, "recalls per second")
    still[0] = 0.5  # one token back
    ok(reader.post("/v1/recall", json={"query": "digest", "subject": SUBJECT}))


def test_a_packet_past_its_token_quota_is_429_and_at_it_is_served(
    clients: Clients, still: list[float]
) -> None:
    _quotas(clients, packet_tokens=300, recalls_per_second=1)
    admin = clients.admin
    big = admin.post("/v1/context", json={"request": "digest", "budget": 301})
    _refused(big, "packet_tokens")
    assert "Retry-After" not in big.headers  # a smaller budget helps, not waiting
    # the refused packet took no recall: the one a second is still there
    served = ok(admin.post("/v1/context", json={"request": "digest", "budget": 300})).json()
    assert served["tokens"] <= 300
