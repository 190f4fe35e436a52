"""Namespaces are invisible (DESIGN.md invariant 13), probed as a second agent of the same
tenant would: subject paging, the job list, recall's understanding, forgetting a shared
event and revoking a shared memory whose words another agent's private notes hold.
Every check compares what the booker sees with what it would see if the planner's
private namespace did not exist, and checks that nothing the booker does changes it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest
from api_helpers import client, event_json, ok, problem

from memledger import Memory
from memledger.testing import FrozenClock
from memledger.testing.scenarios import FAMILY, TENANT

PRIVATE = "agent:planner/customer-7"
SHARED = "customer-7"
WHEN = "2026-10-01T09:00:00Z"


@pytest.fixture
def agents(memory: Memory, base_url: str) -> Iterator[dict[str, httpx.Client]]:
    def key(actor: str, **options: object) -> httpx.Client:
        _, token = memory.create_key(TENANT, actor, **options)  # type: ignore[arg-type]
        return client(base_url, token)

    made = {
        "planner": key("planner", principal="agent", grants=[FAMILY]),
        "booker": key("booker", principal="agent", grants=[FAMILY]),
        "auditor": key("auditor", principal="agent", role="read", reads=["agent:planner"]),
        "admin": key("ops", principal="service", role="admin"),
    }
    yield made
    for each in made.values():
        each.close()


def _claim(subject: str, value: str) -> dict[str, object]:
    return {
        "family": FAMILY,
        "kind": "preference",
        "statement": f"Delivery: {value}",
        "value": value,
        "subject": subject,
    }


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
        ok(
            planner.post(
                "/v1/events", json=event_json(f"e-{n}", "Hello.", occurred_at=WHEN, subject=subject)
            )
        )
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
    ok(
        planner.post(
            "/v1/events",
            json=event_json("p-1", "Bills in kroner.", occurred_at=WHEN, subject=PRIVATE),
        )
    )
    ok(
        planner.post(
            "/v1/events",
            json=event_json("s-1", "Ships from Oslo.", occurred_at=WHEN, subject=SHARED),
        )
    )
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
    ok(
        planner.post(
            "/v1/events",
            json=event_json(
                "p-1",
                "Invoices for Oksana in kroner.",
                occurred_at=WHEN,
                subject="agent:planner/oksana",
            ),
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


def _written(planner: httpx.Client, said: dict[str, object]) -> tuple[str, str]:
    """The shared and the private memory the planner's event wrote."""
    receipt = ok(planner.post("/v1/events", json=said)).json()
    by_subject = {}
    for result in receipt["results"]:
        found = ok(planner.get(f"/v1/memories/{result['memory_id']}")).json()
        by_subject[found["subject"]] = found["memory_id"]
    return by_subject[SHARED], by_subject[PRIVATE]


def test_forgetting_a_shared_event_leaves_another_agents_records(
    agents: dict[str, httpx.Client],
) -> None:
    planner, booker = agents["planner"], agents["booker"]
    said = event_json(
        "s-1",
        "Deliver weekly, and note it for me.",
        occurred_at=WHEN,
        subject=SHARED,
        claims=[_claim(SHARED, "weekly"), _claim(PRIVATE, "weekly")],
    )
    shared_id, private_id = _written(planner, said)

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
    said = event_json(
        "s-2",
        "Deliver on Fridays.",
        occurred_at=WHEN,
        subject=SHARED,
        claims=[_claim(SHARED, "fridays"), _claim(PRIVATE, "fridays")],
    )
    shared_id, private_id = _written(planner, said)

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
    said = event_json(
        "p-1",
        "Deliver weekly.",
        occurred_at=WHEN,
        subject=PRIVATE,
        claims=[_claim(PRIVATE, "weekly")],
    )
    (result,) = ok(planner.post("/v1/events", json=said)).json()["results"]
    private_id = result["memory_id"]
    hidden = booker.post("/v1/events/p-1/forget", json={"reason": "x"})
    missing = booker.post("/v1/events/nope-1/forget", json={"reason": "x"})
    assert (hidden.status_code, hidden.content) == (missing.status_code, missing.content)
    problem(hidden, 404, "event_not_found")
    assert _private_status(agents, private_id) == "active"


def test_trace_pages_are_filled_with_what_the_key_may_see(
    agents: dict[str, httpx.Client], clock: FrozenClock
) -> None:
    planner, booker = agents["planner"], agents["booker"]
    note = event_json(
        "p-1",
        "Deliver weekly.",
        occurred_at=WHEN,
        subject=PRIVATE,
        claims=[_claim(PRIVATE, "weekly")],
    )
    ok(planner.post("/v1/events", json=note))
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
    said = event_json(
        "p-2",
        "Deliver weekly, said the customer.",
        occurred_at=WHEN,
        subject=PRIVATE,
        claims=[_claim(SHARED, "weekly"), turn],
    )
    shared_id, private_id = _written(planner, said)
    revoked = ok(booker.post(f"/v1/memories/{shared_id}/revoke", json={"reason": "wrong"}))
    assert revoked.json()["redacted"] == [] and private_id not in revoked.text
    assert _private_status(agents, private_id) == "active"


def test_recall_names_a_private_speaker_only_for_keys_that_read_its_namespace(
    memory: Memory, base_url: str, agents: dict[str, httpx.Client]
) -> None:
    """A speaker's name said only in a private namespace is no name for another agent
    (not understood, not boosted); once said in the shared namespace it is everyone's."""
    _, token = memory.create_key(TENANT, "bartholomew", principal="agent", grants=[FAMILY])
    reader = memory.create_key(
        TENANT, "clerk", principal="agent", role="read", reads=["agent:bartholomew"]
    )[1]
    with client(base_url, token) as scribe, client(base_url, reader) as clerk:
        note = event_json(
            "b-1", "Deliveries go out on Mondays.", occurred_at=WHEN, subject="agent:bartholomew/x"
        )
        ok(scribe.post("/v1/events", json=note))
        ok(scribe.post("/v1/process", json={}))
        question = {"query": "What did Bartholomew say about deliveries?", "k": 10}

        def people(agent: httpx.Client) -> list[str]:
            return list(ok(agent.post("/v1/recall", json=question)).json()["understood"]["people"])

        mine = ["agent:bartholomew/x", "bartholomew"]  # its subject and its speaker
        assert people(scribe) == people(clerk) == mine
        assert people(agents["booker"]) == []
        said = event_json("b-2", "Parcels are heavy.", occurred_at=WHEN, subject=SHARED)
        ok(scribe.post("/v1/events", json=said))
        ok(scribe.post("/v1/process", json={}))
        assert people(agents["booker"]) == ["bartholomew"]


def test_a_shared_memory_of_a_private_event_names_the_id_and_not_the_event(
    agents: dict[str, httpx.Client],
) -> None:
    planner, booker = agents["planner"], agents["booker"]
    note = event_json(
        "p-1",
        "Customer 7 wants weekly deliveries.",
        occurred_at=WHEN,
        subject=PRIVATE,
        claims=[_claim(SHARED, "weekly")],
    )
    (result,) = ok(planner.post("/v1/events", json=note)).json()["results"]
    memory_id = result["memory_id"]
    shared = ok(booker.get(f"/v1/memories/{memory_id}")).json()
    assert shared["subject"] == SHARED and shared["source_event_id"] == "p-1"
    assert booker.get("/v1/events/p-1").content == booker.get("/v1/events/p-2").content
    assert "Customer 7 wants" not in json.dumps(shared)
