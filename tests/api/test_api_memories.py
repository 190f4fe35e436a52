"""The short path over HTTP against a real server: add chat messages, search them with
scores, list, delete and a memory's history, with the key deciding who may speak for
whom."""

from __future__ import annotations

from api_helpers import KeyClient

from memledger.testing.scenarios import TENANT

CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "I love spicy ramen."},
    {"role": "assistant", "content": "Noted!"},
    {"role": "user", "content": "I live in Lisbon."},
]


def test_a_service_key_adds_for_its_users_and_searches_their_memory(key_client: KeyClient) -> None:
    app = key_client("chat-app", principal="service")
    added = app.post("/v1/memories", json={"messages": CHAT, "user_id": "alice"})
    assert added.status_code == 200, added.text
    body = added.json()
    assert body["skipped"] == 1 and not body["duplicate"] and body["pending"] == []
    assert len(body["event_ids"]) == 3
    assert {m["family"] for m in body["memories"]} >= {"conversation", "home_city", "likes"}
    assert "alice/home_city@" in added.headers["Memledger-Consistency"]
    again = app.post("/v1/memories", json={"messages": CHAT, "user_id": "alice"}).json()
    assert again["duplicate"] and again["event_ids"] == body["event_ids"]
    # the user's own turns are theirs, authenticated: a personal attribute is set
    (city,) = app.get("/v1/subjects/alice/families/home_city/current").json()
    assert city["value"] == "Lisbon" and city["source_actor_id"] == "alice"
    found = app.post(
        "/v1/memories/search", json={"query": "where does she live?", "user_id": "alice", "k": 3}
    )
    assert found.status_code == 200, found.text
    results = found.json()["results"]
    assert results[0]["memory"] == "Lives in Lisbon" and results[0]["relevant"]
    assert all(r["user_id"] == "alice" and isinstance(r["score"], float) for r in results)
    nearest = app.post(
        "/v1/memories/search", json={"query": "capital of France?", "user_id": "alice"}
    )
    assert nearest.json()["results"] and not any(r["relevant"] for r in nearest.json()["results"])
    listed = app.get("/v1/memories", params={"user_id": "alice"}).json()
    assert {m["id"] for m in listed} == {m["id"] for m in body["memories"]}


def test_delete_and_history(key_client: KeyClient) -> None:
    app = key_client("chat-app", principal="service")
    app.post(
        "/v1/memories",
        json={"messages": "I live in Lisbon.", "user_id": "bob", "at": "2026-10-01T09:00:00Z"},
    )
    app.post(
        "/v1/memories",
        json={"messages": "I moved to Porto.", "user_id": "bob", "at": "2026-10-02T09:00:00Z"},
    )
    (porto,) = app.get("/v1/subjects/bob/families/home_city/current").json()
    steps = app.get(f"/v1/memories/{porto['memory_id']}/history").json()
    assert [(s["action"], s["memory"]) for s in steps][-1] == ("recorded", "Lives in Porto")
    assert ("closed", "Lives in Lisbon") in [(s["action"], s["memory"]) for s in steps]
    gone = app.delete(f"/v1/memories/{porto['memory_id']}")
    assert gone.status_code == 200, gone.text
    assert porto["memory_id"] in gone.json()["revoked"] and gone.json()["reason"] == "deleted"
    assert porto["memory_id"] not in {
        m["id"] for m in app.get("/v1/memories", params={"user_id": "bob"}).json()
    }
    assert app.delete("/v1/memories/mem-missing").json()["code"] == "memory_not_found"
    assert app.get("/v1/memories/mem-missing/history").status_code == 404


def test_who_may_speak_for_whom(key_client: KeyClient) -> None:
    alice = key_client("alice")  # a user's own key
    mine = alice.post("/v1/memories", json={"messages": "I live in Oslo."})
    assert mine.status_code == 200, mine.text
    assert {m["user_id"] for m in mine.json()["memories"]} == {"alice"}
    assert alice.get("/v1/memories").json()[0]["user_id"] == "alice"  # its own by default
    other = alice.post("/v1/memories", json={"messages": "I live in Rome.", "user_id": "carol"})
    assert other.status_code == 403 and "adds 'alice'" in other.json()["detail"]
    planner = key_client("planner", principal="agent")
    notes = planner.post("/v1/memories", json={"messages": "Customer prefers email."}).json()
    assert {m["agent_id"] for m in notes["memories"]} == {"planner"}
    assert (
        planner.post("/v1/memories", json={"messages": "x", "agent_id": "billing"}).status_code
        == 403
    )
    # another agent's namespace is not readable, and not even listed
    billing = key_client("billing", principal="agent")
    assert billing.get("/v1/memories", params={"agent_id": "planner"}).status_code == 403
    reader = key_client("auditor", role="read")
    assert (
        reader.post("/v1/memories", json={"messages": "x", "user_id": "alice"}).status_code == 403
    )
    assert (
        key_client("chat-app", "globex", principal="service")
        .get("/v1/memories", params={"user_id": "alice"})
        .json()
        == []
    )  # another tenant's memory is not there


def test_bad_input_names_every_problem_and_writes_nothing(key_client: KeyClient) -> None:
    app = key_client("chat-app", principal="service")
    bad = app.post(
        "/v1/memories",
        json={
            "messages": [{"role": "narrator", "content": "x"}, {"role": "user"}],
            "user_id": "dan",
        },
    )
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_event"
    assert (
        "messages[0].role" in bad.json()["detail"]
        and "messages[1] has no content" in bad.json()["detail"]
    )
    nobody = app.post("/v1/memories", json={"messages": "hello"})
    assert nobody.status_code == 400 and "user_id or agent_id" in nobody.json()["detail"]
    other_tenant = app.post(
        "/v1/memories", json={"messages": "hi", "user_id": "dan", "tenant": "globex"}
    )
    assert other_tenant.status_code == 403
    assert app.get("/v1/subjects", params={"prefix": "dan"}).json()["subjects"] == []
    assert TENANT != "globex"
