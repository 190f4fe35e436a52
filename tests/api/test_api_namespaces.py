"""Several agents (issue 12 item 6): a subject ``agent:<id>`` or under it is that agent's
private namespace. Agent A's private notes never reach agent B's recall, context,
subject views, memory or event lookups, subject list or traces; a key that names A's
namespace in ``reads`` sees them, and so does an admin key."""

from __future__ import annotations

import httpx
import pytest
from api_helpers import KeyClient, agent_clients, post_event

from memledger import Memory
from memledger.testing.scenarios import TENANT

NOTE = "The customer prefers invoices in Norwegian kroner, noted by the planner."
SHARED = "The customer ships orders from the Oslo warehouse."
QUESTION = "Which currency does the customer want invoices in?"


@pytest.fixture
def agents(key_client: KeyClient) -> dict[str, httpx.Client]:
    return {**agent_clients(key_client), "user": key_client("user-42")}


def _ingest(agent: httpx.Client, event_id: str, text: str, subject: str) -> httpx.Response:
    return post_event(agent, event_id, text, occurred_at="2026-10-01T09:00:00Z", subject=subject)


def _recalled(agent: httpx.Client, **body: object) -> list[str]:
    found = agent.post("/v1/recall", json={"query": QUESTION, "k": 20, **body})
    assert found.status_code == 200, found.text
    return [item["record"]["subject"] for item in found.json()["items"]]


def test_private_notes_never_reach_another_agent(
    agents: dict[str, httpx.Client], memory: Memory
) -> None:
    planner, booker = agents["planner"], agents["booker"]
    assert _ingest(planner, "p-1", NOTE, "agent:planner/customer-7").status_code == 200
    assert _ingest(planner, "p-2", SHARED, "customer-7").status_code == 200
    assert planner.post("/v1/process", json={}).status_code == 200

    # the planner reads its own notes and the shared ones, tenant-wide
    assert "agent:planner/customer-7" in _recalled(planner)
    # the booker: the shared memory, never the planner's note, whatever it asks
    for body in ({}, {"k": 100}):
        subjects = _recalled(booker, **body)
        assert "customer-7" in subjects or subjects == []
        assert not any(s.startswith("agent:planner") for s in subjects)
    refused = booker.post(
        "/v1/recall", json={"query": QUESTION, "subject": "agent:planner/customer-7"}
    )
    assert refused.status_code == 403 and refused.json()["code"] == "permission_denied"
    packet = booker.post("/v1/context", json={"request": QUESTION, "budget": 2000})
    assert packet.status_code == 200 and "kroner" not in packet.json()["text"]
    own = planner.post("/v1/context", json={"request": QUESTION, "budget": 2000}).json()
    assert "kroner" in own["text"] and "agent:planner (private)" in own["text"]

    # views, ids and lists of the private namespace are closed to the booker
    for path in (
        "/v1/subjects/agent:planner/customer-7/families",
        "/v1/subjects/agent:planner/customer-7/records",
        "/v1/subjects/agent:planner/customer-7/families/conversation/history",
    ):
        assert booker.get(path).status_code == 403, path
    (note,) = planner.get("/v1/subjects/agent:planner/customer-7/records").json()
    missing = booker.get("/v1/memories/mem-00000000000000000000")
    hidden = booker.get(f"/v1/memories/{note['memory_id']}")
    assert (hidden.status_code, hidden.content) == (missing.status_code, missing.content)
    assert (
        booker.post(f"/v1/memories/{note['memory_id']}/revoke", json={"reason": "x"}).content
        == booker.post("/v1/memories/mem-00000000000000000000/revoke", json={"reason": "x"}).content
    )
    assert booker.get("/v1/events/p-1").content == booker.get("/v1/events/nope-1").content
    listed = [s["subject"] for s in booker.get("/v1/subjects").json()["subjects"]]
    assert "customer-7" in listed and "agent:planner/customer-7" not in listed
    own_trace = own["trace_id"]
    assert booker.get(f"/v1/traces/{own_trace}").status_code == 404
    assert own_trace not in [t["trace_id"] for t in booker.get("/v1/traces").json()]
    assert planner.get(f"/v1/traces/{own_trace}").status_code == 200

    # writing into another agent's namespace is refused, and writes nothing
    wrote = _ingest(booker, "b-1", "Planner notes are wrong.", "agent:planner/customer-7")
    assert wrote.status_code == 403
    assert _ingest(agents["user"], "u-1", "Hi.", "agent:planner").status_code == 403
    assert booker.get("/v1/events/b-1").status_code == 404

    # a key that names the namespace reads it; an admin key reads every namespace
    assert "agent:planner/customer-7" in _recalled(agents["auditor"])
    assert agents["auditor"].get("/v1/me").json()["reads"] == ["agent:planner"]
    assert agents["admin"].get(f"/v1/memories/{note['memory_id']}").status_code == 200
    assert planner.get("/v1/me").json()["namespace"] == "agent:planner"
    assert memory.get(note["memory_id"], tenant=TENANT).subject == "agent:planner/customer-7"
