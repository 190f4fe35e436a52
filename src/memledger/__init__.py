"""memledger: a long-term memory layer for AI agents that treats memory as a ledger.

The public surface is re-exported here; everything else is implementation.
"""

from memledger.domain.families import Family, Schema
from memledger.domain.intervals import Interval
from memledger.domain.limits import Limits
from memledger.domain.policy import WritePolicy
from memledger.domain.records import (
    Actor,
    Claim,
    ClaimResult,
    ExtractorInfo,
    FamilyRevision,
    ForgetReceipt,
    Grant,
    HistoryEntry,
    Job,
    MemoryRecord,
    Receipt,
    ReviewItem,
    RevocationReceipt,
    SourceEvent,
)
from memledger.errors import (
    BudgetError,
    ConflictError,
    EmbedderError,
    EventConflictError,
    EventNotFoundError,
    ExtractionError,
    InvalidClaimError,
    InvalidEventError,
    InvalidInputError,
    InvalidIntervalError,
    InvalidQueryError,
    LimitExceededError,
    MemledgerError,
    MemoryNotFoundError,
    MigrationError,
    NotFoundError,
    ReviewNotFoundError,
    RevisionNotMetError,
    RewriterError,
    StoreError,
    StoreLockedError,
    StoreNotFoundError,
    TraceNotFoundError,
    UnknownFamilyError,
    UnknownKindError,
)
from memledger.index.derived import DerivedIndex
from memledger.memory import Memory
from memledger.ports import FamilySlot
from memledger.read.recall import Recalled, RecallResult, RecallSettings

__version__ = "0.1.0"

__all__ = [
    "Actor",
    "BudgetError",
    "Claim",
    "ClaimResult",
    "ConflictError",
    "DerivedIndex",
    "EmbedderError",
    "EventConflictError",
    "EventNotFoundError",
    "ExtractionError",
    "ExtractorInfo",
    "Family",
    "FamilyRevision",
    "FamilySlot",
    "ForgetReceipt",
    "Grant",
    "HistoryEntry",
    "Interval",
    "InvalidClaimError",
    "InvalidEventError",
    "InvalidInputError",
    "InvalidIntervalError",
    "InvalidQueryError",
    "Job",
    "LimitExceededError",
    "Limits",
    "MemledgerError",
    "Memory",
    "MemoryNotFoundError",
    "MemoryRecord",
    "MigrationError",
    "NotFoundError",
    "RecallResult",
    "RecallSettings",
    "Recalled",
    "Receipt",
    "ReviewItem",
    "ReviewNotFoundError",
    "RevisionNotMetError",
    "RevocationReceipt",
    "RewriterError",
    "Schema",
    "SourceEvent",
    "StoreError",
    "StoreLockedError",
    "StoreNotFoundError",
    "TraceNotFoundError",
    "UnknownFamilyError",
    "UnknownKindError",
    "WritePolicy",
]
