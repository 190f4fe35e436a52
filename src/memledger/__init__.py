"""memledger: a long-term memory layer for AI agents that treats memory as a ledger.

The public surface is re-exported here; everything else is implementation.
"""

from memledger._files import StoreFileModeWarning
from memledger.domain.changes import Change, ChangePart, NotRestored, RollbackReceipt, UndoReceipt
from memledger.domain.families import Family, Schema
from memledger.domain.intervals import Interval
from memledger.domain.items import MemoryChange, MemoryItem
from memledger.domain.keys import ApiKey, Principal
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
    ReviewResolution,
    RevocationReceipt,
    SourceEvent,
)
from memledger.errors import (
    AuthenticationError,
    BudgetError,
    ConflictError,
    EmbedderError,
    EventConflictError,
    EventErasedError,
    EventNotFoundError,
    ExtractionError,
    InvalidClaimError,
    InvalidEventError,
    InvalidInputError,
    InvalidIntervalError,
    InvalidQueryError,
    KeyNotFoundError,
    LastAdminKeyError,
    LimitExceededError,
    MemledgerError,
    MemoryNotFoundError,
    MigrationError,
    NotFoundError,
    PermissionDeniedError,
    QuotaExceededError,
    ReviewNotFoundError,
    RevisionNotMetError,
    RewriterError,
    StoreError,
    StoreLockedError,
    StoreNotFoundError,
    TraceNotFoundError,
    UnknownFamilyError,
    UnknownKindError,
    WorkBudgetExceededError,
)
from memledger.index.derived import DerivedIndex
from memledger.memory import Memory
from memledger.ports import FamilySlot
from memledger.read.recall import Recalled, RecallResult, RecallSettings

__version__ = "0.1.0"

from memledger.domain.quotas import Quotas
from memledger.write.erase import ErasureReceipt, StoreErasure
from memledger.write.messages import Added

__all__ = [
    "Actor",
    "Added",
    "ApiKey",
    "AuthenticationError",
    "BudgetError",
    "Change",
    "ChangePart",
    "Claim",
    "ClaimResult",
    "ConflictError",
    "DerivedIndex",
    "EmbedderError",
    "ErasureReceipt",
    "EventConflictError",
    "EventErasedError",
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
    "KeyNotFoundError",
    "LastAdminKeyError",
    "LimitExceededError",
    "Limits",
    "MemledgerError",
    "Memory",
    "MemoryChange",
    "MemoryItem",
    "MemoryNotFoundError",
    "MemoryRecord",
    "MigrationError",
    "NotFoundError",
    "NotRestored",
    "PermissionDeniedError",
    "Principal",
    "QuotaExceededError",
    "Quotas",
    "RecallResult",
    "RecallSettings",
    "Recalled",
    "Receipt",
    "ReviewItem",
    "ReviewNotFoundError",
    "ReviewResolution",
    "RevisionNotMetError",
    "RevocationReceipt",
    "RewriterError",
    "RollbackReceipt",
    "Schema",
    "SourceEvent",
    "StoreErasure",
    "StoreError",
    "StoreFileModeWarning",
    "StoreLockedError",
    "StoreNotFoundError",
    "TraceNotFoundError",
    "UndoReceipt",
    "UnknownFamilyError",
    "UnknownKindError",
    "WorkBudgetExceededError",
    "WritePolicy",
]
