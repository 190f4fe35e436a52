"""Tenant isolation over HTTP: a key of tenant ``acme`` can neither read nor write
tenant ``globex``, nor learn that globex's ids, subjects or families exist: for
another tenant's id the status and the body bytes are those of a missing id."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
import pytest
from api_helpers import Clients, KeyClient, event_json, ok, post_event, pref_json, problem

from memledger import Memory
from memledger.testing.scenarios import FAMILY, TENANT, day, snapshot
from memledger.wire import isoformat

B_SUBJECT = "user-77"


@dataclass(frozen=True, slots=True)
class Globex:
    memory_id: str
    event_id: str
    review_id: str
    trace_id: str
    key_id: str


@pytest.fixture
def globex(clients: Clients) -> Globex:
    """Tenant globex's data, written with its own admin key."""
    b = clients.other
    written = ok(
        post_event(
            b,
            "evt-globex",
            "Secret: deliver on Mondays to the bunker",
            occurred_at=isoformat(day(10, 2)),
            subject=B_SUBJECT,
            claims=[pref_json("monday-bunker")],
        )
    ).json()
    (result,) = written["results"]
    ok(b.post("/v1/families", json={"name": "diet", "kinds": ["preference"]}))
    for event_id, value in (("g-a", "friday"), ("g-b", "monday")):
        held = ok(
            post_event(
                b,
                event_id,
                value,
                occurred_at=isoformat(day(10, 3)),
                subject="user-78",
                claims=[pref_json(value)],
            )
        ).json()
    packet = ok(
        b.post("/v1/context", json={"request": "deliver when?", "subject": B_SUBJECT})
    ).json()
    keys = ok(b.get("/v1/keys")).json()
    return Globex(
        memory_id=result["memory_id"],
        event_id="evt-globex",
        review_id=held["review_id"],
        trace_id=packet["trace_id"],
        key_id=keys[0]["key_id"],
    )


@pytest.fixture
def initech(key_client: KeyClient) -> httpx.Client:
    """An admin of tenant ``initech``, a tenant with nothing at all."""
    return key_client("admin-i", "initech", role="admin")


def same(a: httpx.Response, b: httpx.Response) -> None:
    """Byte for byte the same answer (status, media type and body)."""
    assert a.status_code == b.status_code, (a.text, b.text)
    assert a.headers["content-type"] == b.headers["content-type"]
    assert a.content == b.content


def test_another_tenants_ids_are_answered_as_missing_ones(
    clients: Clients, globex: Globex, initech: httpx.Client
) -> None:
    a, third = clients.admin, initech
    reason = {"reason": "probe"}
    probes: list[tuple[str, str, dict[str, str] | None, str, str]] = [
        ("GET", "/v1/memories/{}", None, globex.memory_id, "mem-0000000000000000dead"),
        ("POST", "/v1/memories/{}/revoke", reason, globex.memory_id, "mem-0000000000000000dead"),
        ("GET", "/v1/events/{}", None, globex.event_id, "evt-missing"),
        ("POST", "/v1/events/{}/forget", reason, globex.event_id, "evt-missing"),
        ("POST", "/v1/reviews/{}/accept", reason, globex.review_id, "rev-0000000000000000dead"),
        ("POST", "/v1/reviews/{}/reject", reason, globex.review_id, "rev-0000000000000000dead"),
        ("GET", "/v1/traces/{}", None, globex.trace_id, "ctx-00000000000000000000"),
        ("POST", "/v1/traces/{}/replay", None, globex.trace_id, "ctx-00000000000000000000"),
        ("POST", "/v1/keys/{}/revoke", None, globex.key_id, "mlk_000000000000"),
    ]
    for method, path, body, theirs, missing in probes:
        foreign = a.request(method, path.format(theirs), json=body)
        assert foreign.status_code == 404, (path, foreign.text)
        same(foreign, a.request(method, path.format(missing), json=body))
        same(foreign, third.request(method, path.format(theirs), json=body))
    # nothing of globex changed
    b = clients.other
    assert ok(b.get(f"/v1/memories/{globex.memory_id}")).json()["status"] == "active"
    assert len(ok(b.get("/v1/reviews")).json()) == 1
    assert all(k["revoked_at"] is None for k in ok(b.get("/v1/keys")).json())


