"""MCP is admitted and bounded as the HTTP API is: ``memledger serve``'s ``/mcp`` counts a
tenant's requests against the same per-tenant cap as its ``/v1`` ones (429
``tenant_overloaded``: a tool error over MCP), every tool call runs under the work
budget (``budget_exceeded``, nothing written), over streamable HTTP and over stdio;
``/metrics`` counts the refusals by reason and the requests in flight, with no tenant
in any label. Real store, real uvicorn server (serve's own app), the SDK's clients;
requests are held in flight by an extractor that waits."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from extractor_helpers import holding_extractor
from mcp_helpers import (
    OTHER_TENANT,
    QUESTION,
    SUBJECT,
    TENANT,
    error_of,
    http_client,
    payload,
    serving,
    stdio_params,
)
from memledger import Memory
from memledger.api import ServiceLimits
from memledger.errors import EventNotFoundError
from memledger.serve import ServeConfig, build_app
from memledger.testing.scenarios import day, event


def _admin(memory: Memory, tenant: str, actor: str) -> str:
    return memory.create_key(tenant, actor, role="admin", principal="service", grants=["*"])[1]


def _metric(text: str, name: str, labels: str = "") -> float:
    found = re.search(rf"^{re.escape(name + labels)} (\S+)$", text, re.MULTILINE)
    assert found is not None, f"{name}{labels} not in /metrics"
    return float(found[1])


@contextmanager
def _served(memory: Memory, **limits: object) -> Iterator[tuple[str, threading.Event, list[int]]]:
    """serve's app (API and MCP on one admission) with an extractor that holds every
    extraction until released: (base URL, the release, how many have started)."""
    extractor, release, started = holding_extractor()
    config = ServeConfig(
        worker=False,
        web=False,
        max_in_flight=int(limits.pop("max_in_flight", 4)),  # type: ignore[call-overload]
        limits=ServiceLimits(**limits),  # type: ignore[arg-type]
    )
    try:
        with serving(build_app(memory, config, extractor=extractor)) as base:
            yield base, release, started
    finally:
        release.set()


def _wait(done: object, what: str) -> None:
    give_up = time.monotonic() + 20
    while not callable(done) or not done():
        assert time.monotonic() < give_up, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_a_tenant_is_capped_over_http_and_mcp_together_and_shed_first(memory: Memory) -> None:
    for n in range(2):
        memory.ingest(event(f"e{n}", f"I live in Porto, say {n}.", occurred_at=day(10, 1)))
    flooder = _admin(memory, TENANT, "ops")
    quiet = _admin(memory, OTHER_TENANT, "ops-g")
    with _served(memory, max_in_flight=4, tenant_in_flight=2) as (base, release, started):
        api = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {flooder}"})
        held: list[httpx.Response] = []
        threads = [
            threading.Thread(
                target=lambda: held.append(api.post("/v1/process", json={"max_jobs": 1}))
            )
            for _ in range(2)
        ]

        async def main() -> None:
            async with (
                http_client(f"{base}/mcp", flooder) as mine,
                http_client(f"{base}/mcp", quiet) as theirs,
            ):
                for thread in threads:  # the tenant's two places, taken over /v1
                    thread.start()
                await anyio.to_thread.run_sync(lambda: _wait(lambda: started[0] >= 2, "holds"))
                metrics = httpx.get(f"{base}/metrics").text
                assert _metric(metrics, "memledger_requests_in_flight") == 2
                assert _metric(metrics, "memledger_requests_in_flight_busiest_tenant") == 2
                # over MCP the same tenant is refused at once, with the API's code ...
                for tool, args in (
                    ("recall", {"query": QUESTION}),
                    ("remember", {"subject": SUBJECT, "text": "Hi.", "event_id": "mcp-shed"}),
                ):
                    error = error_of(await mine.call_tool(tool, args))
                    assert error["code"] == "tenant_overloaded", error
                # ... while the other tenant gets in
                payload(await theirs.call_tool("recall", {"query": QUESTION}))
                release.set()
                await anyio.to_thread.run_sync(lambda: [t.join(20) for t in threads])
                assert [r.status_code for r in held] == [200, 200], [r.text for r in held]
                payload(await mine.call_tool("recall", {"query": QUESTION}))  # admitted again

        anyio.run(main)
        with pytest.raises(EventNotFoundError):
            memory.event("mcp-shed", tenant=TENANT)  # the refused remember wrote nothing
        metrics = httpx.get(f"{base}/metrics").text
        reason = 'memledger_admission_refusals_total{reason="%s"}'
        assert re.search(reason % "tenant_overloaded" + r" 2\.0$", metrics, re.MULTILINE)
        assert re.search(reason % "overloaded" + r" 0\.0$", metrics, re.MULTILINE)
        assert _metric(metrics, "memledger_requests_in_flight") == 0
        assert TENANT not in metrics and OTHER_TENANT not in metrics  # no tenant in labels
        api.close()


async def _listed(client: Client) -> None:
    """The client's tools, listed once the tenant's one place is free (asked again, up to
    10 s, while the client's handshake requests still hold it)."""
    deadline = time.monotonic() + 10
    while True:
        try:
            await client.list_tools()
            return
        except MCPError as refused:
            if "tenant_overloaded" not in str(refused) or time.monotonic() > deadline:
                raise
            await anyio.sleep(0.05)


def test_mcp_holding_places_sheds_the_same_tenants_http_requests(memory: Memory) -> None:
    writer = memory.create_key(TENANT, SUBJECT, grants=["home_city"])[1]
    with _served(memory, max_in_flight=2, tenant_in_flight=1) as (base, release, started):
        api = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {writer}"})

        async def main() -> None:
            said = {"subject": SUBJECT, "text": "I live in Lyon."}
            async with (
                http_client(f"{base}/mcp", writer) as client,
                anyio.create_task_group() as group,
            ):
                # the client checks a tool's result against the tools' schemas, listing
                # them if it has not yet: listed now, no request follows the held call's
                # answer (the place it held is released just after that answer is sent);
                # the handshake's own requests may still hold the tenant's one place
                await _listed(client)
                # and that listing's place is released before the held call takes it
                await anyio.to_thread.run_sync(
                    lambda: _wait(
                        lambda: (
                            _metric(
                                httpx.get(f"{base}/metrics").text, "memledger_requests_in_flight"
                            )
                            == 0
                        ),
                        "the listing's place",
                    )
                )
                # remember runs the extraction, which holds: one place of its tenant
                group.start_soon(client.call_tool, "remember", said)
                await anyio.to_thread.run_sync(lambda: _wait(lambda: started[0] >= 1, "hold"))
                refused = await anyio.to_thread.run_sync(
                    lambda: api.post("/v1/recall", json={"query": QUESTION})
                )
                assert refused.status_code == 429, refused.text
                assert refused.json()["code"] == "tenant_overloaded"
                assert refused.headers["Retry-After"] == "1"
                release.set()

        anyio.run(main)
        assert api.post("/v1/recall", json={"query": QUESTION}).status_code == 200
        api.close()


def test_an_mcp_call_past_its_budget_is_a_tool_error_and_writes_nothing(memory: Memory) -> None:
    memory.ingest(event("e1", "I live in Porto.", occurred_at=day(10, 1)))
    memory.process()
    token = _admin(memory, TENANT, "ops")
    tight = ServeConfig(worker=False, web=False, limits=ServiceLimits(request_seconds=1e-9))
    request = {"request": "where does the user live?", "subject": SUBJECT}

    async def main(url: str) -> None:
        async with http_client(url, token) as client:
            for tool, args in (("context", request), ("recall", {"query": QUESTION})):
                error = error_of(await client.call_tool(tool, args))
                assert error["code"] == "budget_exceeded", error
                assert "nothing was written" in error["message"]

    with serving(build_app(memory, tight)) as base:
        anyio.run(lambda: main(f"{base}/mcp"))
        headers = {"Authorization": f"Bearer {token}"}
        assert httpx.get(f"{base}/v1/traces", headers=headers).json() == []  # no packet kept
        metrics = httpx.get(f"{base}/metrics").text
        counted = 'memledger_admission_refusals_total{reason="budget_exceeded"}'
        assert _metric(metrics, counted) == 2
    with serving(build_app(memory, ServeConfig(worker=False, web=False))) as base:
        anyio.run(lambda: _context_fits(f"{base}/mcp", token, request))


async def _context_fits(url: str, token: str, request: dict[str, str]) -> None:
    async with http_client(url, token) as client:
        assert payload(await client.call_tool("context", request))["trace_id"]


def test_stdio_calls_run_under_the_budget_given(memory: Memory, store: Path) -> None:
    memory.ingest(event("e1", "I live in Porto.", occurred_at=day(10, 1)))
    memory.process()
    token = memory.create_key(TENANT, SUBJECT, grants=["home_city"])[1]
    params = stdio_params(f"sqlite:///{store}", token)
    params.args.extend(["--request-seconds", "1e-9"])

    async def main() -> None:
        async with Client(params) as client:
            error = error_of(await client.call_tool("recall", {"query": QUESTION}))
            assert error["code"] == "budget_exceeded", error

    anyio.run(main)


def test_a_heavy_mcp_request_gives_its_heavy_place_back(memory: Memory) -> None:
    """A large MCP body counts as one of its tenant's heavy requests while it runs and
    gives that place back when it ends: the tenant's next large /v1 request, with another
    tenant served a moment before, is admitted (not held to a heavy cap it no longer
    uses)."""
    heavy = _admin(memory, TENANT, "ops")
    other = _admin(memory, OTHER_TENANT, "ops-g")
    padding = "x" * (80 * 1024)  # past the 64 KiB that make a body heavy
    with _served(memory, max_in_flight=8, tenant_in_flight=4) as (base, _, _):
        mine = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {heavy}"})
        theirs = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {other}"})
        for n in range(2):  # any answer: the place is taken and must be given back
            body = {"jsonrpc": "2.0", "id": n, "method": "ping", "params": {"pad": padding}}
            mine.post(
                "/mcp",
                json=body,
                headers={"Accept": "application/json, text/event-stream"},
            )
        assert theirs.post("/v1/recall", json={"query": QUESTION}).status_code == 200
        material = [{"name": "log", "text": "The courier calls at nine. " * 3000}]
        found = mine.post("/v1/context", json={"request": QUESTION, "material": material})
        assert found.status_code == 200, found.text
