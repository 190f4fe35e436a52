"""The short path's MCP tools: ``add_messages`` (a conversation's turns in, derived ids,
the user the speaker of their own turns), ``search_memories`` (the nearest with scores:
it does not abstain), ``list_memories`` and ``memory_history``; a memory is deleted
with ``forget``. Each acts for the call's API key as the HTTP routes do
(:mod:`memledger.api._memories`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field
from pydantic import JsonValue as Json

from memledger.api._memories import whose
from memledger.domain.keys import Principal
from memledger.mcp._results import ok_result
from memledger.memory import Memory
from memledger.ports import Extractor
from memledger.wire import added_to_dict, item_to_dict, memory_change_to_dict

__all__ = ["add_tools"]

Answer = Callable[[Context, Callable[[Principal], CallToolResult]], CallToolResult]

ADD = """\
Remember a conversation's turns: a string, or a list of {"role", "content"} messages
(role user, assistant or tool; system messages are left out), as user_id's memory (or,
with only agent_id, the agent's own). Each turn is kept with its role, and what the user
says of themself becomes memories (where they live, what they like, plans ...). Sending
the same messages again changes nothing. Needs a write key; a user's key adds its own
turns only. Returns the event ids, receipts and the memories held now."""

SEARCH = """\
The memories of user_id (or agent_id) nearest to a query, best first, each with its
score and relevant (whether recall would hand it out). Unlike recall it does not
abstain: read relevant before trusting one. Read-only; never returns revoked or
corrected-away memories."""

LIST = """\
What the memory of user_id (or agent_id) holds now, newest first: the turns and the
memories read from them. Read-only."""

HISTORY = """\
How one memory came to be: every change to the records of its slot (the values before
it, the one that replaced it), oldest first. Read-only."""

_READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_WRITES = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

UserId = Annotated[str | None, Field(description="Whose memory: the user's id.")]
AgentId = Annotated[
    str | None, Field(description="An agent's id; with no user_id, the agent's own memory.")
]


def add_tools(
    server: MCPServer,
    memory: Memory,
    answer: Answer,
    *,
    extractor: Extractor | None,
    extract: bool,
) -> None:
    """Add the short path's tools to ``server``; ``answer`` runs a tool's body for the
    call's principal and turns errors into tool errors."""

    def add_messages(
        messages: Annotated[
            Json, Field(description='A string, or a list of {"role", "content"} messages.')
        ],
        ctx: Context,
        user_id: UserId = None,
        agent_id: AgentId = None,
        session: Annotated[str | None, Field(description="The conversation's id.")] = None,
    ) -> CallToolResult:
        def act(principal: Principal) -> CallToolResult:
            added = memory.add_as(
                principal,
                messages,
                user_id=user_id,
                agent_id=agent_id,
                session=session,
                metadata={"via": "mcp"},
                wait=extract,
                extractor=extractor,
            )
            return ok_result(added_to_dict(added))

        return answer(ctx, act)

    def search_memories(
        query: Annotated[str, Field(description="What to look for, in words.")],
        ctx: Context,
        user_id: UserId = None,
        agent_id: AgentId = None,
        k: Annotated[int, Field(description="How many at most, 1-100.")] = 10,
    ) -> CallToolResult:
        def act(principal: Principal) -> CallToolResult:
            user, agent = whose(principal, user_id, agent_id, tenant_wide=True)
            found = memory.search(
                query,
                user_id=user,
                agent_id=agent,
                k=k,
                tenant=principal.tenant,
                visible=principal.may_read,
            )
            return ok_result({"results": [item_to_dict(i) for i in found]})

        return answer(ctx, act)

    def list_memories(
        ctx: Context,
        user_id: UserId = None,
        agent_id: AgentId = None,
        limit: Annotated[int, Field(description="How many at most, 1-1000.")] = 100,
    ) -> CallToolResult:
        def act(principal: Principal) -> CallToolResult:
            user, agent = whose(principal, user_id, agent_id)
            found = memory.get_all(
                user_id=user, agent_id=agent, tenant=principal.tenant, limit=limit
            )
            return ok_result({"memories": [item_to_dict(i) for i in found]})

        return answer(ctx, act)

    def memory_history(
        memory_id: Annotated[str, Field(description="The memory (from search or list).")],
        ctx: Context,
    ) -> CallToolResult:
        def act(principal: Principal) -> CallToolResult:
            tenant = principal.tenant
            memory.get(memory_id, tenant=tenant, namespaces=principal.namespaces)
            changes: list[Json] = [
                memory_change_to_dict(c) for c in memory.history(memory_id, tenant=tenant)
            ]
            return ok_result({"memory_id": memory_id, "changes": changes})

        return answer(ctx, act)

    for tool, title, description, hints in (
        (add_messages, "Add a conversation's turns", ADD, _WRITES),
        (search_memories, "Search memories with scores", SEARCH, _READS),
        (list_memories, "List a user's memories", LIST, _READS),
        (memory_history, "History of one memory", HISTORY, _READS),
    ):
        server.add_tool(
            tool, name=tool.__name__, title=title, description=description, annotations=hints
        )
