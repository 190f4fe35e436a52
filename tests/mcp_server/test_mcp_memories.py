"""The short path's MCP tools, through the SDK's own in-process client: a
conversation's turns in, a search with scores, the list, a memory's history, and
the key deciding whose memory a call may touch."""

from __future__ import annotations

from typing import Any

import anyio
from mcp import Client

from mcp_helpers import TENANT, error_of, payload
from memledger import Memory
from memledger.mcp import build_server

CHAT = [
    {"role": "user", "content": "I love spicy ramen."},
    {"role": "assistant", "content": "Noted!"},
    {"role": "user", "content": "I live in Lisbon."},
]


def calls(memory: Memory, token: str, *steps: tuple[str, dict[str, Any]]) -> list[Any]:
    results: list[Any] = []

    async def main() -> None:
        async with Client(build_server(memory, key=token), cache=None) as client:
            for name, arguments in steps:
                results.append(await client.call_tool(name, arguments))

    anyio.run(main)
    return results


def test_add_search_list_and_history(memory: Memory) -> None:
    _, token = memory.create_key(TENANT, "chat-app", principal="service")
    added, again, found, listed = calls(
        memory,
        token,
        ("add_messages", {"messages": CHAT, "user_id": "alice", "session": "s1"}),
        ("add_messages", {"messages": CHAT, "user_id": "alice", "session": "s1"}),
        ("search_memories", {"query": "where does alice live?", "user_id": "alice", "k": 3}),
        ("list_memories", {"user_id": "alice"}),
    )
    assert len(payload(added)["event_ids"]) == 3 and payload(again)["duplicate"]
    best = payload(found)["results"][0]
    assert best["memory"] == "Lives in Lisbon" and best["relevant"] and best["score"] > 0
    assert {m["id"] for m in payload(listed)["memories"]} == {
        m["id"] for m in payload(added)["memories"]
    }
    assert memory.current("alice", "home_city", tenant=TENANT)[0].source_actor_id == "alice"
    (steps,) = calls(memory, token, ("memory_history", {"memory_id": best["id"]}))
    assert [c["action"] for c in payload(steps)["changes"]] == ["recorded"]


def test_the_key_decides_whose_memory(memory: Memory) -> None:
    _, alice = memory.create_key(TENANT, "alice")
    _, reader = memory.create_key(TENANT, "auditor", role="read", principal="service")
    _, planner = memory.create_key(TENANT, "planner", principal="agent")
    mine, theirs = calls(
        memory,
        alice,
        ("add_messages", {"messages": "I live in Oslo."}),
        ("add_messages", {"messages": "I live in Rome.", "user_id": "carol"}),
    )
    assert {m["user_id"] for m in payload(mine)["memories"]} == {"alice"}
    assert error_of(theirs)["code"] == "permission_denied"
    (refused,) = calls(memory, reader, ("add_messages", {"messages": "x", "user_id": "alice"}))
    assert error_of(refused)["code"] == "permission_denied"
    noted, peek = calls(
        memory,
        planner,
        ("add_messages", {"messages": "Customer prefers email."}),
        ("list_memories", {"agent_id": "billing"}),
    )
    assert {m["agent_id"] for m in payload(noted)["memories"]} == {"planner"}
    assert error_of(peek)["code"] == "permission_denied"
    (bad,) = calls(memory, alice, ("add_messages", {"messages": [{"role": "narrator"}]}))
    assert (
        error_of(bad)["code"] == "invalid_event" and "messages[0].role" in error_of(bad)["message"]
    )