def test_another_tenants_subjects_and_families_are_not_seen(
    clients: Clients, globex: Globex, initech: httpx.Client
) -> None:
    a, third = clients.admin, initech
    for path in (
        f"/v1/subjects/{B_SUBJECT}/families",
        f"/v1/subjects/{B_SUBJECT}/records",
        f"/v1/subjects/{B_SUBJECT}/families/{FAMILY}/current",
        f"/v1/subjects/{B_SUBJECT}/families/{FAMILY}/timeline",
        f"/v1/subjects/{B_SUBJECT}/families/{FAMILY}/history",
        f"/v1/subjects/{B_SUBJECT}/families/{FAMILY}/changes",
        f"/v1/subjects/{B_SUBJECT}/families/diet/current",  # registered for globex only
        f"/v1/subjects/{B_SUBJECT}/families/diet/history",
    ):
        foreign = a.get(path)
        same(foreign, a.get(path.replace(B_SUBJECT, "user-nobody")))
        same(foreign, third.get(path))
    problem(a.get(f"/v1/subjects/{B_SUBJECT}/families/diet/current"), 400, "unknown_family")
    assert "diet" not in [f["name"] for f in ok(a.get("/v1/families")).json()]
    assert "diet" in [f["name"] for f in ok(clients.other.get("/v1/families")).json()]
    # recall, context, traces, reviews, jobs and keys show nothing of globex
    asked = {"query": "deliver on Mondays to the bunker", "valid_at": isoformat(day(10, 5))}
    assert "monday-bunker" in ok(clients.other.post("/v1/recall", json=asked)).text
    recalled = ok(a.post("/v1/recall", json=asked))
    assert recalled.json()["items"] == [] and recalled.json()["excluded"] == []
    packet = ok(
        a.post(
            "/v1/context",
            json={"request": "deliver on Mondays to the bunker?", "valid_at": asked["valid_at"]},
        )
    )
    for text in (recalled.text, packet.text):
        assert "monday-bunker" not in text and globex.memory_id not in text
    for path in ("/v1/traces", "/v1/reviews?all=true", "/v1/jobs?all=true", "/v1/keys"):
        assert "globex" not in ok(a.get(path)).text, path
    assert globex.trace_id not in ok(a.get("/v1/traces")).text


def test_naming_another_tenant_is_refused_and_writes_nothing(
    clients: Clients, globex: Globex, memory: Memory
) -> None:
    a = clients.admin
    before = {
        t: snapshot(memory, tenant=t, subjects=["user-42", B_SUBJECT]) for t in (TENANT, "globex")
    }
    one = event_json(
        "evt-x", "Fridays", occurred_at=isoformat(day(10, 4)), claims=[pref_json("friday")]
    )
    writes = [
        ("POST", "/v1/events", {**one, "tenant": "globex"}),
        ("POST", "/v1/events/batch", [one, {**one, "event_id": "evt-y", "tenant": "globex"}]),
        ("POST", f"/v1/memories/{globex.memory_id}/revoke", {"reason": "x", "tenant": "globex"}),
        ("POST", "/v1/events/evt-globex/forget", {"reason": "x", "tenant": "globex"}),
        ("POST", "/v1/keys", {"actor": "mallory", "role": "admin", "tenant": "globex"}),
        ("POST", "/v1/families", {"name": "spy", "kinds": ["fact"], "tenant": "globex"}),
        ("POST", "/v1/process", {"tenant": "globex"}),
        ("POST", "/v1/recall", {"query": "deliver", "tenant": "globex"}),
        ("POST", "/v1/context", {"request": "deliver?", "tenant": "globex"}),
        ("POST", "/v1/corpus/search", {"query": "deliver", "tenant": "globex"}),
        (
            "POST",
            "/v1/corpus/documents",
            {"name": "x", "content": "# x\n\nhello there", "tenant": "globex"},
        ),
    ]
    for method, path, body in writes:
        problem(a.request(method, path, json=body), 403, "permission_denied")
    for path in (
        "/v1/jobs?tenant=globex",
        f"/v1/subjects/{B_SUBJECT}/families?tenant=globex",
        f"/v1/memories/{globex.memory_id}?tenant=globex",
    ):
        problem(a.get(path), 403, "permission_denied")
    after = {
        t: snapshot(memory, tenant=t, subjects=["user-42", B_SUBJECT]) for t in (TENANT, "globex")
    }
    assert after == before
    assert [k["actor"] for k in ok(clients.other.get("/v1/keys")).json()] == ["admin-g"]
    # naming one's own tenant is fine
    ok(a.post("/v1/events", json={**one, "tenant": TENANT}))
