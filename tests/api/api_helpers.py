"""Helpers of the HTTP API tests: clients, events and claims as a client sends them
(``event_json``, ``pref_json``, ``post_event``), and the checks every answer must pass
(``ok``, ``problem``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import httpx

from memledger import Memory
from memledger.index.derived import DerivedIndex
from memledger.index.embedders import HashingEmbedder
from memledger.testing import FrozenClock
from memledger.testing.scenarios import FAMILY, SUBJECT


def open_memory(path: Path, clock: FrozenClock) -> Memory:
    index = DerivedIndex(path.with_suffix(".index"), embedder=HashingEmbedder())
    return Memory.open(path, clock=clock, index=index)


@dataclass(frozen=True, slots=True)
class Clients:
    """One client per kind of key of tenant ``acme``, and an admin of ``globex``."""

    admin: httpx.Client
    writer: httpx.Client
    """``user-42`` (a user), granted ``delivery_preference``."""
    ungranted: httpx.Client
    """``user-42`` without grants."""
    reader: httpx.Client
    service: httpx.Client
    """``account-service`` (a service), granted every family."""
    other: httpx.Client
    """Admin of tenant ``globex``."""
    anonymous: httpx.Client

    def close(self) -> None:
        for item in fields(self):
            getattr(self, item.name).close()


KeyClient = Callable[..., httpx.Client]
"""What the ``key_client`` fixture gives: ``key_client(actor, tenant=TENANT, **options)``
is a client of the test's server holding a new key of ``actor`` (``options`` as
``Memory.create_key`` takes them)."""


def agent_clients(key_client: KeyClient, **writer_options: object) -> dict[str, httpx.Client]:
    """Agents of tenant ``acme``: ``planner`` and ``booker`` (agents that write, their keys
    made with ``writer_options``), ``auditor`` (an agent that reads only, and reads the
    planner's private namespace ``agent:planner``) and ``admin`` (the ``ops`` service)."""
    return {
        "planner": key_client("planner", principal="agent", **writer_options),
        "booker": key_client("booker", principal="agent", **writer_options),
        "auditor": key_client("auditor", principal="agent", role="read", reads=["agent:planner"]),
        "admin": key_client("ops", principal="service", role="admin"),
    }


def client(base_url: str, token: str | None = None) -> httpx.Client:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    return httpx.Client(base_url=base_url, headers=headers, trust_env=False, timeout=30)


def event_json(
    event_id: str,
    text: str,
    *,
    occurred_at: str,
    sequence: int | None = None,
    claims: list[dict[str, object]] | None = None,
    subject: str = SUBJECT,
    channel: str = "chat",
) -> dict[str, object]:
    """A source event as a client sends it: no tenant, no actor (the key gives both)."""
    body: dict[str, object] = {
        "event_id": event_id,
        "subject": subject,
        "channel": channel,
        "occurred_at": occurred_at,
        "text": text,
    }
    if sequence is not None:
        body["sequence"] = sequence
    if claims is not None:
        body["claims"] = claims
    return body


def post_event(api: httpx.Client, event_id: str, text: str, **fields: Any) -> httpx.Response:
    """``POST /v1/events`` of ``event_json(event_id, text, **fields)``, the answer unchecked."""
    return api.post("/v1/events", json=event_json(event_id, text, **fields))


def pref_json(
    value: str,
    *,
    valid_from: str | None = None,
    valid_until: str | None = None,
    grounding: str | None = None,
    subject: str | None = None,
) -> dict[str, object]:
    """A delivery-preference claim; ``subject`` names a subject other than the event's."""
    claim: dict[str, object] = {
        "family": FAMILY,
        "kind": "preference",
        "statement": f"Delivery: {value}",
        "value": value,
    }
    for name, given in (
        ("valid_from", valid_from),
        ("valid_until", valid_until),
        ("grounding", grounding),
        ("subject", subject),
    ):
        if given is not None:
            claim[name] = given
    return claim


def ok(response: httpx.Response, status: int = 200) -> httpx.Response:
    assert response.status_code == status, (response.status_code, response.text)
    return response


def problem(response: httpx.Response, status: int, code: str) -> dict[str, object]:
    """The problem body of ``response``, checked: status, media type, shape and code."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"] == "application/problem+json", response.headers
    body = response.json()
    assert set(body) <= {"type", "title", "status", "detail", "code", "errors", "error_count"}
    assert ("errors" in body) == ("error_count" in body), body
    assert body["status"] == status and body["code"] == code, body
    assert body["type"] == f"https://memledger.dev/problems/{code}"
    assert isinstance(body["title"], str) and body["title"]
    assert isinstance(body["detail"], str) and body["detail"]
    return body  # type: ignore[no-any-return]
