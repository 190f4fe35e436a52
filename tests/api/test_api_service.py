"""The service around the routes: metrics, health, concurrent requests, the shared
corpus, traces."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

from api_helpers import Clients, client, event_json, ok, pref_json, problem

from memledger import Memory
from memledger.api import create_app
from memledger.testing.http import serve
from memledger.testing.scenarios import SUBJECT, TENANT, day
from memledger.wire import isoformat


def test_metrics_count_requests_by_route_template(clients: Clients) -> None:
    a = clients.admin
    ok(a.get("/healthz"))
    ok(a.get(f"/v1/subjects/{SUBJECT}/families"))
    problem(a.get("/v1/memories/mem-secret-id-1"), 404, "memory_not_found")
    problem(a.get("/v1/nowhere"), 404, "no_route")
    text = ok(clients.anonymous.get("/metrics")).text
    assert clients.anonymous.get("/metrics").headers["content-type"].startswith("text/plain")
    expect = [
        'memledger_http_requests_total{method="GET",route="/healthz",status="200"} 1.0',
        'memledger_http_requests_total{method="GET",route="/v1/subjects/{subject:path}/families",'
        'status="200"} 1.0',
        'memledger_http_requests_total{method="GET",route="/v1/memories/{memory_id}",'
        'status="404"} 1.0',
        'memledger_http_requests_total{method="GET",route="<unmatched>",status="404"} 1.0',
        'memledger_http_problems_total{code="memory_not_found"} 1.0',
        "memledger_http_request_duration_seconds_bucket",
    ]
    for line in expect:
        assert line in text, line
    # no tenant, id or content in any label
    for secret in (TENANT, "globex", SUBJECT, "mem-secret-id-1", "nowhere"):
        assert secret not in text, secret


def test_metrics_carry_the_freshness_figures(clients: Clients) -> None:
    w = clients.writer
    ok(w.post("/v1/events", json=event_json("evt-q", "Fridays suit me.", occurred_at=at0())))
    ok(w.post("/v1/recall", json={"query": "quantum chromodynamics"}))
    text = ok(clients.anonymous.get("/metrics")).text
    for line in (
        "memledger_freshness_up 1.0",
        "memledger_extraction_backlog_jobs 1.0",
        "memledger_recalls_total 1.0",
        "memledger_recalls_abstained_total 1.0",
        "memledger_extraction_oldest_queued_seconds",
        "memledger_index_lag_rows",
    ):
        assert line in text, line
    assert TENANT not in text and "evt-q" not in text


def at0() -> str:
    return isoformat(day(10, 2, 9))


def test_metrics_are_per_app_and_can_be_off(memory: Memory) -> None:
    with serve(create_app(memory)) as one, serve(create_app(memory)) as two:
        ok(client(one).get("/healthz"))
        text = ok(client(two).get("/metrics")).text
        assert 'route="/healthz"' not in text
    with serve(create_app(memory, metrics=False)) as url:
        problem(client(url).get("/metrics"), 404, "no_route")


def test_health_and_readiness(clients: Clients) -> None:
    assert ok(clients.anonymous.get("/healthz")).json() == {"status": "ok"}
    assert ok(clients.anonymous.get("/readyz")).json() == {"status": "ok"}


def test_concurrent_requests(clients: Clients, memory: Memory) -> None:
    """Requests run on FastAPI's thread pool, each thread with its own SQLite connection."""
    api = clients.writer

    def write(n: int) -> int:
        body = event_json(
            f"evt-{n}",
            f"note {n}",
            occurred_at=isoformat(day(10, 2, 9, n)),
            subject=f"user-{n % 4}",
            claims=[pref_json(f"value-{n}")],
        )
        return api.post("/v1/events", json=body).status_code

    def read(n: int) -> int:
        if n % 2:
            return api.post("/v1/recall", json={"query": f"note {n}"}).status_code
        return api.get(f"/v1/subjects/user-{n % 4}/families").status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        writes = pool.map(write, range(24))
        reads = pool.map(read, range(24))
        statuses = list(writes) + list(reads)
    assert statuses == [200] * 48
    revisions = {
        s: sum(slot.revision for slot in memory.families(f"user-{s}", tenant=TENANT))
        for s in range(4)
    }
    assert revisions == {0: 6, 1: 6, 2: 6, 3: 6}


