"""Namespaces are invisible (DESIGN.md invariant 13), probed as a second agent of the same
tenant would: subject paging, the job list, recall's understanding, forgetting a shared
event and revoking a shared memory whose words another agent's private notes hold.
Every check compares what the booker sees with what it would see if the planner's
private namespace did not exist, and checks that nothing the booker does changes it."""

from __future__ import annotations

import json
from datetime import timedelta

import httpx
import pytest
from api_helpers import KeyClient, agent_clients, ok, post_event, pref_json, problem

from memledger.testing import FrozenClock
from memledger.testing.scenarios import FAMILY

PRIVATE = "agent:planner/customer-7"
SHARED = "customer-7"
WHEN = "2026-10-01T09:00:00Z"


@pytest.fixture
def agents(key_client: KeyClient) -> dict[str, httpx.Client]:
    return agent_clients(key_client, grants=[FAMILY])


def _pages(agent: httpx.Client, **query: object) -> list[tuple[list[str], str | None]]:
    """Every page of ``GET /v1/subjects`` with ``query``, following ``next``."""
    pages: list[tuple[list[str], str | None]] = []
    after: str | None = None
    while True:
        params = {**query, **({} if after is None else {"after": after})}
        body = ok(agent.get("/v1/subjects", params=params)).json()
        pages.append(([s["subject"] for s in body["subjects"]], body["next"]))
        after = body["next"]
        if after is None:
            return pages


def test_subject_pages_never_name_or_count_a_hidden_namespace(
    agents: dict[str, httpx.Client],
) -> None:
    planner, booker = agents["planner"], agents["booker"]
    shared = ["agent:", "agent:/shared", "customer-1", "customer-7", "customer-9"]
    hidden = ["agent:planner", "agent:planner/customer-1", PRIVATE, "agent:planner/customer-8"]
    for n, subject in enumerate(sorted(shared + hidden)):
        ok(post_event(planner, f"e-{n}", "Hello.", occurred_at=WHEN, subject=subject))
    expected = [([s], s) for s in shared[:-1]] + [([shared[-1]], None)]
    assert _pages(booker, limit=1) == expected  # full pages, every cursor a shared subject
    assert _pages(booker, limit=2) == [
        (shared[:2], shared[1]),
        (shared[2:4], shared[3]),
        (shared[4:], None),
    ]
    assert _pages(booker, prefix="agent", limit=1) == [
        (["agent:"], "agent:"),
        (["agent:/shared"], None),
    ]
    assert _pages(booker, prefix="agent:planner") == [([], None)]
    assert _pages(booker, prefix="agent:planner", after="agent:planner") == [([], None)]
    # the reader of the namespace and its owner page through it; counts are the rows'
    seen = [s for page, _ in _pages(agents["auditor"], limit=1) for s in page]
    assert seen == sorted(shared + hidden)
    assert [s for page, _ in _pages(planner, limit=3) for s in page] == sorted(shared + hidden)
    (one,) = booker.get("/v1/subjects", params={"prefix": SHARED}).json()["subjects"]
    assert (one["subject"], one["events"], one["families"]) == (SHARED, 1, 0)


def test_jobs_list_only_events_the_key_may_read(agents: dict[str, httpx.Client]) -> None:
    planner, booker = agents["planner"], agents["booker"]
    ok(post_event(planner, "p-1", "Bills in kroner.", occurred_at=WHEN, subject=PRIVATE))
    ok(post_event(planner, "s-1", "Ships from Oslo.", occurred_at=WHEN, subject=SHARED))
    for done in (False, True):
        if done:
            ok(planner.post("/v1/process", json={}))
        for query in ({}, {"all": "true"}):
            listed = ok(booker.get("/v1/jobs", params=query)).json()
            assert "p-1" not in json.dumps(listed), listed
            assert [j["event_id"] for j in listed] == ([] if done and not query else ["s-1"])
            owned = ok(planner.get("/v1/jobs", params=query)).json()
            assert sorted(j["event_id"] for j in owned) == (
                [] if done and not query else ["p-1", "s-1"]
            )
    assert booker.get("/v1/events/p-1").content == booker.get("/v1/events/nope-1").content


