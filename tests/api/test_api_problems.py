"""Errors as problem details (RFC 9457): the class table, each status class over a real
server, malformed input of every kind, and no internals in a 500."""

from __future__ import annotations

import logging
import subprocess
import sys

import httpx
import pytest
from api_helpers import Clients, client, event_json, ok, problem

import memledger.errors
from memledger import Memory
from memledger.api import REQUEST_PROBLEMS, create_app
from memledger.errors import MemledgerError, StoreLockedError
from memledger.testing.http import serve
from memledger.testing.scenarios import FAMILY, SUBJECT, TENANT, day
from memledger.wire import isoformat
from memledger.wire_models import (
    CONSISTENCY_HEADER,
    PROBLEMS,
    Problem,
    error_class,
    problem_kind,
)

SLOT = f"/v1/subjects/{SUBJECT}/families/{FAMILY}"


def _classes() -> list[type[MemledgerError]]:
    return [getattr(memledger.errors, name) for name in memledger.errors.__all__]


def test_every_error_class_has_its_own_problem() -> None:
    classes = _classes()
    assert set(PROBLEMS) == set(classes), "an error class without a problem, or a stale one"
    codes = [kind.code for kind in PROBLEMS.values()]
    assert len(set(codes)) == len(codes), "two classes share a code"
    for cls in classes:
        kind = problem_kind(cls.__new__(cls))
        assert kind is PROBLEMS[cls], cls
        assert 400 <= kind.status < 600 and kind.code.isidentifier() and kind.title
        assert kind.type == f"https://memledger.dev/problems/{kind.code}"
        assert error_class(kind.code) is cls  # a client raises the same class again
        if kind.status >= 500 or issubclass(cls, memledger.errors.NotFoundError):
            assert kind.detail, f"{cls.__name__} must not show its message"
    assert problem_kind(ValueError("x")) is None
    request_codes = {k.code for k in REQUEST_PROBLEMS.values()}
    assert not request_codes & (set(codes) - {"limit_exceeded"})


def test_a_problem_for_each_status_class(clients: Clients, base_url: str) -> None:
    a = clients.admin
    problem(
        a.post("/v1/recall", json={"query": "x", "k": 1, "subject": "bad subject"}),
        422,
        "invalid_request",
    )
    problem(
        a.get(f"{SLOT}/current", params={"scope": "x", "valid_at": "yesterday"}),
        422,
        "invalid_request",
    )
    misspelt = problem(
        a.get(f"{SLOT}/current", params={"valdi_at": "2026-10-02T09:00:00Z"}),
        422,
        "invalid_request",
    )
    assert misspelt["errors"] == [{"loc": ["query", "valdi_at"], "msg": "Unknown parameter"}]
    bad_event = event_json("e", "x", occurred_at="2026-10-02T09:00:00")  # no time zone
    found = problem(a.post("/v1/events", json=bad_event), 400, "invalid_event")
    assert "time zone" in str(found["detail"])
    problem(a.post("/v1/events", json={**bad_event, "channel": "pigeon"}), 400, "invalid_event")
    claims = [{"family": FAMILY, "kind": "rumour", "statement": "x", "value": 1}]
    problem(
        a.post(
            "/v1/events", json={**bad_event, "occurred_at": isoformat(day(10, 2)), "claims": claims}
        ),
        400,
        "unknown_kind",
    )
    problem(
        a.post("/v1/context", json={"request": "x", "budget": {"total": 1}}), 400, "invalid_budget"
    )
    problem(clients.anonymous.get("/v1/me"), 401, "unauthenticated")
    problem(clients.reader.post("/v1/events", json=bad_event), 403, "permission_denied")
    problem(a.get("/v1/memories/mem-nope"), 404, "memory_not_found")
    problem(a.get("/v1/nowhere"), 404, "no_route")
    problem(a.delete("/v1/recall"), 405, "method_not_allowed")
    ok(a.post("/v1/events", json={**bad_event, "occurred_at": isoformat(day(10, 2))}))
    problem(
        a.post(
            "/v1/events",
            json={**bad_event, "occurred_at": isoformat(day(10, 2)), "text": "other words"},
        ),
        409,
        "event_conflict",
    )
    # every problem validates against the published model
    Problem.model_validate(a.get("/v1/memories/mem-nope").json())


def test_malformed_json_and_consistency_tokens(clients: Clients) -> None:
    a = clients.writer
    json_type = {"content-type": "application/json"}
    for path in ("/v1/events", "/v1/events/batch", "/v1/recall", "/v1/context"):
        problem(a.post(path, content=b'{"query": ', headers=json_type), 400, "malformed_json")
    problem(a.post("/v1/events", content=b"[" * 100_000, headers=json_type), 400, "malformed_json")
    problem(a.post("/v1/events", json=[]), 400, "invalid_event")
    problem(a.post("/v1/events/batch", json=[]), 400, "invalid_event")
    problem(a.post("/v1/events/batch", json={"event_id": "x"}), 400, "invalid_event")
    for token in (
        "",
        "user-42",
        "user-42/delivery_preference",
        "a/b/c@1",
        "a/b@x",
        "a/b@-1",
        "a b/c@1",
        "a/b@1,",
        "a/%FF@1",
        "a/b@" + "9" * 30,
    ):
        found = problem(
            a.get(f"{SLOT}/current", headers={CONSISTENCY_HEADER: token}), 400, "invalid_query"
        )
        assert "malformed consistency token" in str(found["detail"]), token
    found = problem(
        a.post("/v1/recall", json={"query": "x", "consistency": "nope"}), 400, "invalid_query"
    )
    assert "<subject>/<family>@<revision>" in str(found["detail"])


