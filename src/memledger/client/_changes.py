"""The administration routes that change what the tenant holds, as calls (admin keys
only): :func:`erase` and :func:`erasures`; the recorded changes and their undoing,
:func:`undo`, :func:`restore`, :func:`change_log`, :func:`rollback`, :func:`compact`
and :func:`consolidate`; the retention per kind, :func:`retention` and
:func:`set_retention`."""

from __future__ import annotations

from datetime import datetime

from memledger import wire_models as wm
from memledger.client._requests import (
    Call,
    get_call,
    given,
    path_param,
    post_call,
    reader,
    segment,
    when,
)

__all__ = [
    "change_log",
    "compact",
    "consolidate",
    "erase",
    "erasures",
    "restore",
    "retention",
    "rollback",
    "set_retention",
    "undo",
]


def erase(
    *,
    event: str | None = None,
    memory_id: str | None = None,
    subject: str | None = None,
    reason: str = "erased",
) -> Call[wm.Erasure]:
    """Erase exactly one of an event, a memory (and the event it came from) or a subject,
    in every store; the receipt lists each store's status. Admin keys only."""
    body = {"reason": reason, **given(event=event, memory_id=memory_id, subject=subject)}
    return post_call("/v1/erasures", wm.Erasure, body)


def erasures() -> Call[list[wm.Erasure]]:
    """The tenant's erasure receipts, oldest first. Admin keys only."""
    return get_call("/v1/erasures", list[wm.Erasure])


def undo(change_id: str, *, reason: str = "undone") -> Call[wm.Undo]:
    """Undo a revocation or forget (the ``change_id`` of its receipt), a rollback, or the
    correction an event made (its event id): what it closed comes back as new records,
    what it wrote is closed; history keeps both. Admin keys only."""
    return post_call("/v1/undo", wm.Undo, {"change_id": change_id, "reason": reason})


def restore(memory_id: str, *, reason: str = "restored") -> Call[wm.Undo]:
    """Undo the change that closed a memory (as :func:`undo`). Admin keys only."""
    return post_call(f"/v1/memories/{segment(memory_id)}/restore", wm.Undo, {"reason": reason})


def change_log(*, limit: int = 100) -> Call[list[wm.ChangeOut]]:
    """The tenant's recorded changes, newest first. Admin keys only."""
    return get_call("/v1/change-log", list[wm.ChangeOut], limit=limit)


def rollback(
    extractor: str,
    *,
    since: datetime | None = None,
    rederive: bool = False,
    reason: str = "rollback",
) -> Call[wm.Rollback]:
    """Roll back what extractor ``NAME@VERSION`` wrote (at or after ``since``) as one
    recorded change that :func:`undo` reverses; ``rederive`` extracts the same events
    again with the service's extractor. Admin keys only."""
    body = {
        "extractor": extractor,
        "reason": reason,
        "rederive": rederive,
        **given(since=when(since, "since")),
    }
    return post_call("/v1/rollbacks", wm.Rollback, body)


def compact(
    *,
    subject: str | None = None,
    older_than_days: float | None = None,
    before: datetime | None = None,
    min_turns: int = 2,
    max_tokens: int = 300,
    dry_run: bool = False,
    reason: str = "compacted",
) -> Call[wm.Compaction]:
    """Compact the old sessions (of one ``subject``, or every one) into session summary
    records, as one recorded change that :func:`undo` reverses. Admin keys only."""
    body = {
        "min_turns": min_turns,
        "max_tokens": max_tokens,
        "dry_run": dry_run,
        "reason": reason,
        **given(subject=subject, older_than_days=older_than_days, before=when(before, "before")),
    }
    return post_call("/v1/compactions", wm.Compaction, body)


def consolidate(
    *,
    subject: str | None = None,
    family: str | None = None,
    threshold: float | None = None,
    dry_run: bool = False,
    reason: str = "consolidated",
) -> Call[wm.Consolidation]:
    """Merge near-duplicate records of one family and subject (of one ``subject``, or
    every one) as one recorded change that :func:`undo` reverses. Admin keys only."""
    body = {
        "dry_run": dry_run,
        "reason": reason,
        **given(subject=subject, family=family, threshold=threshold),
    }
    return post_call("/v1/consolidations", wm.Consolidation, body)


def retention() -> Call[dict[str, int]]:
    """Days the tenant keeps records of each kind that has a retention. Admin keys only."""
    return get_call("/v1/retention", dict[str, int])


def set_retention(kind: str, days: int | None) -> Call[dict[str, int]]:
    """Keep the tenant's records of ``kind`` ``days`` days (``None``: no retention); the
    tenant's retention per kind after it. Admin keys only."""
    return Call(
        method="PUT",
        path=f"/v1/retention/{path_param(kind)}",
        read=reader(dict[str, int]),
        body={"days": days},
    )
