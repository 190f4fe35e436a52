"""Context traces: what a model call was given, stored so it can be rebuilt later.

A trace holds the request, the budget, the routing decision, the tokenizer's
name, the notes, every candidate left out with its reason, and the packet's
items in order: a memory by memory id, the revision it had, the passage shown
and the record that had replaced it (if any); every other item (the caller's
constraints, live state and material, and corpus chunks) with the fields it was
rendered from. The rendered text itself is not stored, only its sha256.

:func:`replay` rebuilds the packet from the store: a memory's words, window and
source never change under its memory id (corrections write new records), so
the same text comes back after the store has changed, and its sha256 proves it.
A memory revoked since is still shown (a replay is an audit of what the model
saw, not a new packet) and listed in ``Replay.revoked``; one no longer in the
store cannot be rebuilt (``Replay.missing``) and the replay does not match.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from memledger.domain.budget import Budget, Section
from memledger.domain.keys import namespace_of
from memledger.domain.records import JsonValue, require_id
from memledger.errors import InvalidInputError, TraceNotFoundError
from memledger.ports import StoredTrace
from memledger.read.context import Candidate, memory_fields
from memledger.read.packet import Left, Packet, PacketItem, render
from memledger.read.routing import Routing

if TYPE_CHECKING:
    from memledger.ports import Store, Tokenizer

VERSION = 1


def _item(candidate: Candidate, item: PacketItem) -> dict[str, JsonValue]:
    out: dict[str, JsonValue] = {
        "section": item.section,
        "key": item.key,
        "relevance": item.relevance,
        "tokens": item.tokens,
    }
    if candidate.memory_id is not None:
        out["memory_id"] = candidate.memory_id
        out["revision"] = candidate.revision
        out["passage"] = None if candidate.passage is None else list(candidate.passage)
        out["outdated_by"] = candidate.outdated_by
        if candidate.possibly_outdated_by is not None:
            out["possibly_outdated_by"] = candidate.possibly_outdated_by
    else:
        out["fields"] = dict(candidate.fields)
    return out


def body_of(packet: Packet, candidates: Sequence[Candidate]) -> dict[str, JsonValue]:
    """The JSON body a trace stores for ``packet``."""
    by_key = {(c.section, c.key): c for c in candidates}
    return {
        "version": VERSION,
        "request": packet.request,
        "valid_at": packet.valid_at.isoformat(),
        "tokenizer": packet.tokenizer,
        "tokens": packet.tokens,
        "budget": packet.budget.to_dict(),  # type: ignore[dict-item]
        "routing": packet.routing.to_dict(),
        "notes": list(packet.notes),
        "items": [_item(by_key[(i.section, i.key)], i) for i in packet.items],
        "excluded": [e.to_dict() for e in packet.excluded],
    }


def save(store: Store, packet: Packet, candidates: Sequence[Candidate]) -> None:
    """Store ``packet``'s trace in the canonical store, with the private namespaces of
    the memories it names (held, or left out with a reason): a key that may not read one
    of them finds no trace, so a trace never names another agent's memory to it."""
    body = json.dumps(body_of(packet, candidates), separators=(",", ":"))  # keeps field order
    by_key = {(c.section, c.key): c.memory_id for c in candidates}
    held = {m for i in packet.items if (m := by_key[(i.section, i.key)]) is not None}
    left = {e.key for e in packet.excluded if e.section == "memories"}
    named = sorted(held | left)
    with store.write() as unit:
        records = unit.get_records(packet.tenant, named) if named else {}
        spaces = {namespace_of(r.subject) for r in records.values()}
        unit.put_trace(
            StoredTrace(
                tenant=packet.tenant,
                trace_id=packet.trace_id,
                subject=packet.subject,
                created_at=packet.created_at,
                rendered_sha256=packet.sha256,
                body=body,
                namespaces=frozenset(n for n in spaces if n is not None),
            )
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Replay:
    """A packet rebuilt from its trace."""

    packet: Packet
    matches: bool
    """Whether the rebuilt text has the sha256 stored with the trace."""
    revoked: tuple[str, ...] = ()
    """Memories shown then and revoked since (shown again: this is an audit)."""
    missing: tuple[str, ...] = ()
    """Memories no longer in the store (erased): the replay cannot match."""


def get(
    store: Store, trace_id: str, *, tenant: str, namespaces: frozenset[str] | None = None
) -> StoredTrace:
    """A stored trace; one whose subject is in a private namespace not among
    ``namespaces`` (``None``: any) is answered as a missing one."""
    require_id(tenant, "tenant", InvalidInputError)
    require_id(trace_id, "trace id", InvalidInputError)
    with store.read() as unit:
        found = unit.get_trace(tenant, trace_id, namespaces=namespaces)
    if found is None:
        raise TraceNotFoundError(f"no trace {trace_id!r} for tenant {tenant!r}")
    return found


def replay(
    store: Store, trace_id: str, *, tenant: str, tokenizer: Tokenizer | None = None
) -> Replay:
    """Rebuild the packet of a stored trace from the store (see the module docstring)."""
    from memledger.tokens import ApproxBpeTokenizer

    stored = get(store, trace_id, tenant=tenant)
    body = cast("dict[str, Any]", json.loads(stored.body))
    rows = cast("list[dict[str, Any]]", body["items"])
    ids = [r["memory_id"] for r in rows if "memory_id" in r]
    with store.read() as unit:
        records = unit.get_records(tenant, ids) if ids else {}
        gone_sources = unit.revoked_sources_of(
            tenant, sorted({(r.subject, r.family) for r in records.values()})
        )
    revoked = tuple(
        m
        for m in ids
        if m in records
        and (
            records[m].status == "revoked"
            or records[m].source_event_id in gone_sources[(records[m].subject, records[m].family)]
        )
    )
    missing = tuple(m for m in ids if m not in records)
    items: list[PacketItem] = []
    for row in rows:
        section = cast("Section", row["section"])
        if "memory_id" in row:
            record = records.get(row["memory_id"])
            passage = row["passage"]
            fields: Mapping[str, JsonValue] = (
                {"memory_id": row["memory_id"], "missing": "no longer in the store"}
                if record is None
                else memory_fields(
                    record,
                    revision=int(row["revision"]),
                    passage=None if passage is None else (int(passage[0]), int(passage[1])),
                    outdated_by=row["outdated_by"],
                    possibly_outdated_by=row.get("possibly_outdated_by"),
                )
            )
        else:
            fields = row["fields"]
        items.append(
            PacketItem(
                section=section,
                key=row["key"],
                fields=fields,
                tokens=int(row["tokens"]),
                relevance=float(row["relevance"]),
                memory_id=row.get("memory_id"),
                revision=row.get("revision"),
            )
        )
    text = render(items)
    counter = tokenizer or ApproxBpeTokenizer()
    budget = body["budget"]
    routing = body["routing"]
    packet = Packet(
        trace_id=stored.trace_id,
        tenant=tenant,
        subject=stored.subject,
        request=body["request"],
        created_at=stored.created_at,
        valid_at=datetime.fromisoformat(body["valid_at"]),
        items=tuple(items),
        excluded=tuple(
            Left(section=e["section"], key=e["key"], reason=e["reason"]) for e in body["excluded"]
        ),
        routing=Routing(
            memory=routing["memory"],
            corpus=routing["corpus"],
            long_context=routing["long_context"],
            specificity=routing["specificity"],
            reasons=tuple(routing["reasons"]),
        ),
        budget=Budget(total=budget["total"], sections=budget["sections"]),
        tokens=counter.count(text),
        text=text,
        tokenizer=body["tokenizer"],
        notes=tuple(body["notes"]),
    )
    matches = hashlib.sha256(text.encode()).hexdigest() == stored.rendered_sha256
    return Replay(packet=packet, matches=matches, revoked=revoked, missing=missing)


def recent(
    store: Store,
    *,
    tenant: str,
    subject: str | None = None,
    limit: int = 20,
    namespaces: frozenset[str] | None = None,
) -> list[dict[str, JsonValue]]:
    """The tenant's most recent traces, newest first, as summaries (of the private
    ``namespaces`` only; ``None``: any)."""
    require_id(tenant, "tenant", InvalidInputError)
    with store.read() as unit:
        found = unit.traces(tenant, subject=subject, limit=limit, namespaces=namespaces)
    out: list[dict[str, JsonValue]] = []
    for trace in found:
        body = json.loads(trace.body)
        out.append(
            {
                "trace_id": trace.trace_id,
                "subject": trace.subject,
                "created_at": trace.created_at.isoformat(),
                "request": body["request"],
                "memories": [
                    {"memory_id": i["memory_id"], "revision": i["revision"]}
                    for i in body["items"]
                    if "memory_id" in i
                ],
                "excluded": len(body["excluded"]),
                "tokens": body["tokens"],
            }
        )
    return out


__all__ = ["Replay", "body_of", "get", "recent", "replay", "save"]
