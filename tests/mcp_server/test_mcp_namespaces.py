"""Namespaces are invisible over MCP too (DESIGN.md invariant 13): the booker's
``forget`` of a shared event, or of a shared memory, changes nothing of the planner's
private notes from the same event and names none of them; the notes' own ids are
answered as missing ones. Real store, real uvicorn server, the SDK's HTTP client."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import anyio

from mcp_helpers import TENANT, error_of, http_client, payload, serving
from memledger import Claim, Memory, SourceEvent
from memledger.mcp import streamable_http_app

FAMILY = "delivery_preference"


def _said(memory: Memory, event_id: str, value: str, *, customer: str) -> dict[str, str]:
    """The planner's shared event with a claim about the customer and one about its own
    private note of the customer (setup): the memory ids it wrote, shared and private."""
    planner = memory.create_key(TENANT, "planner", principal="agent", grants=[FAMILY])[0]
    event = SourceEvent(
        tenant=TENANT,
        event_id=event_id,
        subject=customer,
        actor=planner.principal_of().actor,
        channel="chat",
        occurred_at=datetime(2026, 10, 1, 9, tzinfo=UTC),
        text=f"Deliver {value}.",
    )
    claims = [
        Claim(
            family=FAMILY,
            kind="preference",
            statement=f"Delivery: {value}",
            value=value,
            subject=subject,
        )
        for subject in (customer, f"agent:planner/{customer}")
    ]
    receipt = memory.ingest_as(planner.principal_of(), event, claims)
    ids = [r.memory_id for r in receipt.results if r.memory_id is not None]
    found = {memory.get(m, tenant=TENANT).subject: m for m in ids}
    return {"shared": found[customer], "private": found[f"agent:planner/{customer}"]}


def _status(memory: Memory, memory_id: str) -> str:
    return memory.get(memory_id, tenant=TENANT).status


def test_forget_changes_only_what_the_key_may_write(memory: Memory) -> None:
    by_event = _said(memory, "s-1", "weekly", customer="customer-7")
    by_memory = _said(memory, "s-2", "fridays", customer="customer-8")
    booker = memory.create_key(TENANT, "booker", principal="agent", grants=[FAMILY])[1]

    async def main(url: str) -> None:
        async with http_client(url, booker) as client:
            forgot = payload(await client.call_tool("forget", {"event_id": "s-1", "reason": "x"}))
            assert [(r["subject"], r["revoked"]) for r in forgot["revocations"]] == [
                ("customer-7", [by_event["shared"]])
            ]
            revoked = payload(
                await client.call_tool("forget", {"memory_id": by_memory["shared"], "reason": "x"})
            )
            assert (revoked["revoked"], revoked["also"]) == ([by_memory["shared"]], [])
            for answer in (forgot, revoked):
                assert "planner" not in json.dumps(answer)
            hidden: list[Any] = []
            for arguments in (
                {"memory_id": by_event["private"]},
                {"memory_id": "mem-00000000000000000000"},
            ):
                result = await client.call_tool("forget", {**arguments, "reason": "x"})
                hidden.append(error_of(result))
            assert hidden[0]["code"] == "memory_not_found"
            assert hidden[0]["message"].replace(by_event["private"], "?") == hidden[1][
                "message"
            ].replace("mem-00000000000000000000", "?")

    with serving(streamable_http_app(memory)) as base:
        anyio.run(lambda: main(f"{base}/mcp"))
    assert _status(memory, by_event["shared"]) == _status(memory, by_memory["shared"]) == "revoked"
    assert _status(memory, by_event["private"]) == _status(memory, by_memory["private"]) == "active"