def test_recall_understands_no_name_of_a_hidden_namespace(
    agents: dict[str, httpx.Client],
) -> None:
    planner, booker = agents["planner"], agents["booker"]
    oksana = "agent:planner/oksana"
    ok(
        post_event(
            planner, "p-1", "Invoices for Oksana in kroner.", occurred_at=WHEN, subject=oksana
        )
    )
    ok(planner.post("/v1/process", json={}))
    question = {"query": "What currency does Oksana want?", "k": 10}
    mine = ok(planner.post("/v1/recall", json=question)).json()
    assert mine["understood"]["people"] == ["agent:planner/oksana"]
    theirs = ok(booker.post("/v1/recall", json=question)).json()
    assert theirs["understood"]["people"] == [] and theirs["items"] == []
    assert "planner" not in json.dumps(theirs)


def _private_status(agents: dict[str, httpx.Client], memory_id: str) -> str:
    return str(ok(agents["planner"].get(f"/v1/memories/{memory_id}")).json()["status"])


def _private_note(planner: httpx.Client, text: str, claim_subject: str) -> str:
    """The id of the one memory of the planner's event ``p-1``, said in its private
    namespace: a claim of ``weekly`` about ``claim_subject``."""
    said = post_event(
        planner,
        "p-1",
        text,
        occurred_at=WHEN,
        subject=PRIVATE,
        claims=[pref_json("weekly", subject=claim_subject)],
    )
    (result,) = ok(said).json()["results"]
    return str(result["memory_id"])


def _written(
    planner: httpx.Client,
    event_id: str,
    text: str,
    *,
    subject: str,
    claims: list[dict[str, object]],
) -> tuple[str, str]:
    """The shared and the private memory the planner's event wrote."""
    said = post_event(planner, event_id, text, occurred_at=WHEN, subject=subject, claims=claims)
    receipt = ok(said).json()
    by_subject = {}
    for result in receipt["results"]:
        found = ok(planner.get(f"/v1/memories/{result['memory_id']}")).json()
        by_subject[found["subject"]] = found["memory_id"]
    return by_subject[SHARED], by_subject[PRIVATE]


def _noted_by_both(planner: httpx.Client, event_id: str, text: str, value: str) -> tuple[str, str]:
    """The shared and the private memory of the planner's event in the shared namespace
    that claims ``value`` for the shared subject and again for the planner's own note."""
    claims = [pref_json(value, subject=each) for each in (SHARED, PRIVATE)]
    return _written(planner, event_id, text, subject=SHARED, claims=claims)


def test_forgetting_a_shared_event_leaves_another_agents_records(
    agents: dict[str, httpx.Client],
) -> None:
    planner, booker = agents["planner"], agents["booker"]
    said = "Deliver weekly, and note it for me."
    shared_id, private_id = _noted_by_both(planner, "s-1", said, "weekly")

    forgot = ok(booker.post("/v1/events/s-1/forget", json={"reason": "wrong"}))
    body = forgot.json()
    assert [(r["subject"], r["revoked"]) for r in body["revocations"]] == [(SHARED, [shared_id])]
    assert "planner" not in forgot.text and private_id not in forgot.text
    assert "planner" not in forgot.headers.get("Memledger-Consistency", "")
    assert _private_status(agents, private_id) == "active"  # the planner's note stands
    assert ok(booker.get(f"/v1/memories/{shared_id}")).json()["status"] == "revoked"
    again = ok(booker.post("/v1/events/s-1/forget", json={"reason": "wrong"})).json()
    assert again["revocations"] == [] and _private_status(agents, private_id) == "active"
    # the planner itself may forget its own note: the event's other record is gone already
    own = ok(planner.post("/v1/events/s-1/forget", json={"reason": "mine"})).json()
    assert [(r["subject"], r["revoked"]) for r in own["revocations"]] == [(PRIVATE, [private_id])]
    # the booker's forget did not stop writes from the event into the planner's namespace;
    # the planner's, which covers every record the event gave, did
    log = ok(agents["admin"].get("/v1/change-log")).json()
    assert sorted((c["reason"], c["forgotten"]) for c in log) == [("mine", ["s-1"]), ("wrong", [])]


