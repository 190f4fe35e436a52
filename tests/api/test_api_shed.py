"""Load shedding: past ``max_in_flight`` requests at once the next is refused at once
(503 ``overloaded``, Retry-After) instead of queued; health is never shed."""

from __future__ import annotations

import threading

import httpx

from memledger import Memory
from memledger.api import create_app
from memledger.domain.records import Claim, SourceEvent
from memledger.testing import FunctionExtractor
from memledger.testing.http import serve
from memledger.testing.scenarios import TENANT, day, event


def test_past_the_limit_a_request_is_refused_at_once(memory: Memory) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow(source: SourceEvent) -> list[Claim]:
        entered.set()
        release.wait(20)
        return []

    memory.ingest(event("e1", "I live in Porto.", occurred_at=day(10, 1)))
    _, token = memory.create_key(TENANT, "ops", role="admin", principal="service")
    auth = {"Authorization": f"Bearer {token}"}
    app = create_app(memory, extractor=FunctionExtractor(slow), max_in_flight=1)
    with serve(app) as base, httpx.Client(base_url=base, headers=auth, timeout=30) as client:
        done: list[httpx.Response] = []
        busy = threading.Thread(target=lambda: done.append(client.post("/v1/process", json={})))
        busy.start()
        assert entered.wait(20)  # one request in flight, held in the extractor
        refused = client.get("/v1/me")
        assert refused.status_code == 503
        assert refused.headers["Retry-After"] == "1"
        assert refused.headers["Content-Type"].startswith("application/problem+json")
        assert refused.json()["code"] == "overloaded"
        assert client.get("/healthz").status_code == 200  # never shed
        assert "memledger_http_requests_total" in client.get("/metrics").text
        release.set()
        busy.join(20)
        assert done[0].status_code == 200, done[0].text
        assert client.get("/v1/me").status_code == 200  # admitted again
