"""The whole memledger error tree.

Caller mistakes and backend failures are kept apart; every class also inherits
the builtin it resembles, so ``except ValueError`` keeps working for callers
who do not know memledger's classes::

    MemledgerError
    ├── InvalidInputError (ValueError)          the caller sent something unusable
    │   ├── InvalidEventError                   a malformed source event
    │   ├── InvalidClaimError                   a malformed candidate claim
    │   │   ├── UnknownFamilyError              family not in the schema
    │   │   └── UnknownKindError                kind not a memory kind / not allowed
    │   ├── InvalidIntervalError                inverted or empty valid-time interval
    │   ├── InvalidQueryError                   a read with unusable arguments
    │   ├── LimitExceededError                  input over a configured size limit
    │   └── BudgetError                         a context budget that cannot hold what must fit
    ├── ConflictError                           the request contradicts stored state
    │   ├── EventConflictError                  event id reused with other content
    │   ├── EventErasedError                    the id of an erased event, sent again
    │   └── LastAdminKeyError                   revoking the tenant's last live admin key
    ├── AuthenticationError                     an API key that is unknown, malformed or revoked
    ├── PermissionDeniedError                   a valid key that may not do this
    ├── NotFoundError (LookupError)
    │   ├── MemoryNotFoundError
    │   ├── EventNotFoundError
    │   ├── ReviewNotFoundError
    │   ├── KeyNotFoundError
    │   ├── TraceNotFoundError
    │   └── StoreNotFoundError                  no store at that URL, and not asked to create one
    ├── RevisionNotMetError                     a read cannot meet its revision floor
    ├── QuotaExceededError                      the tenant is past one of its quotas
    ├── WorkBudgetExceededError                 a request did not finish in its time budget
    ├── ExtractionError                         an extractor failed; the job stays queued
    ├── EmbedderError                           an embedder failed: endpoint, model or answer
    ├── RewriterError                           a query rewriter failed; recall uses the query
    └── StoreError (RuntimeError)               the backend failed, not the caller
        ├── StoreLockedError                    gave up waiting for a write lock
        └── MigrationError                      schema missing, newer, or tampered

Backend driver exceptions never escape: the store adapters translate them at
their edge (see ``memledger.store.sqlite``).

An :class:`InvalidInputError` that found several problems in its input names them in
its message (the first ten, with the count: :mod:`memledger.domain.faults`) and holds
every one as data, :attr:`InvalidInputError.faults`.
"""

from __future__ import annotations

from typing import TypeAlias

__all__ = [
    "AuthenticationError",
    "BudgetError",
    "ConflictError",
    "EmbedderError",
    "EventConflictError",
    "EventErasedError",
    "EventNotFoundError",
    "ExtractionError",
    "InvalidClaimError",
    "InvalidEventError",
    "InvalidInputError",
    "InvalidIntervalError",
    "InvalidQueryError",
    "KeyNotFoundError",
    "LastAdminKeyError",
    "LimitExceededError",
    "MemledgerError",
    "MemoryNotFoundError",
    "MigrationError",
    "NotFoundError",
    "PermissionDeniedError",
    "QuotaExceededError",
    "ReviewNotFoundError",
    "RevisionNotMetError",
    "RewriterError",
    "StoreError",
    "StoreLockedError",
    "StoreNotFoundError",
    "TraceNotFoundError",
    "UnknownFamilyError",
    "UnknownKindError",
    "WorkBudgetExceededError",
]


class MemledgerError(Exception):
    """Base class of every error memledger raises on purpose."""


Fault: TypeAlias = tuple[tuple[str | int, ...], str]
"""One problem of an input: its place (``("claims", 0, "kind")``) and what is wrong there."""


class InvalidInputError(MemledgerError, ValueError):
    """The caller sent something memledger cannot use. Nothing was written."""

    faults: tuple[Fault, ...] = ()
    """Every problem found, where the message tells several (empty otherwise): the HTTP
    API lists them as a problem's ``errors``."""


class InvalidEventError(InvalidInputError):
    """A source event is malformed (missing tenant, naive datetime, ...)."""


class InvalidClaimError(InvalidInputError):
    """A candidate claim is malformed."""


class UnknownFamilyError(InvalidClaimError):
    """A claim names a family the schema does not define."""


