"""Namespaces are invisible in time too (DESIGN.md invariant 13): another agent's
memory, event or trace id (a trace of its subject, or of a packet across the tenant that
held one of its memories) is answered as fast as a missing one.

The planner writes over the real HTTP server; the timing runs the route functions the
server runs for ``GET /v1/memories/{id}``, ``/v1/events/{id}`` and ``/v1/traces/{id}``
(the same code, minus the socket and the event loop), with the booker's principal as
the server authenticates it. Over HTTP on a loaded 2-core machine a request takes
milliseconds, with a spread far above the tens of microseconds that reading a foreign
row and then refusing it costs: a few hundred pairs cannot see that there, here they do.

Each check sends a few hundred interleaved pairs (a foreign id and a missing id of the
same shape, in a random order within each pair) and takes the median of the paired
differences: noise that hits both requests of a pair cancels, and a slow outlier moves
a median little. A systematic difference shows as a median above the tolerance and as
the foreign request being the slower one in most pairs; the check fails only when both
hold, so one noisy burst on a shared 2-core machine does not fail it."""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import httpx
import pytest
from api_helpers import client, ok, post_event, pref_json
from fastapi import Response

from memledger import Memory
from memledger.api import _events, _reads, _traces, create_app
from memledger.api._problems import problem_response
from memledger.api._services import Services
from memledger.domain.keys import Principal
from memledger.errors import MemledgerError
from memledger.testing.scenarios import FAMILY, TENANT
from memledger.wire_models import problem_kind

PAIRS = 400
TOLERANCE = 0.25
"""The most the median paired difference may be, as a share of the median time of a
missing id. A foreign id read and then refused costs 70-200% more than a missing one;
one left out by the store query costs 3-5% more (the index finds its row and the
namespace condition turns it down), a microsecond or two."""
SLOWER_SHARE = 0.6
"""Of 400 pairs, the share in which the foreign id was the slower must also be past this
for the check to fail: a systematic difference is slower nearly always (98-100%)."""

PRIVATE = "agent:planner/customer-7"


@dataclass(frozen=True, slots=True)
class Agents:
    planner: httpx.Client
    booker: httpx.Client
    svc: Services
    """What the app's routes are given (the app serving ``base_url`` has its own)."""
    who: Principal
    """The booker, as the server authenticates its key."""


@pytest.fixture
def agents(memory: Memory, base_url: str) -> Iterator[Agents]:
    tokens = [
        memory.create_key(TENANT, actor, principal="agent", grants=[FAMILY])[1]
        for actor in ("planner", "booker")
    ]
    services = create_app(memory).state.memledger
    assert isinstance(services, Services)
    made = Agents(
        planner=client(base_url, tokens[0]),
        booker=client(base_url, tokens[1]),
        svc=services,
        who=memory.authenticate(tokens[1]),
    )
    yield made
    made.planner.close()
    made.booker.close()


def problem_of(exc: MemledgerError) -> None:
    """The problem response the server's handler makes of ``exc``."""
    kind = problem_kind(exc)
    assert kind is not None and kind.status == 404, exc
    problem_response(kind, str(exc))


Route = Callable[[str], object]


def paired(route: Route, foreign: str, missing: str) -> tuple[float, float]:
    """The median of (foreign - missing) over interleaved pairs, as a share of the median
    time of the missing id, and the share of pairs in which the foreign id was slower."""

    def took(given: str) -> float:
        start = time.perf_counter()
        try:
            route(given)
        except MemledgerError as exc:
            problem_of(exc)  # what the server's handler makes of it, for both alike
        else:
            raise AssertionError(f"{given!r} was answered")
        return time.perf_counter() - start

    rng = random.Random(25)
    for given in (foreign, missing) * 50:  # warm both paths
        took(given)
    differences, base = [], []
    for _ in range(PAIRS):
        order = [foreign, missing]
        rng.shuffle(order)
        times = {given: took(given) for given in order}
        differences.append(times[foreign] - times[missing])
        base.append(times[missing])
    share = statistics.median(differences) / statistics.median(base)
    return share, sum(d > 0 for d in differences) / PAIRS


def _same_time(agent: httpx.Client, route: Route, path: str, foreign: str, missing: str) -> None:
    assert agent.get(path + foreign).content == agent.get(path + missing).content
    more, slower = paired(route, foreign, missing)
    assert not (more > TOLERANCE and slower > SLOWER_SHARE), (
        f"{foreign}: foreign {more:.0%} slower than missing (median of {PAIRS} pairs), "
        f"slower in {slower:.0%} of pairs"
    )


def _written(planner: httpx.Client) -> dict[str, str]:
    """A private memory, event and trace id of the planner, by the path that reads it."""
    said = post_event(
        planner,
        "p-000001",
        "Deliver weekly, noted by the planner.",
        occurred_at="2026-10-01T09:00:00Z",
        subject=PRIVATE,
        claims=[pref_json("weekly")],
    )
    (result,) = ok(said).json()["results"]
    packet = ok(
        planner.post(
            "/v1/context", json={"request": "How to deliver?", "budget": 500, "subject": PRIVATE}
        )
    ).json()
    return {
        "/v1/memories/": str(result["memory_id"]),
        "/v1/events/": "p-000001",
        "/v1/traces/": str(packet["trace_id"]),
    }


def _route(agents: Agents, path: str) -> Route:
    """What the server runs for ``GET path + id``, as the booker."""
    svc, who = agents.svc, agents.who
    routes: dict[str, Route] = {
        "/v1/memories/": lambda given: _reads.get_memory(given, svc, who),
        "/v1/events/": lambda given: _events.get_event(given, svc, who, Response()),
        "/v1/traces/": lambda given: _traces.get_trace(given, svc, who),
    }
    return routes[path]


def _zeros(given: str) -> str:
    """A missing id of the shape of ``given`` (its prefix, then zeros)."""
    return given[:4] + "0" * (len(given) - 4)


@pytest.mark.parametrize(
    ("path", "missing"),
    [
        ("/v1/memories/", _zeros),
        ("/v1/events/", lambda _: "p-000002"),
        ("/v1/traces/", _zeros),
    ],
    ids=["memory", "event", "trace"],
)
def test_a_foreign_id_takes_as_long_as_a_missing_one(
    agents: Agents, path: str, missing: Callable[[str], str]
) -> None:
    foreign = _written(agents.planner)[path]
    _same_time(agents.booker, _route(agents, path), path, foreign, missing(foreign))


def test_a_tenant_wide_trace_holding_a_foreign_memory_takes_as_long_as_a_missing_one(
    agents: Agents,
) -> None:
    _written(agents.planner)
    packet = ok(
        agents.planner.post(
            "/v1/context", json={"request": "How should deliveries go?", "budget": 500}
        )
    ).json()
    assert packet["subject"] is None and any(i.get("memory_id") for i in packet["items"])
    trace_id = str(packet["trace_id"])
    path = "/v1/traces/"
    _same_time(agents.booker, _route(agents, path), path, trace_id, _zeros(trace_id))
