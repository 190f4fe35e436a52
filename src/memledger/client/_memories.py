"""The short path's routes, as calls: :func:`add` chat messages, :func:`search` them
with scores, :func:`get_all` of a user, :func:`delete` one memory (a memory's history
is ``history(memory_id)``, :func:`memledger.client._reads.history`).

Whose memory: ``user_id``, else ``agent_id`` (the agent's private namespace); left
out, a search reads the whole tenant and a list the key's own actor's memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from memledger import wire_models as wm
from memledger.client._requests import Call, get_call, given, reader, segment, when

__all__ = ["add", "delete", "get_all", "search"]

Messages = str | Mapping[str, object] | Sequence[str | Mapping[str, object]]


def add(
    messages: Messages,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    session: str | None = None,
    at: datetime | None = None,
    metadata: Mapping[str, object] | None = None,
    wait: bool = True,
) -> Call[wm.Added]:
    """Remember ``messages`` (a string, an OpenAI-style ``{"role", "content"}`` message
    or a list of either) as ``user_id``'s; the same messages sent again are a duplicate.
    ``wait=False``: answer once they are in the ledger, before extraction."""
    if isinstance(messages, (str, Mapping)):
        sent: object = messages if isinstance(messages, str) else dict(messages)
    else:
        sent = [m if isinstance(m, str) else dict(m) for m in messages]
    body = {
        "messages": sent,
        **given(
            user_id=user_id,
            agent_id=agent_id,
            session=session,
            at=when(at, "at"),
            metadata=None if metadata is None else dict(metadata),
        ),
    }
    if not wait:
        body["wait"] = False
    return Call(method="POST", path="/v1/memories", read=reader(wm.Added), body=body)


def _results(body: bytes) -> list[wm.MemoryItem]:
    return reader(wm.MemorySearch)(body).results


def search(
    query: str, *, user_id: str | None = None, agent_id: str | None = None, k: int = 10
) -> Call[list[wm.MemoryItem]]:
    """The ``k`` memories nearest to ``query``, best first, each with its ``score`` and
    ``relevant`` (whether recall would hand it out: search does not abstain); of
    ``user_id`` (or ``agent_id``; neither: the whole tenant)."""
    body = {"query": query, "k": k, **given(user_id=user_id, agent_id=agent_id)}
    return Call(method="POST", path="/v1/memories/search", read=_results, body=body)


def get_all(
    *, user_id: str | None = None, agent_id: str | None = None, limit: int = 100
) -> Call[list[wm.MemoryItem]]:
    """What the memory of ``user_id`` (or of the agent) holds now, newest first."""
    return get_call(
        "/v1/memories", list[wm.MemoryItem], user_id=user_id, agent_id=agent_id, limit=limit
    )


def delete(memory_id: str) -> Call[wm.Revocation]:
    """Delete a memory: a revocation with its receipt; nothing brings it back."""
    return Call(
        method="DELETE",
        path=f"/v1/memories/{segment(memory_id)}",
        read=reader(wm.Revocation),
    )
