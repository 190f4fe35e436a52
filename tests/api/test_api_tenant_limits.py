"""No request of one tenant can take the service from the others: a per-tenant cap on
requests in flight (429 ``tenant_overloaded``, that tenant shed first), material and
document size limits (413 ``limit_exceeded``, before any work), and a work budget per
request (503 ``budget_exceeded``, nothing written). Real uvicorn in a thread, real
SQLite; requests are held in flight by an extractor that waits, as in the shed test."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from api_helpers import client, ok, problem

from extractor_helpers import holding_extractor
from memledger import Memory
from memledger.api import ServiceLimits, create_app
from memledger.errors import InvalidInputError
from memledger.testing.http import serve
from memledger.testing.scenarios import SUBJECT, TENANT, day, event

OTHER = "globex"
PARAGRAPH = "The delivery window opens at nine and the courier calls ahead.\n\n"


def _token(memory: Memory, tenant: str, actor: str, **options: object) -> str:
    _, token = memory.create_key(tenant, actor, **options)  # type: ignore[arg-type]
    return token


def _traces(c: httpx.Client) -> list[object]:
    found = ok(c.get("/v1/traces")).json()
    assert isinstance(found, list)
    return found


@contextmanager
def _held(memory: Memory, **limits: object) -> Iterator[tuple[str, threading.Event, list[int]]]:
    """A server whose extractor holds every ``POST /v1/process`` until released: (base URL,
    the release, how many extractions have started)."""
    extractor, release, started = holding_extractor()
    app = create_app(
        memory,
        extractor=extractor,
        max_in_flight=int(limits.pop("max_in_flight", 4)),  # type: ignore[call-overload]
        limits=ServiceLimits(**limits),  # type: ignore[arg-type]
    )
    try:
        with serve(app) as base:
            yield base, release, started
    finally:
        release.set()


def test_a_flooding_tenant_is_shed_by_its_own_cap_while_another_gets_in(memory: Memory) -> None:
    for n in range(4):
        memory.ingest(event(f"e{n}", f"I live in Porto, say {n}.", occurred_at=day(10, 1)))
    first = _token(memory, TENANT, "ops", role="admin", principal="service")
    second = _token(memory, TENANT, "ops-2", role="admin", principal="service")
    quiet = _token(memory, OTHER, "admin-g", role="admin", grants=["*"])
    with _held(memory, max_in_flight=4, tenant_in_flight=2) as (base, release, started):
        a1, a2, b = client(base, first), client(base, second), client(base, quiet)
        # a1 was never used before: its first request counts as its tenant's at once
        flood: list[httpx.Response] = []
        threads = [
            threading.Thread(
                target=lambda c=c: flood.append(c.post("/v1/process", json={"max_jobs": 1}))
            )
            for c in (a1, a2, a1, a2)
        ]
        for thread in threads:
            thread.start()
        give_up = time.monotonic() + 20
        while len(flood) < 2 and time.monotonic() < give_up:
            time.sleep(0.02)  # two are held in flight, the other two shed at once
        assert sorted(r.status_code for r in flood) == [429, 429], [r.text for r in flood]
        for refused in flood:
            assert refused.headers["Retry-After"] == "1"
            problem(refused, 429, "tenant_overloaded")
        while started[0] < 1 and time.monotonic() < give_up:
            time.sleep(0.02)  # an admitted one reached the extractor: it is held there
        assert started[0] >= 1
        # the flooding tenant is shed at its cap, whichever of its keys it uses ...
        problem(a1.get("/v1/me"), 429, "tenant_overloaded")
        problem(a2.post("/v1/recall", json={"query": "where?"}), 429, "tenant_overloaded")
        # ... while the other tenant's requests of the same moment all get in
        answers: list[httpx.Response] = []
        quiet_threads = [
            threading.Thread(
                target=lambda: answers.append(b.post("/v1/recall", json={"query": "where?"}))
            )
            for _ in range(2)
        ]
        for thread in quiet_threads:
            thread.start()
        for thread in quiet_threads:
            thread.join(20)
        assert [r.status_code for r in answers] == [200, 200], [r.text for r in answers]
        assert ok(a1.get("/healthz")).json()  # never shed
        release.set()
        for thread in threads:
            thread.join(20)
        assert sorted(r.status_code for r in flood) == [200, 200, 429, 429]
        ok(a1.get("/v1/me"))  # admitted again once its requests are done
        for c in (a1, a2, b):
            c.close()


def test_material_over_the_limit_is_refused_before_any_work(memory: Memory, base_url: str) -> None:
    c = client(base_url, _token(memory, TENANT, SUBJECT, role="admin"))
    limit = ServiceLimits().max_material_chars
    assert limit == 250_000  # the documented default
    big = PARAGRAPH * (limit // len(PARAGRAPH) + 1)
    body = {"request": "when does the delivery window open?", "subject": SUBJECT}
    refused = c.post("/v1/context", json={**body, "material": [{"name": "log", "text": big}]})
    detail = problem(refused, 413, "limit_exceeded")["detail"]
    assert f"{len(big):,}" in str(detail) and f"{limit:,}" in str(detail)
    halves = [{"name": n, "text": big[: len(big) // 2 + 1]} for n in ("a", "b")]
    problem(c.post("/v1/context", json={**body, "material": halves}), 413, "limit_exceeded")
    assert _traces(c) == []  # nothing was assembled or kept
    fits = big[:limit]
    packet = ok(c.post("/v1/context", json={**body, "material": [{"name": "log", "text": fits}]}))
    assert packet.json()["routing"]["long_context"] is True
    assert len(_traces(c)) == 1
    c.close()


def test_a_document_over_the_limit_is_refused_and_nothing_is_kept(
    memory: Memory, tmp_path: Path
) -> None:
    token = _token(memory, TENANT, "admin-1", role="admin")
    app = create_app(memory, limits=ServiceLimits(max_document_chars=2_000))
    with serve(app) as base, client(base, token) as c:
        doc = {"name": "handbook", "content": "# Returns\n\n" + PARAGRAPH * 40}
        assert len(str(doc["content"])) > 2_000
        detail = problem(c.post("/v1/corpus/documents", json=doc), 413, "limit_exceeded")
        assert "2,000" in str(detail["detail"])
        assert ok(c.get("/v1/corpus/documents")).json() == []
        small = {"name": "handbook", "content": "# Returns\n\n" + PARAGRAPH}
        assert ok(c.post("/v1/corpus/documents", json=small)).json()["outcome"] == "added"
    assert ServiceLimits().max_document_chars == 1_000_000  # the documented default
    kept = [p.name for p in tmp_path.glob("*.corpus.documents/*/*")]
    assert kept == ["handbook.md"]


def test_a_request_past_its_work_budget_answers_a_clear_error_and_writes_nothing(
    memory: Memory, tmp_path: Path
) -> None:
    token = _token(memory, TENANT, "admin-1", role="admin")
    memory.ingest(event("e1", "I live in Porto.", occurred_at=day(10, 1)))
    memory.process()
    first = {"name": "handbook", "content": "# Returns\n\nReturns take five days.\n"}
    second = {"name": "handbook", "content": "# Returns\n\nReturns take ten days.\n"}
    body = {
        "request": "when does the delivery window open?",
        "subject": SUBJECT,
        "material": [{"name": "log", "text": PARAGRAPH * 50}],
    }
    tight = create_app(memory, limits=ServiceLimits(request_seconds=1e-9))
    with serve(create_app(memory)) as roomy, serve(tight) as hurried:
        at_ease, rushed = client(roomy, token), client(hurried, token)
        added = ok(at_ease.post("/v1/corpus/documents", json=first)).json()
        assert added["outcome"] == "added"
        before = ok(at_ease.get("/v1/corpus/documents")).json()
        for refused in (
            rushed.post("/v1/context", json=body),
            rushed.post("/v1/recall", json={"query": "where does the user live?"}),
            rushed.post("/v1/corpus/documents", json=second),
            rushed.post("/v1/corpus/documents", json={**second, "name": "other"}),
        ):
            detail = problem(refused, 503, "budget_exceeded")["detail"]
            assert "nothing was written" in str(detail)
        assert _traces(at_ease) == []  # no packet half-kept
        assert ok(at_ease.get("/v1/corpus/documents")).json() == before  # the first stays
        kept = {p.name: p.read_text() for p in tmp_path.glob("*.corpus.documents/*/*")}
        assert kept == {"handbook.md": first["content"]}  # neither upload left behind
        assert _refusals(rushed)["budget_exceeded"] == 4  # each counted in /metrics
        ok(at_ease.post("/v1/context", json=body))  # the same request within its budget
        assert len(_traces(at_ease)) == 1
        at_ease.close()
        rushed.close()


def test_the_limits_are_checked_when_the_app_is_made(memory: Memory) -> None:
    for bad in (
        {"tenant_in_flight": 0},
        {"tenant_in_flight": True},
        {"max_material_chars": 0},
        {"max_document_chars": 1.5},
        {"request_seconds": 0},
        {"request_seconds": float("nan")},
        {"request_seconds": "10"},
    ):
        with pytest.raises(InvalidInputError, match=next(iter(bad))):
            ServiceLimits(**bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="limits"):
        create_app(memory, limits={"tenant_in_flight": 2})  # type: ignore[arg-type]


def test_a_lone_tenant_borrows_free_places_for_light_requests_but_never_for_heavy_ones(
    memory: Memory,
) -> None:
    for n in range(8):
        memory.ingest(event(f"e{n}", f"I live in Porto, say {n}.", occurred_at=day(10, 1)))
    token = _token(memory, TENANT, "ops", role="admin", principal="service")
    with _held(memory, max_in_flight=6, tenant_in_flight=2) as (base, release, started):
        a = client(base, token)
        answers: list[httpx.Response] = []
        holders = [
            threading.Thread(
                target=lambda: answers.append(a.post("/v1/process", json={"max_jobs": 1}))
            )
            for _ in range(2)
        ]
        for thread in holders:
            thread.start()
        give_up = time.monotonic() + 20
        while started[0] < 2 and time.monotonic() < give_up:
            time.sleep(0.02)  # the tenant is at its cap of 2, on a service of 6
        ok(a.get("/v1/me"))  # a light request borrows a free place
        big = PARAGRAPH * (70_000 // len(PARAGRAPH))  # a body over 64 KiB: heavy
        heavy = {"request": "when?", "material": [{"name": "log", "text": big}]}
        problem(a.post("/v1/context", json=heavy), 429, "tenant_overloaded")
        release.set()
        for thread in holders:
            thread.join(20)
        assert [r.status_code for r in answers] == [200, 200], [r.text for r in answers]
        ok(a.post("/v1/context", json=heavy))  # below its cap, a heavy one gets in
        a.close()


def test_unknown_tokens_are_looked_up_within_one_shared_cap(memory: Memory) -> None:
    """Requests without a valid key share one bucket, and so does the first look-up of a
    key id not seen yet: a flood of them takes no more places than one tenant."""
    known = _token(memory, TENANT, "ops", role="admin")
    fresh = _token(memory, OTHER, "admin-g", role="admin")
    app = create_app(memory, max_in_flight=8, limits=ServiceLimits(tenant_in_flight=2))
    go = threading.Event()

    def stalled() -> Iterator[bytes]:
        yield b'{"query": '
        go.wait(20)
        yield b'"where?"}'

    with serve(app) as base:
        k = client(base, known)
        ok(k.get("/v1/me"))  # a key id seen once is its tenant's from then on
        answers: list[httpx.Response] = []
        stall = [
            threading.Thread(
                target=lambda: answers.append(client(base).post("/v1/recall", content=stalled()))
            )
            for _ in range(2)
        ]
        for thread in stall:
            thread.start()
        give_up = time.monotonic() + 20
        counts = app.state.memledger.admission.by_bucket  # read, to know when to probe
        while counts["anonymous"] < 2 and time.monotonic() < give_up:
            time.sleep(0.02)  # until both stalled requests hold the shared places
        nobody = client(base)
        problem(nobody.get("/v1/me"), 429, "tenant_overloaded")
        f = client(base, fresh)
        problem(f.get("/v1/me"), 429, "tenant_overloaded")  # its look-up waits its turn
        ok(k.get("/v1/me"))  # a known key's tenant still gets in
        go.set()
        for thread in stall:
            thread.join(20)
        assert [r.status_code for r in answers] == [401, 401]
        ok(f.get("/v1/me"))  # looked up once the shared places are free
        nobody.close()
        k.close()
        f.close()


def _refusals(c: httpx.Client) -> dict[str, float]:
    text = ok(c.get("/metrics")).text
    found = re.findall(r'^memledger_admission_refusals_total\{reason="(\w+)"\} (\S+)$', text, re.M)
    return {reason: float(count) for reason, count in found}


def _gauge(c: httpx.Client, name: str) -> float:
    found = re.search(rf"^{name} (\S+)$", ok(c.get("/metrics")).text, re.M)
    assert found is not None, name
    return float(found[1])


def test_metrics_count_refusals_by_reason_and_requests_in_flight(memory: Memory) -> None:
    memory.ingest(event("e1", "I live in Porto.", occurred_at=day(10, 1)))
    busy = _token(memory, TENANT, "ops", role="admin", principal="service")
    other = _token(memory, OTHER, "admin-g", role="admin", grants=["*"])
    go = threading.Event()

    def stalled() -> Iterator[bytes]:
        yield b'{"query": '
        go.wait(20)
        yield b'"where?"}'

    with _held(memory, max_in_flight=2, tenant_in_flight=1) as (base, release, started):
        a, b, anyone = client(base, busy), client(base, other), client(base)
        assert _refusals(anyone) == dict.fromkeys(
            ("overloaded", "tenant_overloaded", "budget_exceeded"), 0.0
        )
        ok(b.get("/v1/me"))  # b's key id is known from here on: counted under its tenant
        held = threading.Thread(target=lambda: a.post("/v1/process", json={"max_jobs": 1}))
        held.start()
        give_up = time.monotonic() + 20
        while started[0] < 1 and time.monotonic() < give_up:
            time.sleep(0.02)
        problem(a.get("/v1/me"), 429, "tenant_overloaded")  # its tenant's one place is taken
        stall = threading.Thread(target=lambda: b.post("/v1/recall", content=stalled()))
        stall.start()
        while _gauge(anyone, "memledger_requests_in_flight") < 2 and time.monotonic() < give_up:
            time.sleep(0.02)
        assert _gauge(anyone, "memledger_requests_in_flight_busiest_tenant") == 1
        problem(b.get("/v1/me"), 503, "overloaded")  # every place is taken
        refused = _refusals(anyone)
        assert refused == {"overloaded": 1.0, "tenant_overloaded": 1.0, "budget_exceeded": 0.0}
        text = ok(anyone.get("/metrics")).text
        assert TENANT not in text and OTHER not in text  # no tenant in any label
        go.set()
        release.set()
        held.join(20)
        stall.join(20)
        assert _gauge(anyone, "memledger_requests_in_flight") == 0
        for c in (a, b, anyone):
            c.close()
