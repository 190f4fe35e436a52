"""Records and their history on the wire: :class:`Record` (with its
:class:`Extractor`), :class:`HistoryEntry` (a family's change log), :class:`FamilySlot`
(a family's revision and generation) and the pages of subjects (:class:`SubjectSummary`,
:class:`SubjectPage`)."""

from __future__ import annotations

from pydantic import AwareDatetime
from pydantic import JsonValue as Json

from memledger.domain.records import (
    Channel,
    ExclusionReason,
    ExtractorKind,
    HistoryAction,
    Kind,
    RecordStatus,
)
from memledger.wire_models._base import WireModel

__all__ = ["Extractor", "FamilySlot", "HistoryEntry", "Record", "SubjectPage", "SubjectSummary"]


class Extractor(WireModel):
    kind: ExtractorKind
    name: str
    version: str
    model: str | None
    prompt_version: str | None


class Record(WireModel):
    """:func:`memledger.wire.record_to_dict`."""

    tenant: str
    memory_id: str
    subject: str
    family: str
    kind: Kind
    proposed_kind: Kind
    claim: str
    value: Json
    scope: str
    status: RecordStatus
    authorised: bool
    source_event_id: str
    source_actor_id: str
    source_channel: Channel
    source_identity_authenticated: bool
    scope_authorized: bool
    claim_faithful_to_source: bool
    operational_setting_confirmed: bool
    recorded_at: AwareDatetime
    superseded_at: AwareDatetime | None
    closed_by: str | None
    valid_from: AwareDatetime
    valid_until: AwareDatetime | None
    revision: int
    generation: int
    confidence: float
    mentions: int
    """Independent statements of this claim (its own and repeats, merged ones included)."""
    grounding: str | None
    extractor: Extractor
    supersedes: str | None
    exclusion: ExclusionReason | None
    expires_at: AwareDatetime | None


class HistoryEntry(WireModel):
    """:func:`memledger.wire.history_entry_to_dict`."""

    seq: int
    tenant: str
    subject: str
    family: str
    revision: int
    generation: int
    action: HistoryAction
    memory_id: str
    status: RecordStatus
    at: AwareDatetime
    cause: str
    note: str | None


class FamilySlot(WireModel):
    """A family of a subject: its revision (every accepted change) and generation
    (every revocation)."""

    subject: str
    family: str
    revision: int
    generation: int
    updated_at: AwareDatetime | None


class SubjectSummary(WireModel):
    """A subject of the key's tenant: how many families and events it has, and when it
    last moved (its last ingested event or family change)."""

    subject: str
    families: int
    events: int
    last_at: AwareDatetime | None


class SubjectPage(WireModel):
    """One page of subjects, in order; ``next``: pass it as ``after`` for the next page
    (``null``: this is the last page)."""

    subjects: list[SubjectSummary]
    next: str | None