def test_the_shared_corpus(clients: Clients) -> None:
    a = clients.admin
    assert ok(a.get("/v1/corpus/documents")).json() == []
    assert ok(a.post("/v1/corpus/search", json={"query": "credit hold"})).json()["found"] == 0
    handbook = "# Expedited orders\n\n## Credit hold\n\nOrders on credit hold ship once paid.\n"
    added = ok(
        a.post("/v1/corpus/documents", json={"name": "handbook", "content": handbook})
    ).json()
    assert (added["name"], added["outcome"]) == ("handbook.md", "added")
    again = ok(a.post("/v1/corpus/documents", json={"name": "handbook.md", "content": handbook}))
    assert again.json()["outcome"] == "unchanged"
    html = {
        "name": "faq",
        "content": "<h1>FAQ</h1><p>Returns take 30 days.</p>",
        "media_type": "text/html",
    }
    assert ok(a.post("/v1/corpus/documents", json=html)).json()["name"] == "faq.html"
    listed = ok(clients.reader.get("/v1/corpus/documents")).json()
    assert [(d["name"], d["kind"]) for d in listed] == [
        ("faq.html", "html"),
        ("handbook.md", "markdown"),
    ]
    assert not any("/" in d["name"] for d in listed)  # where the server keeps it is not said
    found = ok(clients.reader.post("/v1/corpus/search", json={"query": "credit hold orders"}))
    hits = found.json()["hits"]
    assert hits and hits[0]["chunk"]["document"] == "handbook.md"
    assert "/" not in found.text.replace("</", "")
    packet = ok(a.post("/v1/context", json={"request": "How do I release a credit hold?"}))
    assert "credit hold" in packet.json()["text"].lower()
    # another tenant sees none of it, and cannot remove it
    assert ok(clients.other.get("/v1/corpus/documents")).json() == []
    foreign = clients.other.delete("/v1/corpus/documents/handbook.md")
    problem(foreign, 404, "not_found")
    assert foreign.content == clients.other.delete("/v1/corpus/documents/nope.md").content
    problem(
        a.post("/v1/corpus/documents", json={"name": "../x", "content": "x"}),
        422,
        "invalid_request",
    )
    ok(a.delete("/v1/corpus/documents/handbook.md"), 204)
    assert [d["name"] for d in ok(a.get("/v1/corpus/documents")).json()] == ["faq.html"]
    problem(a.delete("/v1/corpus/documents/handbook.md"), 404, "not_found")


def test_traces_listed_shown_and_replayed(clients: Clients) -> None:
    api = clients.writer
    ok(
        api.post(
            "/v1/events",
            json=event_json(
                "e1", "Fridays", occurred_at=isoformat(day(10, 1, 9)), claims=[pref_json("friday")]
            ),
        )
    )
    packet = ok(
        api.post(
            "/v1/context",
            json={
                "request": "When should the digest go out?",
                "subject": SUBJECT,
                "budget": {"total": 400, "sections": {"memories": 200}},
                "live": [
                    {
                        "name": "order",
                        "value": {"status": "open"},
                        "observed_at": isoformat(day(10, 1, 10)),
                    }
                ],
                "constraints": [{"id": "policy-1", "rule": "Never ship on Sundays."}],
                "material": [{"name": "notes.txt", "text": "A long note about digests."}],
            },
        )
    ).json()
    assert packet["tokens"] <= 400 and "Never ship on Sundays." in packet["text"]
    assert re.fullmatch(r"ctx-[0-9a-f]+", packet["trace_id"])
    (summary,) = ok(api.get("/v1/traces")).json()
    assert summary["trace_id"] == packet["trace_id"]
    stored = ok(api.get(f"/v1/traces/{packet['trace_id']}")).json()
    assert stored["body"]["request"] == "When should the digest go out?"
    replayed = ok(api.post(f"/v1/traces/{packet['trace_id']}/replay")).json()
    assert replayed["matches"] and replayed["text"] == packet["text"]
    problem(api.get("/v1/traces", params={"limit": 0}), 422, "invalid_request")
    assert any(i["section"] == "memories" for i in packet["items"])
