"""Recorded changes and their undo: a retraction can be reversed.

A *change* is one operation that closed records and may have written others, kept
by id so that it can be undone: a revocation (``revoke``, ``revoke_family``), a
forgotten event (``forget``), a correction (an event whose claims closed earlier
windows: its id is the event's), an extractor's rollback, a consolidation's merges
(``merge``), and an undo itself.
Per family it names what it closed, what it opened and, for a revocation, the
generation whose revoked sources an undo lifts. Ids only: no content.

Undoing one (``memledger.write.undo``) closes what it opened and restores what it
closed as new records at the family's next revision; history keeps both.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, get_args

from memledger.domain.records import FamilyRevision, format_time, parse_time

ChangeKind = Literal[
    "revocation", "forget", "correction", "rollback", "merge", "undo", "compaction"
]
CHANGE_KINDS: tuple[ChangeKind, ...] = get_args(ChangeKind)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangePart:
    """What a change did to one family."""

    subject: str
    family: str
    closed: tuple[str, ...] = ()
    """Records it closed: an undo restores them."""
    opened: tuple[str, ...] = ()
    """Records it wrote: an undo closes those still open."""
    generation: int | None = None
    """A revocation's generation: an undo lifts the sources it revoked in the family."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    tenant: str
    change_id: str
    kind: ChangeKind
    at: datetime
    reason: str
    parts: tuple[ChangePart, ...] = ()
    forgotten: tuple[str, ...] = ()
    """Events it recorded as forgotten: an undo lets them be used again."""
    undoes: str | None = None
    """For an undo: the change it undid."""
    undone_by: str | None = None
    """The undo that undid it, if one did."""

    def body(self) -> dict[str, Any]:
        """What it did, as JSON-ready data: its parts, forgotten events and what it undid
        (the stored body, and the same fields on the wire)."""
        return {
            "parts": [
                {
                    "subject": p.subject,
                    "family": p.family,
                    "closed": list(p.closed),
                    "opened": list(p.opened),
                    "generation": p.generation,
                }
                for p in self.parts
            ],
            "forgotten": list(self.forgotten),
            "undoes": self.undoes,
        }

    def to_json(self) -> str:
        return json.dumps(self.body(), sort_keys=True)

    @staticmethod
    def from_row(
        tenant: str,
        change_id: str,
        kind: str,
        at: str,
        reason: str,
        body: str,
        undone_by: str | None,
    ) -> Change:
        data = json.loads(body)
        if kind not in CHANGE_KINDS:  # pragma: no cover - written by this module only
            raise ValueError(f"unknown change kind {kind!r}")
        return Change(
            tenant=tenant,
            change_id=change_id,
            kind=kind,
            at=parse_time(at),
            reason=reason,
            parts=tuple(
                ChangePart(
                    subject=p["subject"],
                    family=p["family"],
                    closed=tuple(p["closed"]),
                    opened=tuple(p["opened"]),
                    generation=p["generation"],
                )
                for p in data["parts"]
            ),
            forgotten=tuple(data["forgotten"]),
            undoes=data["undoes"],
            undone_by=undone_by,
        )

    def row(self) -> tuple[str, str, str, str, str, str, str | None]:
        return (
            self.tenant,
            self.change_id,
            self.kind,
            format_time(self.at),
            self.reason,
            self.to_json(),
            self.undone_by,
        )


NotRestoredWhy = Literal["erased", "covered", "open", "changed", "forgotten", "revoked"]
"""Why an undo did not restore a record: ``erased`` (its data is gone), ``covered``
(records written since hold its whole valid time: they stay), ``open`` (it is open
already), ``changed`` (what the change wrote in its place was changed again since:
an episode redacted by a later revocation too keeps that redaction), ``forgotten``
(its source event was forgotten since: undo that first), ``revoked`` (its source
was revoked in its family by another change that still stands)."""


@dataclass(slots=True)
class ChangeLog:
    """What an operation changed, collected as it goes (``memledger.write.revoke``)."""

    parts: list[ChangePart] = field(default_factory=list)
    causes: list[str] = field(default_factory=list)
    """The ``closed_by`` values it wrote."""
    forgotten: list[str] = field(default_factory=list)

    def add(self, part: ChangePart, *, cause: str) -> None:
        self.parts.append(part)
        if cause not in self.causes:
            self.causes.append(cause)


@dataclass(frozen=True, slots=True, kw_only=True)
class NotRestored:
    memory_id: str
    why: NotRestoredWhy


@dataclass(frozen=True, slots=True, kw_only=True)
class UndoReceipt:
    """The acknowledgement of an undo: ``restored`` are the new records that reinstate
    what the change closed (each names the one it restores in ``supersedes``),
    ``closed`` what the change had written and the undo closed."""

    tenant: str
    change_id: str
    """The undo's own id (a change of kind ``undo``)."""
    undid: str
    kind: ChangeKind
    """What kind of change was undone."""
    restored: tuple[str, ...]
    closed: tuple[str, ...]
    not_restored: tuple[NotRestored, ...]
    revisions: tuple[FamilyRevision, ...]
    acknowledged_at: datetime
    reason: str
    duplicate: bool = False
    """The change was undone before: this is that undo's receipt, nothing changed."""
    unforgotten: tuple[str, ...] = field(default=())
    """Events usable again (the change had forgotten them)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RollbackReceipt:
    """What rolling back an extractor version did (``Memory.rollback``)."""

    tenant: str
    change_id: str | None
    """The recorded change (``None``: the version wrote nothing to take back)."""
    extractor: str
    """``name@version``."""
    since: datetime | None
    events: tuple[str, ...]
    """The events whose claims that version wrote."""
    closed: tuple[str, ...]
    """Its records that were open, now closed."""
    restored: tuple[str, ...]
    """New records restoring what its records had closed."""
    not_restored: tuple[NotRestored, ...]
    rederived: tuple[str, ...]
    """Records the other extractor wrote for the same events."""
    held: tuple[str, ...]
    """Events whose re-derived claims would need review: nothing written for them."""
    acknowledged_at: datetime
    reason: str
