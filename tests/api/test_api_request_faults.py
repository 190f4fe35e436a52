"""What a refused request is told, over a real server: a missing body names what the
route's body needs, a body not sent as JSON or not an object says so, every fault of a
body is named (the first ten in ``detail`` and ``errors``, with ``error_count``), for
the routes' schemas and for source events and chat messages alike; and a refused
request changes nothing."""

from __future__ import annotations

import httpx
import pytest
from api_helpers import Clients, event_json, ok, pref_json, problem

from memledger.testing.scenarios import FAMILY, SUBJECT

WHEN = "2026-10-02T09:00:00Z"
MEMORY = "/v1/memories/mem-0/revoke"
JSON = {"content-type": "application/json"}


def bare(api: httpx.Client, method: str, path: str, content: bytes = b"") -> httpx.Response:
    """A request with ``content`` as its body (none by default), marked as JSON."""
    return api.request(method, path, content=content, headers=JSON)


def refused(response: httpx.Response) -> tuple[str, list[dict[str, object]], int]:
    """The detail, errors and error count of an ``invalid_request`` problem."""
    found = problem(response, 422, "invalid_request")
    return str(found["detail"]), found["errors"], found["error_count"]  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("method", "path", "needs"),
    [
        ("POST", MEMORY, "a JSON object with `reason`"),
        ("POST", "/v1/recall", "a JSON object with `query`"),
        ("POST", "/v1/keys", "a JSON object with `actor`"),
        ("POST", "/v1/families", "a JSON object with `name` and `kinds`"),
        ("POST", "/v1/erasures", "a JSON object with one of `event`, `memory_id` or `subject`"),
        ("PUT", "/v1/quotas", "a JSON object (`{}` takes every default)"),
    ],
)
def test_a_missing_body_says_what_the_route_needs(
    clients: Clients, method: str, path: str, needs: str
) -> None:
    told = f"The body is missing; it needs {needs}"
    a = clients.admin
    for response in (a.request(method, path), bare(a, method, path)):  # none, and an empty one
        detail, errors, count = refused(response)
        assert (
            detail
            == f"The request does not match the route's schema: {told[:1].lower()}{told[1:]}."
        )
        assert errors == [{"loc": ["body"], "msg": told}] and count == 1
    # without a Content-Type the body is never read as JSON: that is said, not "missing"
    detail, _, _ = refused(clients.admin.request(method, path, content=b'{"reason": "x"}'))
    assert f"not sent as JSON (no Content-Type); send {needs} as application/json" in detail
    typed = {"content-type": "text/plain"}
    detail, _, _ = refused(clients.admin.request(method, path, content=b"{}", headers=typed))
    assert "not sent as JSON (Content-Type 'text/plain')" in detail
    for content, kind in ((b"null", "null"), (b"[]", "a list"), (b'"x"', "a string")):
        detail, _, _ = refused(bare(clients.admin, method, path, content))
        assert f"the body is {kind}, not a JSON object; it needs {needs}." in detail


def test_an_empty_object_names_every_required_field(clients: Clients) -> None:
    a = clients.admin
    for path, fields in [
        (MEMORY, ["reason"]),
        ("/v1/recall", ["query"]),
        ("/v1/keys", ["actor"]),
        ("/v1/families", ["name", "kinds"]),
    ]:
        detail, errors, count = refused(a.post(path, json={}))
        assert errors == [{"loc": ["body", f], "msg": "Field required"} for f in fields], path
        assert count == len(fields)
        assert detail.endswith("; ".join(f"body.{f} is required" for f in fields) + "."), detail


def test_two_wrong_fields_and_a_missing_one_are_all_named(clients: Clients) -> None:
    a = clients.admin
    for path, body, named in [
        (
            MEMORY,
            {"tenant": 7, "why": "x"},
            ["body.reason is required", "body.tenant: ", "body.why is not a known field"],
        ),
        (
            "/v1/recall",
            {"k": "3", "subject": 7},
            ["body.query is required", "body.k: ", "body.subject: "],
        ),
        (
            "/v1/keys",
            {"role": "root", "principal": "robot"},
            [
                "body.actor is required",
                "body.role: Input should be 'read', 'write' or 'admin'",
                "body.principal: ",
            ],
        ),
    ]:
        detail, errors, count = refused(a.post(path, json=body))
        assert count == 3 and len(errors) == 3, errors
        for line in named:
            assert line in detail, (path, detail)
        assert "more" not in detail
    # a source event: named by memledger's event parser, every fault placed in the body
    event = {"event_id": 7, "subject": SUBJECT, "channel": "pigeon", "occurred_at": WHEN}
    found = problem(a.post("/v1/events", json=event), 400, "invalid_event")
    assert found["error_count"] == 3
    assert [e["loc"] for e in found["errors"]] == [  # type: ignore[union-attr]
        ["body", "event_id"],
        ["body", "channel"],
        ["body", "text"],
    ]
    for line in (
        "event_id: input should be a valid string",
        "channel: unknown channel",
        "text is required",
    ):
        assert line in str(found["detail"])


