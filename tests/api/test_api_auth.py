"""Authentication and roles: no key, a bad key and a revoked key are refused alike; a
read-only key cannot write; only admin keys administer; a key made over HTTP works."""

from __future__ import annotations

from api_helpers import Clients, client, event_json, ok, post_event, pref_json, problem

from memledger import Memory
from memledger.testing.scenarios import FAMILY, SUBJECT, TENANT, day, snapshot
from memledger.wire import isoformat

EVENT = event_json(
    "evt-1", "Fridays please", occurred_at=isoformat(day(10, 2)), claims=[pref_json("friday")]
)


def test_no_bad_or_revoked_key_is_refused_alike(
    clients: Clients, memory: Memory, base_url: str
) -> None:
    key, token = memory.create_key(TENANT, "temp", role="read")
    revoked = client(base_url, token)
    ok(revoked.get("/v1/me"))
    memory.revoke_key(TENANT, key.key_id)
    wrong = client(base_url, token[:-4] + "AAAA")
    garbage = client(base_url, "not-a-key")
    refused = [c.get("/v1/jobs") for c in (revoked, wrong, garbage)]
    for response in refused:
        problem(response, 401, "unauthenticated")
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert response.content == refused[0].content
    missing = problem(clients.anonymous.get("/v1/jobs"), 401, "unauthenticated")
    assert "Authorization: Bearer" in str(missing["detail"])
    basic = clients.anonymous.get("/v1/jobs", headers={"Authorization": "Basic dXNlcjpwYXNz"})
    problem(basic, 401, "unauthenticated")
    for one in (revoked, wrong, garbage):
        one.close()
    # liveness, readiness and the document need no key
    for path in ("/healthz", "/readyz", "/openapi.json", "/metrics"):
        ok(clients.anonymous.get(path))


def test_a_read_only_key_cannot_write(clients: Clients, memory: Memory) -> None:
    ok(clients.writer.post("/v1/events", json=EVENT))
    (record,) = ok(clients.reader.get(f"/v1/subjects/{SUBJECT}/families/{FAMILY}/history")).json()
    before = snapshot(memory, event_ids=["evt-1", "evt-2"])
    r = clients.reader
    for method, path, body in (
        ("POST", "/v1/events", {**EVENT, "event_id": "evt-2"}),
        ("POST", "/v1/events/batch", [{**EVENT, "event_id": "evt-2"}]),
        ("POST", f"/v1/memories/{record['memory_id']}/revoke", {"reason": "no"}),
        ("POST", "/v1/events/evt-1/forget", {"reason": "no"}),
        ("POST", "/v1/process", {}),
    ):
        body_problem = problem(r.request(method, path, json=body), 403, "permission_denied")
        assert "read-only" in str(body_problem["detail"])
    assert snapshot(memory, event_ids=["evt-1", "evt-2"]) == before
    # and it reads
    ok(r.get(f"/v1/memories/{record['memory_id']}"))
    ok(r.post("/v1/recall", json={"query": "deliver"}))


def test_a_read_only_key_is_refused_before_anything_is_read(
    clients: Clients, memory: Memory
) -> None:
    """The HTTP layer's own check: a write route refuses a read-only key before it reads
    the body or looks anything up, so a missing id or a malformed body is 403 too (not
    404 or 422), and a queued job is not run."""
    queued = event_json("evt-q", "Deliver my digest on Fridays.", occurred_at=EVENT["occurred_at"])
    ok(clients.writer.post("/v1/events", json=queued))
    before = snapshot(memory, event_ids=["evt-q"])
    r = clients.reader
    for method, path, body in (
        ("POST", "/v1/events", {"event_id": 7}),
        ("POST", "/v1/events/batch", {"not": "a list"}),
        ("POST", "/v1/memories/mem-nope/revoke", {"reason": "no"}),
        ("POST", "/v1/events/evt-nope/forget", {"reason": "no"}),
        ("POST", "/v1/process", {"max_jobs": 1}),
    ):
        refused = problem(r.request(method, path, json=body), 403, "permission_denied")
        assert "is read-only: it cannot write" in str(refused["detail"]), path
    assert snapshot(memory, event_ids=["evt-q"]) == before
    assert [j.event_id for j in memory.jobs(tenant=TENANT)] == ["evt-q"]  # not run