def test_revoking_a_shared_memory_leaves_the_same_words_in_a_private_note(
    agents: dict[str, httpx.Client],
) -> None:
    planner, booker = agents["planner"], agents["booker"]
    shared_id, private_id = _noted_by_both(planner, "s-2", "Deliver on Fridays.", "fridays")

    revoked = ok(booker.post(f"/v1/memories/{shared_id}/revoke", json={"reason": "wrong"}))
    body = revoked.json()
    assert (body["subject"], body["revoked"], body["also"]) == (SHARED, [shared_id], [])
    assert "planner" not in revoked.text and private_id not in revoked.text
    assert _private_status(agents, private_id) == "active"
    # the private note, named by id: answered as a missing id, and left as it is
    missing = booker.post("/v1/memories/mem-00000000000000000000/revoke", json={"reason": "x"})
    hidden = booker.post(f"/v1/memories/{private_id}/revoke", json={"reason": "x"})
    assert (hidden.status_code, hidden.content) == (missing.status_code, missing.content)
    problem(hidden, 404, "memory_not_found")
    assert _private_status(agents, private_id) == "active"
    # a key that reads the namespace but may not write there is refused, as before
    refused = agents["admin"].post(f"/v1/memories/{private_id}/revoke", json={"reason": "x"})
    problem(refused, 403, "permission_denied")
    assert _private_status(agents, private_id) == "active"


def test_forgetting_a_private_event_is_answered_as_a_missing_one(
    agents: dict[str, httpx.Client],
) -> None:
    planner, booker = agents["planner"], agents["booker"]
    private_id = _private_note(planner, "Deliver weekly.", PRIVATE)
    hidden = booker.post("/v1/events/p-1/forget", json={"reason": "x"})
    missing = booker.post("/v1/events/nope-1/forget", json={"reason": "x"})
    assert (hidden.status_code, hidden.content) == (missing.status_code, missing.content)
    problem(hidden, 404, "event_not_found")
    assert _private_status(agents, private_id) == "active"


def test_trace_pages_are_filled_with_what_the_key_may_see(
    agents: dict[str, httpx.Client], clock: FrozenClock
) -> None:
    planner, booker = agents["planner"], agents["booker"]
    _private_note(planner, "Deliver weekly.", PRIVATE)
    ask = {"request": "How should deliveries go?", "budget": 500}
    mine = ok(booker.post("/v1/context", json=ask)).json()["trace_id"]
    for n, body in enumerate(({**ask, "subject": PRIVATE}, ask, {**ask, "subject": PRIVATE})):
        clock.set(clock.now() + timedelta(minutes=n + 1))
        packet = ok(planner.post("/v1/context", json=body)).json()
        assert any(i.get("memory_id") for i in packet["items"]), packet  # the planner's note
    for limit in (1, 2, 20):
        listed = ok(booker.get("/v1/traces", params={"limit": limit})).json()
        assert [t["trace_id"] for t in listed] == [mine]
    assert len(ok(planner.get("/v1/traces", params={"limit": 3})).json()) == 3