def test_an_events_route_without_a_body_names_an_events_fields(clients: Clients) -> None:
    fields = "`event_id`, `subject`, `channel`, `occurred_at` and `text`"
    for path, needs in [
        ("/v1/events", f"one JSON event object with {fields}"),
        ("/v1/events/batch", f"a JSON list of event objects, each with {fields}"),
    ]:
        for content in (b"", b" \n"):
            found = problem(bare(clients.writer, "POST", path, content), 400, "invalid_event")
            told = f"the body is missing; it needs {needs}"
            assert found["detail"] == told
            assert found["errors"] == [{"loc": ["body"], "msg": told}]
    found = problem(clients.writer.post("/v1/events", json={}), 400, "invalid_event")
    required = ["event_id", "subject", "channel", "occurred_at", "text"]
    assert found["errors"] == [{"loc": ["body", f], "msg": "is required"} for f in required]
    batch = [event_json("e-1", "x", occurred_at=WHEN), {"event_id": "e-2"}]
    found = problem(clients.writer.post("/v1/events/batch", json=batch), 400, "invalid_event")
    assert found["errors"][0]["loc"] == ["body", 1, "subject"]  # type: ignore[index]
    assert str(found["detail"]).startswith("event #2 'e-2': subject is required; ")


def test_past_ten_faults_the_rest_are_counted(clients: Clients) -> None:
    a = clients.admin
    # 12 empty live states: three faults each, and the request's own
    detail, errors, count = refused(a.post("/v1/context", json={"request": 1, "live": [{}] * 12}))
    assert count == 37 and len(errors) == 10
    assert detail.count(";") == 9 and detail.endswith(" (and 27 more not shown).")
    assert "body.live[0].observed_at is required" in detail
    # an event's claims: every fault counted, the first ten named
    claims = [{"family": FAMILY}] * 4  # kind, statement and value missing from each
    found = problem(
        a.post("/v1/events", json=event_json("e-3", "x", occurred_at=WHEN, claims=claims)),
        400,
        "invalid_claim",
    )
    assert found["error_count"] == 12 and len(found["errors"]) == 10  # type: ignore[arg-type]
    assert str(found["detail"]).endswith("claims[3].kind is required (and 2 more not shown)")
    assert found["errors"][0] == {"loc": ["body", "claims", 0, "kind"], "msg": "is required"}  # type: ignore[index]
    # chat messages
    messages = [{"role": "narrator", "content": "x"}] * 12
    found = problem(a.post("/v1/memories", json={"messages": messages}), 400, "invalid_event")
    assert found["error_count"] == 12
    assert str(found["detail"]).endswith("(and 2 more not shown)")
    assert found["errors"][0]["loc"] == ["body", "messages", 0, "role"]  # type: ignore[index]


def test_a_refused_body_changes_nothing(clients: Clients) -> None:
    w = clients.writer
    claims = [pref_json("friday", grounding="Fridays")]
    before = "2026-09-30T09:00:00Z"  # the test's clock stands at October 1
    ok(w.post("/v1/events", json=event_json("e-1", "Fridays", occurred_at=before, claims=claims)))
    slot = f"/v1/subjects/{SUBJECT}/families/{FAMILY}/current"
    (record,) = ok(w.get(slot)).json()
    revoke = f"/v1/memories/{record['memory_id']}/revoke"
    for content in (b"", b"{}", b'{"reason": 7, "why": 1}'):
        problem(bare(w, "POST", revoke, content), 422, "invalid_request")
    assert ok(w.get(slot)).json() == [record]
    ok(w.post(revoke, json={"reason": "wrong"}))
    assert ok(w.get(slot)).json() == []


def test_process_takes_a_missing_body_as_its_defaults(clients: Clients, base_url: str) -> None:
    w = clients.writer
    ok(w.post("/v1/events", json=event_json("e-q", "I prefer Fridays", occurred_at=WHEN)))
    for content in (b"", b"{}"):
        report = ok(bare(w, "POST", "/v1/process", content)).json()
        assert report["mode"] == "once", report
    problem(w.post("/v1/process", json={"max_jobs": 0}), 422, "invalid_request")
    with httpx.Client(base_url=base_url, trust_env=False) as anonymous:
        paths = ok(anonymous.get("/openapi.json")).json()["paths"]
    assert paths["/v1/process"]["post"]["requestBody"].get("required", False) is False
    assert paths["/v1/memories/{memory_id}/revoke"]["post"]["requestBody"]["required"] is True