def test_only_admin_keys_administer(clients: Clients) -> None:
    for who in (clients.writer, clients.reader, clients.service):
        for method, path, body in (
            ("GET", "/v1/keys", None),
            ("POST", "/v1/keys", {"actor": "mallory", "role": "admin"}),
            ("POST", "/v1/keys/mlk_000000000000/revoke", None),
            ("POST", "/v1/families", {"name": "diet", "kinds": ["preference"]}),
            ("POST", "/v1/reviews/rev-1/accept", {"reason": "x"}),
            ("POST", "/v1/reviews/rev-1/reject", {"reason": "x"}),
            ("POST", "/v1/corpus/documents", {"name": "x", "content": "hello there"}),
            ("DELETE", "/v1/corpus/documents/x.md", None),
            ("POST", "/v1/erasures", {"subject": SUBJECT}),
            ("GET", "/v1/erasures", None),
            ("GET", "/v1/retention", None),
            ("PUT", "/v1/retention/episode", {"days": 90}),
            ("GET", "/v1/quotas", None),
            ("PUT", "/v1/quotas", {"max_records": 5}),
            ("POST", "/v1/undo", {"change_id": "chg-1"}),
            ("POST", "/v1/memories/mem-1/restore", {"reason": "x"}),
            ("GET", "/v1/change-log", None),
            ("POST", "/v1/rollbacks", {"extractor": "rules@1"}),
            ("POST", "/v1/consolidations", {}),
            ("POST", "/v1/compactions", {}),
        ):
            found = problem(who.request(method, path, json=body), 403, "permission_denied")
            assert "admin" in str(found["detail"])
    actors = sorted(k["actor"] for k in ok(clients.admin.get("/v1/keys")).json())
    assert actors == sorted(["admin-1", SUBJECT, SUBJECT, "auditor", "account-service"])


def test_keys_made_and_revoked_over_http(clients: Clients, base_url: str) -> None:
    made = ok(
        clients.admin.post(
            "/v1/keys",
            json={"actor": "agent-7", "principal": "agent", "grants": [FAMILY], "label": "bot"},
        ),
        201,
    ).json()
    assert made["shown_once"] is True and made["token"].startswith(made["key"]["key_id"] + ".")
    assert made["key"]["tenant"] == TENANT and made["key"]["grants"] == [f"{FAMILY}:*"]
    assert "token" not in ok(clients.admin.get("/v1/keys")).text.replace("mlk_", "")
    agent = client(base_url, made["token"])
    me = ok(agent.get("/v1/me")).json()
    assert (me["tenant"], me["actor"], me["principal"], me["role"]) == (
        TENANT,
        "agent-7",
        "agent",
        "write",
    )
    receipt = ok(agent.post("/v1/events", json=EVENT)).json()
    assert [r["disposition"] for r in receipt["results"]] == ["current"]
    revoked = ok(clients.admin.post(f"/v1/keys/{made['key']['key_id']}/revoke")).json()
    assert revoked["revoked_at"] is not None
    problem(agent.get("/v1/me"), 401, "unauthenticated")
    agent.close()
    problem(
        clients.admin.post("/v1/keys", json={"actor": "x", "grants": ["no_such_family"]}),
        400,
        "unknown_family",
    )


def test_families_registered_over_http(clients: Clients) -> None:
    a = clients.admin
    diet = {"name": "diet", "kinds": ["preference"], "description": "What the subject eats."}
    made = ok(a.post("/v1/families", json=diet)).json()
    assert (made["name"], made["source"]) == ("diet", "registered")
    assert ok(a.post("/v1/families", json=diet)).json() == made  # the same again: a no-op
    problem(a.post("/v1/families", json={**diet, "kinds": ["fact"]}), 409, "conflict")
    listed = {f["name"]: f["source"] for f in ok(clients.reader.get("/v1/families")).json()}
    assert listed["diet"] == "registered" and listed[FAMILY] == "code"
    key = ok(a.post("/v1/keys", json={"actor": SUBJECT, "grants": ["diet"]}), 201).json()
    with client(str(a.base_url), key["token"]) as user:
        claim = {"family": "diet", "kind": "preference", "statement": "Vegan", "value": "vegan"}
        said = post_event(
            user, "evt-d", "I am vegan", occurred_at=isoformat(day(10, 2)), claims=[claim]
        )
        receipt = ok(said).json()
        assert [r["disposition"] for r in receipt["results"]] == ["current"]
    problem(
        post_event(
            clients.writer,
            "evt-e",
            "x",
            occurred_at=isoformat(day(10, 2)),
            claims=[{**claim, "family": "nope"}],
        ),
        400,
        "unknown_family",
    )
