"""Bad input at the HTTP edge, over a real server: text that is not text in any body
field, coercions refused in every body, framework errors (odd paths, wrong methods,
bodies that are not JSON) as problems, the documented list of codes, and the tenant's
last admin key."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from api_helpers import Clients, client, ok, problem

from cli_helpers import snapshot
from memledger import Memory
from memledger.api import REQUEST_PROBLEMS, create_app
from memledger.domain.records import MAX_DEPTH
from memledger.serve import ServeConfig, build_app
from memledger.testing.http import serve
from memledger.testing.scenarios import SUBJECT
from memledger.wire_models import PROBLEMS

WHEN = "2026-10-01T09:00:00Z"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "problems.md"


def send(a: httpx.Client, method: str, path: str, body: object) -> httpx.Response:
    """``body`` as JSON, a lone surrogate as its ``\\ud800`` escape (as JSON allows)."""
    raw = json.dumps(body).encode()
    return a.request(method, path, content=raw, headers={"content-type": "application/json"})


def _live(value: dict[str, object], **fields: object) -> dict[str, object]:
    return {"request": "x", "live": [{"name": "n", "value": value, "observed_at": WHEN, **fields}]}


def _bodies(bad: str) -> list[tuple[str, str, dict[str, object]]]:
    """(method, path, body) with ``bad`` in one free-text field of each body."""
    return [
        ("POST", "/v1/context", _live({"state": bad})),
        ("POST", "/v1/context", _live({bad: 1})),
        ("POST", "/v1/context", _live({"nested": [{"deep": {bad: True}}]})),
        ("POST", "/v1/context", _live({"state": "ok"}, source=bad)),
        ("POST", "/v1/context", {"request": f"where {bad}"}),
        ("POST", "/v1/context", {"request": "x", "constraints": [{"id": "c", "rule": bad}]}),
        ("POST", "/v1/context", {"request": "x", "material": [{"name": bad, "text": "t"}]}),
        ("POST", "/v1/context", {"request": "x", "material": [{"name": "m", "text": bad}]}),
        ("POST", "/v1/recall", {"query": f"where {bad}"}),
        ("POST", "/v1/keys", {"actor": "a-1", "label": bad}),
        ("POST", "/v1/keys", {"actor": "a-1", "reads": [bad]}),
        ("POST", "/v1/families", {"name": "diet", "kinds": ["fact"], "description": bad}),
        ("POST", "/v1/corpus/documents", {"name": "a.md", "content": bad}),
        ("POST", "/v1/corpus/search", {"query": bad}),
        ("POST", "/v1/undo", {"change_id": "chg-1", "reason": bad}),
        ("POST", "/v1/erasures", {"subject": SUBJECT, "reason": bad}),
    ]


@pytest.mark.parametrize("bad", ["\ud800", "\udfff", "\x00"], ids=["high", "low", "nul"])
def test_text_that_is_not_text_is_refused_in_every_body_field(
    clients: Clients, memory: Memory, tmp_path: Path, bad: str
) -> None:
    a = clients.admin
    ok(a.get("/v1/me"))  # the key's first use is recorded before the snapshot
    before = snapshot(tmp_path / "memledger.db")
    for method, path, body in _bodies(bad):
        found = problem(send(a, method, path, body), 422, "invalid_request")
        (error,) = found["errors"]  # type: ignore[misc]
        assert "lone surrogate" in error["msg"] or "NUL" in error["msg"], (path, body, error)
    assert snapshot(tmp_path / "memledger.db") == before
    # the same check as an event's text and metadata, whose parser says invalid_event
    event = {"event_id": "e-1", "subject": SUBJECT, "channel": "chat", "occurred_at": WHEN}
    for fields in ({"text": bad}, {"text": "hi", "metadata": {bad: 1}}):
        problem(send(a, "POST", "/v1/events", {**event, **fields}), 400, "invalid_event")
    assert snapshot(tmp_path / "memledger.db") == before
    ok(a.post("/v1/context", json=_live({"state": "fine", "ü": "ß"})))  # text is fine


def test_a_json_value_in_a_body_nests_as_deep_as_an_events(clients: Clients) -> None:
    def packet(depth: int) -> httpx.Response:
        value = '{"k": ' * depth + "1" + "}" * depth
        live = f'[{{"name": "n", "value": {value}, "observed_at": "{WHEN}"}}]'
        body = f'{{"request": "x", "live": {live}}}'.encode()
        return clients.admin.post(
            "/v1/context", content=body, headers={"content-type": "application/json"}
        )

    ok(packet(MAX_DEPTH))
    found = problem(packet(MAX_DEPTH + 1), 422, "invalid_request")
    assert f"nests more than {MAX_DEPTH} levels" in found["errors"][0]["msg"]  # type: ignore[index]
    problem(packet(100_000), 400, "malformed_json")  # deeper than the parser goes


def test_every_body_is_strict(clients: Clients) -> None:
    a = clients.admin
    for path, body in [
        ("/v1/recall", {"query": "x", "k": "10"}),
        ("/v1/recall", {"query": "x", "k": True}),
        ("/v1/recall", {"query": "x", "k": 3.0}),
        ("/v1/recall", {"query": 10}),
        ("/v1/process", {"max_jobs": True}),
        ("/v1/process", {"max_jobs": "5"}),
        ("/v1/context", {"request": "x", "budget": "500"}),
        ("/v1/context", {"request": "x", "corpus": "false"}),
        ("/v1/context", {"request": "x", "corpus": 0}),
        ("/v1/context", {"request": "x", "valid_at": 1_790_000_000}),
        ("/v1/keys", {"actor": "a-1", "label": 7}),
        ("/v1/corpus/search", {"query": "x", "floor": "0.5"}),
        ("/v1/compactions", {"min_turns": "2"}),
    ]:
        found = problem(a.post(path, json=body), 422, "invalid_request")
        assert found["errors"], (path, body)
    problem(a.put("/v1/quotas", json={"max_records": "5"}), 422, "invalid_request")
    # the same fields, of their own types, are taken
    ok(a.post("/v1/recall", json={"query": "x", "k": 10}))
    ok(a.post("/v1/process", json={"max_jobs": 5}))
    packet = {"request": "x", "budget": 500, "corpus": False, "valid_at": WHEN}
    ok(a.post("/v1/context", json=packet))
    ok(a.put("/v1/quotas", json={"max_records": 5, "recalls_per_second": 2}))


ODD_PATHS = ["/v1/me%0A", "/v1/%0A", "/%00", "/v1/me%0D", "/v1/me%7F", "/v1/%1B/x", "/mcp/%0A"]


def test_framework_errors_are_problems_with_codes(memory: Memory) -> None:
    _, token = memory.create_key("acme", "admin-1", role="admin")
    for app in (create_app(memory), build_app(memory, ServeConfig())):  # alone, and as served
        with serve(app) as url, client(url, token) as a:
            for path in ODD_PATHS:
                problem(a.get(path), 404, "no_route")
            problem(a.get("/v1/nowhere"), 404, "no_route")
            wrong = problem(a.delete("/v1/recall"), 405, "method_not_allowed")
            assert wrong["detail"]
            assert a.delete("/v1/recall").headers["allow"] == "POST"
            assert set(a.patch("/v1/quotas").headers["allow"].split(", ")) == {"GET", "PUT"}
            json_type = {"content-type": "application/json"}
            for raw in (b'{"query": "\xff"}', b'{"query": ', b"\xef\xbb", b"nul\x00"):
                problem(a.post("/v1/recall", content=raw, headers=json_type), 400, "malformed_json")
            ok(a.get("/v1/me"))


def _documented() -> dict[str, set[int]]:
    rows = re.findall(r"^\| `([a-z_]+)` \| ([^|]+) \|", DOCS.read_text(), flags=re.M)
    found: dict[str, set[int]] = {}
    for code, status in rows:
        found.setdefault(code, set()).add(int(status) if status.strip().isdigit() else 0)
    return found


def test_every_code_the_app_can_emit_is_documented() -> None:
    emitted: dict[str, set[int]] = {}
    for kind in [*PROBLEMS.values(), *REQUEST_PROBLEMS.values()]:
        status = 0 if kind.code == "request_refused" else kind.status  # the framework's
        emitted.setdefault(kind.code, set()).add(status)
    assert _documented() == emitted


def test_the_last_admin_key_is_not_revoked(clients: Clients, base_url: str) -> None:
    a = clients.admin
    me = ok(a.get("/v1/me")).json()["key_id"]
    found = problem(a.post(f"/v1/keys/{me}/revoke"), 409, "last_admin_key")
    assert "last live admin key" in str(found["detail"])
    ok(a.get("/v1/me"))  # still a key
    made = ok(a.post("/v1/keys", json={"actor": "admin-2", "role": "admin"}), 201).json()
    ok(a.post(f"/v1/keys/{me}/revoke"))
    problem(a.get("/v1/me"), 401, "unauthenticated")
    with client(base_url, made["token"]) as second:
        problem(second.post(f"/v1/keys/{made['key']['key_id']}/revoke"), 409, "last_admin_key")
        ok(second.get("/v1/me"))
