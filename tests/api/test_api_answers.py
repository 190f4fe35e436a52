"""Recall and context answers are written in the thread that read them: over a real
server, each is byte for byte what the route's response model would write, and a
score that is not a finite number is written as ``null`` as the model writes it."""

from __future__ import annotations

import math
from collections.abc import Callable

import anyio.to_thread
import httpx
import pytest
from api_helpers import Clients, event_json, ok
from pydantic import TypeAdapter
from test_api_story import story

from memledger import wire_models as wm
from memledger.api._answers import answer
from memledger.testing import FrozenClock
from memledger.testing.scenarios import FAMILY, SUBJECT


def _as_the_model_writes(model: type, answered: httpx.Response) -> bytes:
    adapter: TypeAdapter[object] = TypeAdapter(model)
    return adapter.dump_json(adapter.validate_json(answered.content))


def test_the_hot_reads_answer_what_their_models_write(clients: Clients, clock: FrozenClock) -> None:
    story(clients.writer, clock)
    recalled = clients.reader.post(
        "/v1/recall", json={"query": "digest delivery", "subject": SUBJECT}
    )
    assert ok(recalled).json()["items"], "the story's memories are recalled"
    packet = clients.reader.post(
        "/v1/context",
        json={
            "request": "when is my digest delivered?",
            "subject": SUBJECT,
            "material": [{"name": "notes.txt", "text": "The digest goes out at nine."}],
            "live": [
                {
                    "name": "plan",
                    "value": {"tier": "pro"},
                    "observed_at": "2026-10-20T09:00:00Z",
                    "source": "billing",
                }
            ],
            "constraints": [{"id": "c1", "rule": "Never email after 18:00."}],
        },
    )
    assert ok(packet).json()["text"]
    current = clients.reader.get(f"/v1/subjects/{SUBJECT}/families/{FAMILY}/current")
    assert ok(current).json(), "the story's family has current values"
    for model, answered in ((wm.Recall, recalled), (wm.Packet, packet), (list[wm.Record], current)):
        assert answered.headers["content-type"] == "application/json"
        assert answered.content == _as_the_model_writes(model, answered), model


def test_a_number_that_is_not_finite_is_written_as_null() -> None:
    written = answer({"score": math.nan, "top": math.inf, "items": [-math.inf, 1.5]})
    assert written.body == b'{"score":null,"top":null,"items":[null,1.5]}'
    assert written.status_code == 200 and written.media_type == "application/json"


def test_a_hot_read_goes_to_a_worker_thread_once_or_twice(
    clients: Clients, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each trip to a worker thread costs the interpreter's hand-overs: a well-formed
    recall takes one (the key's lookup and the recall together, :mod:`memledger.api._hot`),
    the other hot reads two (the key's lookup, the read itself); the services' lookup,
    the view's path and the answer's writing stay where they are."""
    story(clients.writer, clock)
    trips: list[str] = []
    run_sync = anyio.to_thread.run_sync

    async def counted(func: Callable[..., object], *args: object, **kwargs: object) -> object:
        trips.append(getattr(func, "__name__", repr(func)))
        return await run_sync(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
    routes = {
        "recall": lambda: clients.reader.post("/v1/recall", json={"query": "digest"}),
        "context": lambda: clients.reader.post("/v1/context", json={"request": "digest?"}),
        "current": lambda: clients.reader.get(f"/v1/subjects/{SUBJECT}/families/{FAMILY}/current"),
    }
    for name, send in routes.items():
        send()  # the service learns each key's tenant once, on its first request
        trips.clear()
        answered = send()
        assert answered.status_code in (200, 201), answered.text
        assert len(trips) == (1 if name == "recall" else 2), (name, trips)
    trips.clear()  # a write: the key's lookup, the write and the check of its answer; the
    # check of the key's role takes none
    written = event_json("evt-trips", "Mondays, please.", occurred_at="2026-10-21T09:00:00Z")
    ok(clients.writer.post("/v1/events", json=written))
    assert len(trips) == 3, trips


def test_a_recall_past_the_routing_is_the_routes_answer_and_counted_under_it(
    clients: Clients, clock: FrozenClock
) -> None:
    """A well-formed recall is answered before the routing (:mod:`memledger.api._hot`);
    the same recall with a query string goes through the route: the same answer, both
    counted under the route's path."""
    story(clients.writer, clock)
    tenant = ok(clients.reader.get("/v1/me")).json()["tenant"]
    body = {"query": "digest delivery", "subject": SUBJECT, "k": 3}
    fast = ok(clients.reader.post("/v1/recall", json=body))
    routed = ok(clients.reader.post(f"/v1/recall?tenant={tenant}", json=body))
    # the first recall's reads lift its memories a little for the second (decay by last
    # use): the same memories in the same order, scores all but equal
    one, two = fast.json(), routed.json()
    assert one["items"] and [i["memory_id"] for i in one["items"]] == [
        i["memory_id"] for i in two["items"]
    ]
    assert {k: v for k, v in one.items() if k != "items"} == {
        k: v for k, v in two.items() if k != "items"
    }
    for a, b in zip(one["items"], two["items"], strict=True):
        assert a.keys() == b.keys() and a["score"] == pytest.approx(b["score"], rel=0.01)
    assert fast.headers["content-type"] == routed.headers["content-type"]
    metrics = clients.reader.get("/metrics").text
    counted = [
        line
        for line in metrics.splitlines()
        if line.startswith("memledger_http_requests_total")
        and 'route="/v1/recall"' in line
        and 'status="200"' in line
    ]
    assert counted and float(counted[0].rsplit(" ", 1)[1]) >= 2, metrics[:2000]


def test_a_consistency_header_past_its_length_is_refused_by_the_route(
    clients: Clients, clock: FrozenClock
) -> None:
    story(clients.writer, clock)
    # a well-formed token of 200 floors of other subjects, past the header's length
    floors = ",".join(f"{'someone' * 12}-{n}/home_city@1" for n in range(200))
    assert len(floors) > 16_384
    body = {"query": "digest delivery", "subject": SUBJECT}
    refused = clients.reader.post(
        "/v1/recall", json=body, headers={"Memledger-Consistency": floors}
    )
    assert refused.status_code == 422, refused.text
    fits = ",".join(f"someone-{n}/home_city@1" for n in range(100))
    ok(clients.reader.post("/v1/recall", json=body, headers={"Memledger-Consistency": fits}))
