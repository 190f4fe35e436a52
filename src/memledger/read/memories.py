"""The short path's reads: :func:`search` for the nearest memories with scores,
:func:`get_all` for what a user's memory holds now, :func:`memory_history` for how one
memory came to be.

``search`` is recall without abstention: it hands back the ``k`` nearest memories
that pass the canonical recheck (never a revoked, corrected-away or expired one), each
with its score and ``relevant``, whether recall itself would hand it out. Recall and
the context packet still abstain rather than guess.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from memledger.domain.addresses import check_tenant
from memledger.domain.items import MemoryChange, MemoryItem, item_of
from memledger.domain.messages import subject_of
from memledger.domain.records import MemoryRecord, require_id
from memledger.errors import InvalidQueryError, MemoryNotFoundError
from memledger.read.ports import ReadPorts
from memledger.read.recall_settings import DEFAULT_SETTINGS, RecallSettings
from memledger.read.results import RecallResult

__all__ = ["Recall", "get_all", "memory_history", "search"]

Recall = Callable[..., RecallResult]
"""The facade's :meth:`~memledger.Memory.recall` (quotas and index catch-up first)."""


def search(
    recall: Recall,
    query: str,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    k: int = 10,
    tenant: str = "default",
    settings: RecallSettings | None = None,
    visible: Callable[[str], bool] | None = None,
) -> tuple[MemoryItem, ...]:
    """The ``k`` memories of ``user_id`` (or of the agent's namespace; neither: across
    the tenant, of the subjects ``visible`` admits) nearest to ``query``, best first,
    with their scores; ``relevant`` says which recall would hand out (the others are
    the nearest there are, not evidence)."""
    tuning = settings or DEFAULT_SETTINGS
    found = recall(
        query,
        tenant=tenant,
        subject=None if user_id is None and agent_id is None else subject_of(user_id, agent_id),
        k=k,
        settings=replace(tuning, floor=0.0, nearest=True),
        visible=visible,
    )
    return tuple(
        item_of(
            hit.record,
            text=None if hit.passage is None or hit.passage.whole else hit.passage.text,
            score=hit.score,
            relevant=hit.relevance >= tuning.floor,
        )
        for hit in found.items
    )


def get_all(
    ports: ReadPorts,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    tenant: str = "default",
    limit: int = 100,
) -> tuple[MemoryItem, ...]:
    """What the memory of ``user_id`` (or of the agent's namespace) holds now, newest
    first, at most ``limit`` (1-1000): every open record of every family, the turns'
    words included; nothing revoked, corrected away or expired."""
    check_tenant(tenant)
    subject = subject_of(user_id, agent_id)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise InvalidQueryError(f"limit must be a whole number 1-1000, got {limit!r}")
    now = ports.clock.now()
    held: list[MemoryRecord] = []
    with ports.store.read() as unit:
        for slot in unit.families(tenant, subject):  # a revocation closes what it revokes
            held.extend(
                r
                for r in unit.family_records(tenant, subject, slot.family, open_only=True)
                if r.status == "active" and not r.expired(now)
            )
    held.sort(key=lambda r: (r.recorded_at, r.valid_from, r.memory_id), reverse=True)
    return tuple(item_of(r) for r in held[:limit])


def memory_history(
    ports: ReadPorts, memory_id: str, *, tenant: str = "default"
) -> tuple[MemoryChange, ...]:
    """How ``memory_id`` came to be and what became of it, oldest first: every change
    to the records of its slot (its family and scope: the values before it, the one
    that replaced it) and to those it replaced or that replaced it."""
    check_tenant(tenant)
    require_id(memory_id, "memory_id", InvalidQueryError)
    with ports.store.read() as unit:
        record = unit.get_record(tenant, memory_id)
        if record is None:
            raise MemoryNotFoundError(f"no memory {memory_id!r} for tenant {tenant!r}")
        entries = unit.history(tenant, record.subject, record.family)
        records = unit.get_records(tenant, sorted({e.memory_id for e in entries}))
    lineage = _lineage(record, records)
    return tuple(
        MemoryChange(
            memory_id=e.memory_id,
            action=e.action,
            status=e.status,
            memory=records[e.memory_id].claim if e.memory_id in records else None,
            at=e.at,
            cause=e.cause,
            note=e.note,
        )
        for e in entries
        if e.memory_id in lineage
    )


def _lineage(record: MemoryRecord, records: Mapping[str, MemoryRecord]) -> set[str]:
    """The records of ``record``'s slot among the family's ``records``: those of its
    scope (a correction closes one value and writes the next there), and any linked
    to it by ``supersedes``."""
    found = {record.memory_id}
    found.update(m for m, r in records.items() if r.scope == record.scope)
    linked = True
    while linked:
        linked = False
        for memory_id, r in records.items():
            if memory_id not in found and (
                r.supersedes in found
                or any(records[f].supersedes == memory_id for f in found if f in records)
            ):
                found.add(memory_id)
                linked = True
    return found