def test_revoking_a_shared_memory_leaves_a_private_episode_of_its_event(
    agents: dict[str, httpx.Client],
) -> None:
    planner, booker = agents["planner"], agents["booker"]
    turn = {
        "family": "conversation",
        "kind": "episode",
        "statement": "Deliver weekly, said the customer.",
        "value": {"text": "Deliver weekly, said the customer."},
        "subject": PRIVATE,
    }
    shared_id, private_id = _written(
        planner,
        "p-2",
        "Deliver weekly, said the customer.",
        subject=PRIVATE,
        claims=[pref_json("weekly", subject=SHARED), turn],
    )
    revoked = ok(booker.post(f"/v1/memories/{shared_id}/revoke", json={"reason": "wrong"}))
    assert revoked.json()["redacted"] == [] and private_id not in revoked.text
    assert _private_status(agents, private_id) == "active"


def test_recall_names_a_private_speaker_only_for_keys_that_read_its_namespace(
    key_client: KeyClient, agents: dict[str, httpx.Client]
) -> None:
    """A speaker's name said only in a private namespace is no name for another agent
    (not understood, not boosted); once said in the shared namespace it is everyone's."""
    scribe = key_client("bartholomew", principal="agent", grants=[FAMILY])
    clerk = key_client("clerk", principal="agent", role="read", reads=["agent:bartholomew"])
    note = "Deliveries go out on Mondays."
    ok(post_event(scribe, "b-1", note, occurred_at=WHEN, subject="agent:bartholomew/x"))
    ok(scribe.post("/v1/process", json={}))
    question = {"query": "What did Bartholomew say about deliveries?", "k": 10}

    def people(agent: httpx.Client) -> list[str]:
        return list(ok(agent.post("/v1/recall", json=question)).json()["understood"]["people"])

    mine = ["agent:bartholomew/x", "bartholomew"]  # its subject and its speaker
    assert people(scribe) == people(clerk) == mine
    assert people(agents["booker"]) == []
    ok(post_event(scribe, "b-2", "Parcels are heavy.", occurred_at=WHEN, subject=SHARED))
    ok(scribe.post("/v1/process", json={}))
    assert people(agents["booker"]) == ["bartholomew"]


def test_a_shared_memory_of_a_private_event_names_the_id_and_not_the_event(
    agents: dict[str, httpx.Client],
) -> None:
    planner, booker = agents["planner"], agents["booker"]
    memory_id = _private_note(planner, "Customer 7 wants weekly deliveries.", SHARED)
    shared = ok(booker.get(f"/v1/memories/{memory_id}")).json()
    assert shared["subject"] == SHARED and shared["source_event_id"] == "p-1"
    assert booker.get("/v1/events/p-1").content == booker.get("/v1/events/p-2").content
    assert "Customer 7 wants" not in json.dumps(shared)


def test_a_trace_that_left_out_a_private_memory_is_no_trace_for_another_agent(
    agents: dict[str, httpx.Client], clock: FrozenClock
) -> None:
    """An admin's packet across the tenant leaves out the planner's private note (its
    window has ended) and names it among its exclusions: for the booker that trace is a
    missing one, in the list and by id; the admin and the auditor (who reads the
    planner's namespace) see it."""
    planner, booker = agents["planner"], agents["booker"]
    said = post_event(
        planner,
        "p-9",
        "Deliver weekly until October 5.",
        occurred_at=WHEN,
        subject=PRIVATE,
        claims=[pref_json("weekly", valid_until="2026-10-05T00:00:00Z")],
    )
    (result,) = ok(said).json()["results"]
    clock.set(clock.now() + timedelta(days=10))
    packet = ok(agents["admin"].post("/v1/context", json={"request": "Deliver weekly?"})).json()
    left = [e["key"] for e in packet["excluded"] if e["section"] == "memories"]
    assert result["memory_id"] in left
    trace_id = packet["trace_id"]
    problem(booker.get(f"/v1/traces/{trace_id}"), 404, "trace_not_found")
    assert trace_id not in [t["trace_id"] for t in ok(booker.get("/v1/traces")).json()]
    assert result["memory_id"] not in booker.get("/v1/traces").text
    for reader in (agents["admin"], agents["auditor"]):
        assert ok(reader.get(f"/v1/traces/{trace_id}")).json()["trace_id"] == trace_id
