"""What the Python clients send of a caller's dicts, against a real server: datetimes,
dates and UUIDs at any depth as the API reads them (the stored event holds their
text), and a naive datetime or another value that is not JSON refused, naming its
place, before any request is sent."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from uuid import UUID

import httpx
import pytest

from memledger import Memory
from memledger.client import AsyncClient, Client
from memledger.client._json import plain
from memledger.errors import EventNotFoundError, InvalidEventError, InvalidInputError
from memledger.index.derived import DerivedIndex
from memledger.index.embedders import HashingEmbedder
from memledger.serve import ServeConfig, build_app
from memledger.testing import FrozenClock
from memledger.testing.http import serve
from memledger.testing.scenarios import FAMILY, SUBJECT, TENANT, day

ID = UUID("12345678-1234-5678-1234-567812345678")
LISBON = timezone(timedelta(hours=1))


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    index = DerivedIndex(tmp_path / "m.index", embedder=HashingEmbedder())
    with Memory.open(tmp_path / "m.db", clock=FrozenClock(day(10, 1)), index=index) as opened:
        yield opened


@pytest.fixture
def served(memory: Memory, no_proxies: None) -> Iterator[tuple[str, str]]:
    _, token = memory.create_key(TENANT, SUBJECT, grants=[FAMILY])
    with serve(build_app(memory, ServeConfig(mcp=False, web=False))) as url:
        yield url, token


class Counting(httpx.HTTPTransport):
    """The default transport, counting the requests it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(f"{request.method} {request.url.path}")
        return super().handle_request(request)


class AsyncCounting(httpx.AsyncHTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(f"{request.method} {request.url.path}")
        return await super().handle_async_request(request)


def an_event(event_id: str, **fields: object) -> dict[str, object]:
    """A source event as a dict, with Python values where JSON has text."""
    return {
        "event_id": event_id,
        "subject": SUBJECT,
        "channel": "chat",
        "occurred_at": datetime(2026, 10, 2, 10, tzinfo=LISBON),
        "text": "Deliver on Fridays.",
        "metadata": {
            "when": date(2026, 10, 2),
            "id": ID,
            "at": datetime(2026, 10, 2, 10, 30, tzinfo=LISBON),
            "seen": [{"by": ID, "on": date(2026, 10, 1)}],
            ID: "a UUID key",
        },
        **fields,
    }


STORED = {
    "when": "2026-10-02",
    "id": str(ID),
    "at": "2026-10-02T09:30:00Z",
    "seen": [{"by": str(ID), "on": "2026-10-01"}],
    str(ID): "a UUID key",
}
"""The metadata of :func:`an_event` as the ledger holds it."""


def test_datetimes_dates_and_uuids_in_a_dict_event_reach_the_ledger_as_text(
    served: tuple[str, str],
) -> None:
    claim = {
        "family": FAMILY,
        "kind": "preference",
        "statement": "Wants deliveries on Fridays",
        "value": "friday",
        "valid_from": datetime(2026, 10, 2, tzinfo=UTC),
        "grounding": "on Fridays",
    }
    with Client(*served) as client:
        receipt = client.ingest(an_event("evt-1"), [claim])
        assert receipt.outcome == "committed", receipt
        stored = client.event("evt-1").event
        assert stored.metadata == STORED
        assert stored.occurred_at == datetime(2026, 10, 2, 9, tzinfo=UTC)
        (record,) = client.current(SUBJECT, FAMILY, valid_at=day(10, 3))
        assert record.value == "friday"
        assert record.valid_from == datetime(2026, 10, 2, tzinfo=UTC)
        # the short path's metadata and a batch's events, the same way
        added = client.add("I live in Lisbon.", user_id=SUBJECT, metadata={"at": ID})
        assert client.event(added.event_ids[0]).event.metadata["at"] == str(ID)
        (batched,) = client.ingest_batch([an_event("evt-2")])
        assert client.event("evt-2").event.metadata == STORED and not batched.duplicate


def test_a_naive_datetime_is_refused_before_anything_is_sent(served: tuple[str, str]) -> None:
    url, key = served
    transport = Counting()
    with Client(url, key, transport=transport) as client:
        naive = datetime(2026, 10, 2, 9)
        with pytest.raises(
            InvalidEventError, match=r"the event's metadata\.seen\[0\]\.on is a naive"
        ):
            client.ingest(an_event("evt-n", metadata={"seen": [{"on": naive}]}))
        with pytest.raises(InvalidEventError, match=r"the event's occurred_at is a naive datetime"):
            client.ingest(an_event("evt-n", occurred_at=naive))
        with pytest.raises(InvalidEventError, match=r"event #2's metadata\.at is a naive"):
            client.ingest_batch([an_event("evt-m"), an_event("evt-n", metadata={"at": naive})])
        with pytest.raises(InvalidInputError, match=r"request body's metadata\.at is a naive"):
            client.add("I live in Lisbon.", user_id=SUBJECT, metadata={"at": naive})
        with pytest.raises(InvalidInputError, match=r"live\[0\]\.value\.checked is a naive"):
            client.context(
                "when is my delivery?",
                subject=SUBJECT,
                live=[{"name": "order", "value": {"checked": naive}, "observed_at": naive}],
            )
        with pytest.raises(
            InvalidEventError, match=r"metadata\.x\[1\] is of type object, not JSON"
        ):
            client.ingest(an_event("evt-n", metadata={"x": [1, object()]}))
        assert transport.sent == []
        for event_id in ("evt-m", "evt-n"):
            with pytest.raises(EventNotFoundError):
                client.event(event_id)
        assert transport.sent == ["GET /v1/events/evt-m", "GET /v1/events/evt-n"]


def test_the_async_client_encodes_and_refuses_the_same(served: tuple[str, str]) -> None:
    url, key = served
    transport = AsyncCounting()

    async def main() -> dict[str, object]:
        async with AsyncClient(url, key, transport=transport) as client:
            with pytest.raises(InvalidEventError, match=r"metadata\.when is a naive"):
                await client.ingest(an_event("evt-a", metadata={"when": datetime(2026, 1, 1)}))
            assert transport.sent == []
            await client.ingest(an_event("evt-a"))
            return (await client.event("evt-a")).event.metadata

    assert asyncio.run(main()) == STORED


def test_plain_names_the_place_of_what_json_cannot_hold() -> None:
    assert plain({"a": (1, 2.5, None, True)}) == {"a": [1, 2.5, None, True]}
    assert plain({1: "x"}) == {1: "x"}  # a number key, as JSON writes it: "1"
    aware = datetime(2026, 10, 2, 9, 30, 15, 250_000, tzinfo=UTC)
    assert plain([aware]) == ["2026-10-02T09:30:15.250000Z"]
    looped: dict[str, object] = {}
    looped["self"] = [looped]
    for value, said in [
        ({"x": math.nan}, r"request body's x is nan, which JSON cannot hold"),
        ({"x": [math.inf]}, r"request body's x\[0\] is inf"),
        (looped, r"request body's self\[0\] holds itself"),
        ({"x": "\ud800"}, r"request body's x is not text"),
        ({"x": {(1, 2): 3}}, r"request body's x has a key of type tuple"),
        ({1.5j}, r"the request body is of type set, not JSON data"),
    ]:
        with pytest.raises(InvalidInputError, match=said):
            plain(value)
    shared = [1]
    assert plain({"a": shared, "b": shared}) == {"a": [1], "b": [1]}  # shared, not a cycle
