"""The JSON wire format as pydantic models: what the HTTP API answers and a client reads.

The dict helpers of :mod:`memledger.wire` build the JSON; the models here describe
exactly those shapes (``extra="forbid"``: a field added to a helper and not here
fails the tests that validate one against the other, and the API's own response
validation). They import no web framework, so :mod:`memledger.client` can share
them with :mod:`memledger.api`. Datetimes are ISO 8601 in UTC with a ``Z``.

The models, by what they carry (each group in a private module of this package):

* records and their history: :class:`Record`, :class:`HistoryEntry`,
  :class:`FamilySlot`, :class:`SubjectPage` (``_records``);
* source events, their receipts, jobs and the review queue: :class:`Receipt`,
  :class:`Event`, :class:`EventStatus`, :class:`Job`, :class:`WorkReport`,
  :class:`Review`, :class:`ReviewResolution` (``_events``);
* recorded changes and erasures: :class:`Revocation`, :class:`Forget`, :class:`Undo`,
  :class:`Rollback`, :class:`Consolidation`, :class:`Compaction`, :class:`ChangeOut`,
  :class:`Erasure` (``_changes``);
* reads: :class:`Recall`, :class:`Packet`, :class:`Replay`, :class:`TraceSummary`,
  :class:`StoredTrace` (``_reads``);
* administration: :class:`Key`, :class:`KeyCreated`, :class:`WhoAmI`, :class:`Family`,
  :class:`QuotasOut` (``_admin``);
* the shared corpus: :class:`Document`, :class:`DocumentAdded`, :class:`SearchResult`
  (``_corpus``);
* the short path: :class:`MemoryItem`, :class:`Added`, :class:`MemoryChange`,
  :class:`MemorySearch` (``_memories``);
* :class:`WireModel`, the base of them all (``_base``).

Two more things are part of the wire format and live here for the same reason:

* :class:`ConsistencyToken`, the ``Memledger-Consistency`` header: revision floors
  per (subject, family), ``user-42/delivery_preference@3,user-42/home_city@1``
  (``_consistency``);
* :data:`PROBLEMS`, which error class is which problem (RFC 9457) status and code
  (``_problems``).
"""

from __future__ import annotations

from memledger.wire_models._admin import Family, Key, KeyCreated, QuotasOut, WhoAmI
from memledger.wire_models._base import WireModel
from memledger.wire_models._changes import (
    ChangeOut,
    ChangePartOut,
    CompactedOut,
    Compaction,
    Consolidation,
    Erasure,
    Forget,
    MergeOut,
    NotRestoredOut,
    Revocation,
    Rollback,
    StoreErasure,
    Undo,
)
from memledger.wire_models._consistency import (
    CONSISTENCY_HEADER,
    MAX_FLOORS,
    MAX_REVISION,
    ConsistencyToken,
)
from memledger.wire_models._corpus import Document, DocumentAdded, SearchResult
from memledger.wire_models._events import (
    Actor,
    ClaimOut,
    ClaimResult,
    Event,
    EventStatus,
    Job,
    PossibleUpdate,
    Receipt,
    Review,
    ReviewResolution,
    RevisionToken,
    WorkReport,
)
from memledger.wire_models._memories import Added, MemoryChange, MemoryItem, MemorySearch
from memledger.wire_models._problems import (
    PROBLEM_TYPE_BASE,
    PROBLEMS,
    Problem,
    ProblemError,
    ProblemKind,
    error_class,
    problem_kind,
)
from memledger.wire_models._reads import Packet, Recall, Replay, StoredTrace, TraceSummary
from memledger.wire_models._records import (
    Extractor,
    FamilySlot,
    HistoryEntry,
    Record,
    SubjectPage,
    SubjectSummary,
)

__all__ = [
    "CONSISTENCY_HEADER",
    "MAX_FLOORS",
    "MAX_REVISION",
    "PROBLEMS",
    "PROBLEM_TYPE_BASE",
    "Actor",
    "Added",
    "ChangeOut",
    "ChangePartOut",
    "ClaimOut",
    "ClaimResult",
    "CompactedOut",
    "Compaction",
    "ConsistencyToken",
    "Consolidation",
    "Document",
    "DocumentAdded",
    "Erasure",
    "Event",
    "EventStatus",
    "Extractor",
    "Family",
    "FamilySlot",
    "Forget",
    "HistoryEntry",
    "Job",
    "Key",
    "KeyCreated",
    "MemoryChange",
    "MemoryItem",
    "MemorySearch",
    "MergeOut",
    "NotRestoredOut",
    "Packet",
    "PossibleUpdate",
    "Problem",
    "ProblemError",
    "ProblemKind",
    "QuotasOut",
    "Recall",
    "Receipt",
    "Record",
    "Replay",
    "Review",
    "ReviewResolution",
    "RevisionToken",
    "Revocation",
    "Rollback",
    "SearchResult",
    "StoreErasure",
    "StoredTrace",
    "SubjectPage",
    "SubjectSummary",
    "TraceSummary",
    "Undo",
    "WhoAmI",
    "WireModel",
    "WorkReport",
    "error_class",
    "problem_kind",
]