class UnknownKindError(InvalidClaimError):
    """A claim names a kind that is not a memory kind, or not one its family allows."""


class InvalidIntervalError(InvalidInputError):
    """A valid-time interval is inverted, empty or naive."""


class InvalidQueryError(InvalidInputError):
    """A read was called with unusable arguments."""


class LimitExceededError(InvalidInputError):
    """The input is larger (or deeper) than a configured limit allows; the message
    names the limit (see :class:`memledger.domain.limits.Limits`)."""


class BudgetError(InvalidInputError):
    """A context budget too small for what must be in the packet (the request, the
    caller's constraints and live state), or a malformed budget."""


class ConflictError(MemledgerError):
    """The request contradicts what the store already holds."""


class EventConflictError(ConflictError):
    """An event id was reused with different content; the ledger is append-only."""


class QuotaExceededError(MemledgerError):
    """The tenant is past one of its quotas (:mod:`memledger.domain.quotas`); the
    message names it, ``retry_after`` says in how many seconds to try again (``None``:
    not until the tenant holds less)."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class WorkBudgetExceededError(MemledgerError):
    """A request's work did not finish within its time budget
    (:mod:`memledger.deadline`); it stopped before writing anything."""


class EventErasedError(ConflictError):
    """The event was erased: its id (a replay, or new content under it) is refused."""


class LastAdminKeyError(ConflictError):
    """The key is the tenant's last live admin key: revoking it would leave no key that
    can manage keys. Create another admin key first."""


class AuthenticationError(MemledgerError):
    """An API key was not accepted: unknown, malformed or revoked. The message is the
    same in all three cases, so a caller learns nothing about which keys exist."""


class PermissionDeniedError(MemledgerError):
    """An authenticated key may not do what was asked: a read-only key that writes, a
    key of one tenant that names another, a non-admin key that administers. Nothing
    was written."""


class NotFoundError(MemledgerError, LookupError):
    """A named thing does not exist for this tenant."""


class MemoryNotFoundError(NotFoundError):
    """No memory record with that id exists for this tenant."""


class EventNotFoundError(NotFoundError):
    """No source event with that id exists for this tenant."""


class ReviewNotFoundError(NotFoundError):
    """No review item with that id exists for this tenant."""


class KeyNotFoundError(NotFoundError):
    """No API key with that id exists for this tenant."""


class TraceNotFoundError(NotFoundError):
    """No context trace with that id exists for this tenant."""


class StoreNotFoundError(NotFoundError):
    """No store exists at the URL, and the caller asked not to create one."""


class RevisionNotMetError(MemledgerError):
    """A read source cannot meet the requested ``min_revision``; it refuses to answer stale."""


class ExtractionError(MemledgerError):
    """An extractor could not produce a candidate batch (endpoint down, too slow,
    invalid output). The job stays queued for a retry with the reason recorded;
    nothing was written."""

    def __init__(self, message: str, *, reason: str = "extractor_failed") -> None:
        super().__init__(message)
        self.reason = reason


class RewriterError(MemledgerError):
    """A query rewriter could not rewrite a query (endpoint down, too slow, invalid
    output). Recall then searches the original query alone. ``reason`` is
    machine-readable (``"endpoint_unreachable"``, ``"timeout"``, ``"http_<code>"``,
    ``"invalid_json"``, ``"schema_mismatch"``)."""

    def __init__(self, message: str, *, reason: str = "rewriter_failed") -> None:
        super().__init__(message)
        self.reason = reason


class EmbedderError(MemledgerError):
    """An embedder could not embed a batch: its endpoint is down or too slow, it
    answered something that is not one vector of the promised size per text, or
    its model cannot be loaded. Nothing was cached or indexed. ``reason`` is
    machine-readable (``"endpoint_unreachable"``, ``"timeout"``, ``"http_<code>"``,
    ``"invalid_json"``, ``"dimension_mismatch"``, ``"model_unavailable"``)."""

    def __init__(self, message: str, *, reason: str = "embedder_failed") -> None:
        super().__init__(message)
        self.reason = reason


class StoreError(MemledgerError, RuntimeError):
    """The storage backend failed. The transaction was rolled back."""


class StoreLockedError(StoreError):
    """Waiting for the write lock timed out. Nothing was written; retrying is safe."""


class MigrationError(StoreError):
    """The database schema is missing, newer than this code, or was altered."""
