"""Heavy requests (bodies past 64 KiB) of one tenant are served one at a time, and take
at most ``tenant_heavy_share`` of each second, while another tenant is served: the
flooding tenant's heavy work queues behind its own, not in front of the others'. A
tenant alone on the service gets its whole cap. Real uvicorn in a thread, real SQLite;
a heavy request is held in flight by sending its body slowly. The share's arithmetic
is checked on :class:`Admission` with a clock of the test's own."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from api_helpers import client, ok, problem

from memledger import Memory
from memledger.api import ServiceLimits, create_app
from memledger.api._admission import SHARED_WINDOW_S, TENANT_OVERLOADED, Admission
from memledger.errors import InvalidInputError
from memledger.testing.http import serve
from memledger.testing.scenarios import TENANT

OTHER = "globex"
TEXT = "The delivery window opens at nine and the courier calls ahead.\n\n" * 1200
HEAVY = {"request": "when does the courier call?", "material": [{"name": "log", "text": TEXT}]}


def _token(memory: Memory, tenant: str, actor: str) -> str:
    _, token = memory.create_key(tenant, actor, role="admin", grants=["*"])
    return token


def _held_heavy(c: httpx.Client, release: threading.Event, into: list[int]) -> threading.Thread:
    """A heavy context request kept in flight until ``release``: its body (chunked, so
    of unknown length: heavy) stops after its first part."""
    whole = json.dumps(HEAVY).encode()

    def body() -> Iterator[bytes]:
        yield whole[:1000]
        release.wait(20)
        yield whole[1000:]

    def send() -> None:
        headers = {"Content-Type": "application/json"}
        into.append(c.post("/v1/context", content=body(), headers=headers).status_code)

    thread = threading.Thread(target=send)
    thread.start()
    return thread


def _in_flight(memory_app: object, tenant: str) -> int:
    admission = memory_app.state.memledger.admission  # type: ignore[attr-defined]
    return int(admission.heavy_by_bucket[f"tenant:{tenant}"])


def _wait_heavy(app: object, tenant: str) -> None:
    give_up = time.monotonic() + 20
    while _in_flight(app, tenant) < 1 and time.monotonic() < give_up:
        time.sleep(0.02)
    assert _in_flight(app, tenant) == 1


@contextmanager
def _two_tenants(
    memory: Memory, limits: ServiceLimits
) -> Iterator[tuple[object, httpx.Client, httpx.Client, threading.Event, list[int]]]:
    """A served app with ``limits``: (the app, a client of the noisy tenant, one of the
    quiet tenant, the event that lets a held heavy request finish, its statuses)."""
    noisy, quiet = _token(memory, TENANT, "ops"), _token(memory, OTHER, "admin-g")
    app = create_app(memory, max_in_flight=8, limits=limits)
    release, statuses = threading.Event(), []
    with serve(app) as base:
        a, b = client(base, noisy), client(base, quiet)
        try:
            yield app, a, b, release, statuses
        finally:
            release.set()
            a.close()
            b.close()


def test_a_tenants_second_heavy_request_is_shed_while_another_tenant_is_served(
    memory: Memory,
) -> None:
    limits = ServiceLimits(tenant_in_flight=4, tenant_heavy_share=1.0)  # the count alone
    with _two_tenants(memory, limits) as (app, a, b, release, statuses):
        ok(b.post("/v1/recall", json={"query": "when?"}))  # the other tenant is served
        holder = _held_heavy(a, release, statuses)
        _wait_heavy(app, TENANT)
        problem(a.post("/v1/context", json=HEAVY), 429, "tenant_overloaded")
        ok(a.post("/v1/recall", json={"query": "when?"}))  # light ones still get in
        ok(b.post("/v1/context", json=HEAVY))  # the other tenant's heavy one too
        release.set()
        holder.join(20)
        assert statuses == [200]
        ok(a.post("/v1/context", json=HEAVY))  # its heavy one done: the next gets in


def test_a_tenant_alone_gets_more_than_one_heavy_request_at_once(memory: Memory) -> None:
    with _two_tenants(memory, ServiceLimits(tenant_in_flight=4)) as (app, a, b, release, statuses):
        ok(b.post("/v1/recall", json={"query": "when?"}))
        time.sleep(SHARED_WINDOW_S + 0.2)  # the other tenant has gone quiet since
        holder = _held_heavy(a, release, statuses)
        _wait_heavy(app, TENANT)
        ok(a.post("/v1/context", json=HEAVY))
        release.set()
        holder.join(20)
        assert statuses == [200]


def test_the_heavy_cap_is_checked_when_the_limits_are_made() -> None:
    for bad in (0, True, 1.5):
        with pytest.raises(InvalidInputError, match="tenant_heavy_in_flight"):
            ServiceLimits(tenant_heavy_in_flight=bad)  # type: ignore[arg-type]


def test_a_tenant_whose_heavy_requests_took_its_share_is_shed_until_the_second_slides(
    memory: Memory,
) -> None:
    limits = ServiceLimits(tenant_in_flight=4, tenant_heavy_in_flight=2, tenant_heavy_share=0.1)
    with _two_tenants(memory, limits) as (app, a, b, release, statuses):
        ok(b.post("/v1/recall", json={"query": "when?"}))  # the other tenant is served
        holder = _held_heavy(a, release, statuses)
        _wait_heavy(app, TENANT)
        time.sleep(0.2)  # in flight for a fifth of the second: past its tenth
        problem(a.post("/v1/context", json=HEAVY), 429, "tenant_overloaded")
        release.set()
        holder.join(20)
        assert statuses == [200]
        problem(a.post("/v1/context", json=HEAVY), 429, "tenant_overloaded")  # still
        ok(a.post("/v1/recall", json={"query": "when?"}))  # light ones get in
        ok(b.post("/v1/context", json=HEAVY))  # the other tenant's share is its own
        time.sleep(SHARED_WINDOW_S + 0.1)
        ok(b.post("/v1/recall", json={"query": "when?"}))  # still shared
        ok(a.post("/v1/context", json=HEAVY))  # the busy fifth has slid out


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _admission(clock: Clock, share: float = 0.1) -> Admission:
    return Admission(
        max_in_flight=16,
        tenant_in_flight=4,
        tenant_heavy_in_flight=4,
        tenant_heavy_share=share,
        tenant_of=lambda _: None,
        clock=clock,
    )


def test_the_share_counts_heavy_time_within_the_last_second_while_shared() -> None:
    clock = Clock()
    admission = _admission(clock)
    assert admission.admit("tenant:b") is None  # the other tenant, in flight throughout
    assert admission.admit("tenant:a", heavy=True) is None
    clock.now += 0.06
    admission.release("tenant:a", heavy=True)  # 60 ms of the second
    assert admission.admit("tenant:a", heavy=True) is None  # under a tenth: admitted
    clock.now += 0.03
    assert admission.admit("tenant:a", heavy=True) is None  # 90 ms: still under
    clock.now += 0.02  # 60 + 50 in flight (two at once count twice): past it
    assert admission.admit("tenant:a", heavy=True) is TENANT_OVERLOADED
    assert admission.admit("tenant:a") is None  # a light request is not counted
    admission.release("tenant:a")
    admission.release("tenant:a", heavy=True)
    admission.release("tenant:a", heavy=True)
    clock.now += SHARED_WINDOW_S - 0.09  # 40 of the first 60 ms still in, and 50 + 20
    assert admission.admit("tenant:a", heavy=True) is TENANT_OVERLOADED
    clock.now += 0.1  # all of them slid out
    assert admission.admit("tenant:a", heavy=True) is None
    assert admission.refused["tenant_overloaded"] == 2


def test_a_tenant_alone_is_not_held_to_its_share() -> None:
    clock = Clock()
    admission = _admission(clock)
    assert admission.admit("tenant:a", heavy=True) is None
    clock.now += 0.5
    assert admission.admit("tenant:a", heavy=True) is None  # no one else: no share
    assert admission.admit("tenant:b") is None  # now someone else is served
    assert admission.admit("tenant:a", heavy=True) is TENANT_OVERLOADED


def test_a_whole_share_bounds_heavy_requests_by_their_count_alone() -> None:
    clock = Clock()
    admission = _admission(clock, share=1.0)
    assert admission.admit("tenant:b") is None
    for _ in range(4):
        assert admission.admit("tenant:a", heavy=True) is None
        clock.now += 0.5
    assert admission.admit("tenant:a", heavy=True) is TENANT_OVERLOADED  # its count, 4


def test_the_share_is_checked_when_the_limits_are_made() -> None:
    for bad in (0, 0.0, 1.5, -0.1, True, "0.5"):
        with pytest.raises(InvalidInputError, match="tenant_heavy_share"):
            ServiceLimits(tenant_heavy_share=bad)  # type: ignore[arg-type]