def test_a_batch_is_checked_whole_then_written_event_by_event(clients: Clients) -> None:
    a = clients.writer
    good = event_json("b-1", "x", occurred_at=isoformat(day(10, 2)))
    claim = {"family": "no_such_family", "kind": "fact", "statement": "x", "value": 1}
    bad = event_json("b-2", "y", occurred_at=isoformat(day(10, 2)), claims=[claim])
    # malformed anywhere: nothing is written
    found = problem(
        a.post("/v1/events/batch", json=[good, {**bad, "channel": "pigeon"}]), 400, "invalid_event"
    )
    assert "event #2" in str(found["detail"])
    problem(a.get("/v1/events/b-1"), 404, "event_not_found")
    # refused by the store at the second event: the first stays written, and says so
    found = problem(a.post("/v1/events/batch", json=[good, bad]), 400, "unknown_family")
    assert "event #2" in str(found["detail"]) and "were written" in str(found["detail"])
    ok(a.get("/v1/events/b-1"))
    fixed = ok(a.post("/v1/events/batch", json=[good, {**bad, "claims": None}])).json()
    assert [r["duplicate"] for r in fixed] == [True, False]


def test_a_body_over_the_limit_is_refused(memory: Memory) -> None:
    _, token = memory.create_key(TENANT, "admin-1", role="admin")
    with serve(create_app(memory, max_body_bytes=2_000)) as url, client(url, token) as a:
        big = event_json("e", "x" * 5_000, occurred_at=isoformat(day(10, 2)))
        problem(a.post("/v1/events", json=big), 413, "limit_exceeded")

        def chunks() -> object:
            yield b'{"query": "'
            yield b"x" * 5_000
            yield b'"}'

        streamed = a.post(
            "/v1/recall",
            content=chunks(),  # no Content-Length: chunked
            headers={"content-type": "application/json"},
        )
        problem(streamed, 413, "limit_exceeded")
        ok(a.post("/v1/events", json=event_json("e", "x", occurred_at=isoformat(day(10, 2)))))
        problem(a.post("/v1/events/batch", json=[]), 400, "invalid_event")
    with serve(create_app(memory, max_batch=2)) as url, client(url, token) as a:
        many = [event_json(f"e{n}", "x", occurred_at=isoformat(day(10, 2))) for n in range(3)]
        problem(a.post("/v1/events/batch", json=many), 413, "limit_exceeded")
    with pytest.raises(ValueError, match="max_batch"):
        create_app(memory, max_batch=0)


def test_an_unexpected_error_is_a_500_without_internals(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    _, token = memory.create_key(TENANT, "admin-1", role="admin")

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret-internal-detail at /srv/memledger/db")

    def locked(*args: object, **kwargs: object) -> None:
        raise StoreLockedError("database is locked at /srv/memledger/db")

    memory.recall = boom  # type: ignore[method-assign]
    memory.families = locked  # type: ignore[method-assign]
    with (
        caplog.at_level(logging.ERROR, logger="memledger.api"),
        serve(create_app(memory), log_level="critical") as url,
        client(url, token) as a,
    ):
        response = a.post("/v1/recall", json={"query": "x"})
        body = problem(response, 500, "internal")
        assert "secret" not in response.text and "Traceback" not in response.text
        assert "/srv" not in response.text and "RuntimeError" not in response.text
        busy = a.get(f"/v1/subjects/{SUBJECT}/families")
        problem(busy, 503, "store_locked")
        assert busy.headers["retry-after"] == "1" and "/srv" not in busy.text
        problem(a.get("/readyz"), 503, "not_ready")
    assert body["detail"] == PROBLEMS[MemledgerError].detail
    assert any("RuntimeError" in r.getMessage() for r in caplog.records), caplog.records


def test_importing_the_api_without_fastapi_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['fastapi'] = None\n"
        "try:\n"
        "    import memledger.api\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
        "import memledger.wire_models  # the wire models need no web framework\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert "pip install 'memledger[server]'" in done.stdout, done.stdout + done.stderr


def test_the_openapi_document_declares_every_route(base_url: str) -> None:
    with httpx.Client(base_url=base_url, trust_env=False) as anonymous:
        document = ok(anonymous.get("/openapi.json")).json()
    assert "Problem" in document["components"]["schemas"]
    assert "actor" not in document["components"]["schemas"]["EventIn"].get("required", [])
    operations = [
        (path, method, op) for path, ops in document["paths"].items() for method, op in ops.items()
    ]
    assert len(operations) >= 30
    for path, method, op in operations:
        where = f"{method.upper()} {path}"
        assert op.get("summary") and op.get("description"), where
        success = [s for s in op["responses"] if s.startswith("2")]
        assert success, where
        for status, answer in op["responses"].items():
            if status.startswith(("4", "5")):
                assert list(answer["content"]) == ["application/problem+json"], where
            elif status != "204":
                assert answer.get("content"), where
        if method == "post" and path not in ("/v1/keys/{key_id}/revoke",) and "replay" not in path:
            assert op.get("requestBody"), where
        if path.startswith("/v1"):
            assert op.get("security"), where
            assert {"401", "403", "422"} <= set(op["responses"]), where


def test_the_http_helper_stops_cleanly(memory: Memory) -> None:
    with serve(create_app(memory)) as url:
        ok(httpx.get(f"{url}/healthz", trust_env=False))
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/healthz", trust_env=False, timeout=2)
    with serve(create_app(memory)) as again:
        ok(httpx.get(f"{again}/healthz", trust_env=False))
