"""Errors on the wire (RFC 9457): the :class:`Problem` body, and :data:`PROBLEMS`, which
error class of :mod:`memledger.errors` is which status and stable code
(:class:`ProblemKind`; :func:`problem_kind` finds an error's, :func:`error_class` reads
the table backwards for a client)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memledger import errors as e
from memledger.wire_models._base import WireModel

__all__ = [
    "PROBLEMS",
    "PROBLEM_TYPE_BASE",
    "Problem",
    "ProblemError",
    "ProblemKind",
    "error_class",
    "problem_kind",
]


class ProblemError(WireModel):
    """One fault of a request: its place (``["body", "live", 0, "name"]``) and what is
    wrong there."""

    loc: list[str | int]
    msg: str


class Problem(WireModel):
    """An error, as ``application/problem+json``. ``type`` is
    ``https://memledger.dev/problems/<code>``; ``code`` is stable per error class
    (:data:`PROBLEMS`). A request with several faults (one that does not match its
    schema, 422; a malformed event or messages, 400) names them in ``detail`` and lists
    them in ``errors``, the first ten of ``error_count``."""

    type: str
    title: str
    status: int
    detail: str
    code: str
    errors: list[ProblemError] | None = None
    error_count: int | None = None


PROBLEM_TYPE_BASE = "https://memledger.dev/problems/"


@dataclass(frozen=True, slots=True, kw_only=True)
class ProblemKind:
    """How an error class is told over HTTP. ``detail`` set: that fixed text is shown
    instead of the error's message (which may name what the caller must not learn, or
    the server's internals)."""

    status: int
    code: str
    title: str
    detail: str | None = None
    retry_after: int | None = None

    @property
    def type(self) -> str:
        return PROBLEM_TYPE_BASE + self.code


def _gone(what: str) -> str:
    return f"No {what} with this id exists for this API key's tenant."


_SERVER = "The server failed to answer; nothing was written. It has been logged."

_BEHIND = "This server has not reached the revisions the consistency token asks for."
_BUSY = "The store was busy; nothing was written. Retrying is safe."
_SPENT = (
    "The request did not finish within this server's work budget per request and stopped; "
    "nothing was written. Send less (shorter material, a smaller document)."
)
# fmt: off
_TABLE: tuple[tuple[type[e.MemledgerError], int, str, str, str | None], ...] = (
    (e.MemledgerError, 500, "internal", "Internal error", _SERVER),
    (e.InvalidInputError, 400, "invalid_input", "Invalid input", None),
    (e.InvalidEventError, 400, "invalid_event", "Invalid event", None),
    (e.InvalidClaimError, 400, "invalid_claim", "Invalid claim", None),
    (e.UnknownFamilyError, 400, "unknown_family", "Unknown family", None),
    (e.UnknownKindError, 400, "unknown_kind", "Unknown kind", None),
    (e.InvalidIntervalError, 400, "invalid_interval", "Invalid interval", None),
    (e.InvalidQueryError, 400, "invalid_query", "Invalid query", None),
    (e.LimitExceededError, 413, "limit_exceeded", "Limit exceeded", None),
    (e.BudgetError, 400, "invalid_budget", "Invalid budget", None),
    (e.ConflictError, 409, "conflict", "Conflict", None),
    (e.EventConflictError, 409, "event_conflict", "Event id reused with other content", None),
    (e.EventErasedError, 409, "event_erased", "The event was erased", None),
    (e.LastAdminKeyError, 409, "last_admin_key", "The tenant's last admin key", None),
    (e.QuotaExceededError, 429, "quota_exceeded", "Quota exceeded", None),
    (e.WorkBudgetExceededError, 503, "budget_exceeded", "Work budget exceeded", _SPENT),
    (e.AuthenticationError, 401, "unauthenticated", "Not authenticated", None),
    (e.PermissionDeniedError, 403, "permission_denied", "Permission denied", None),
    (e.NotFoundError, 404, "not_found", "Not found", _gone("such thing")),
    (e.MemoryNotFoundError, 404, "memory_not_found", "Memory not found", _gone("memory")),
    (e.EventNotFoundError, 404, "event_not_found", "Event not found", _gone("event")),
    (e.ReviewNotFoundError, 404, "review_not_found", "Review not found", _gone("review item")),
    (e.KeyNotFoundError, 404, "key_not_found", "API key not found", _gone("API key")),
    (e.TraceNotFoundError, 404, "trace_not_found", "Trace not found", _gone("trace")),
    (e.StoreNotFoundError, 503, "store_not_found", "Store unavailable", _SERVER),
    (e.RevisionNotMetError, 409, "revision_not_met", "Revision not met", _BEHIND),
    (e.ExtractionError, 502, "extraction_failed", "Extractor failed", _SERVER),
    (e.EmbedderError, 502, "embedder_failed", "Embedder failed", _SERVER),
    (e.RewriterError, 502, "rewriter_failed", "Query rewriter failed", _SERVER),
    (e.StoreError, 500, "store_error", "Store failed", _SERVER),
    (e.StoreLockedError, 503, "store_locked", "Store busy", _BUSY),
    (e.MigrationError, 500, "migration_error", "Store schema mismatch", _SERVER),
)
# fmt: on
_RETRY_AFTER = {e.RevisionNotMetError: 1, e.StoreLockedError: 1}
"""Seconds a client should wait before trying again, where trying again can succeed."""

PROBLEMS: Mapping[type[e.MemledgerError], ProblemKind] = {
    cls: ProblemKind(
        status=status, code=code, title=title, detail=detail, retry_after=_RETRY_AFTER.get(cls)
    )
    for cls, status, code, title, detail in _TABLE
}
"""Every error class of :mod:`memledger.errors`, and how the HTTP API tells it. A 4xx
shows the error's own message as ``detail`` unless a fixed one is set (not-found
errors: the same text whether the id is missing or another tenant's)."""


def problem_kind(error: BaseException) -> ProblemKind | None:
    """The problem of the nearest class of ``error`` in :data:`PROBLEMS`, or ``None``
    for an exception that is not a :class:`~memledger.errors.MemledgerError`."""
    for cls in type(error).__mro__:
        if issubclass(cls, e.MemledgerError) and cls in PROBLEMS:
            return PROBLEMS[cls]
    return None


def error_class(code: str) -> type[e.MemledgerError]:
    """The error class a problem ``code`` stands for (a client raises it again);
    :class:`~memledger.errors.MemledgerError` for a code of no class."""
    for cls, kind in PROBLEMS.items():
        if kind.code == code:
            return cls
    return e.MemledgerError
