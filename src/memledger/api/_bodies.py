"""The JSON bodies the API reads (source events excepted: those are parsed by
:mod:`memledger.wire`, the one parser of events for every edge).

Every body is a :class:`~memledger.api._strict.StrictBody`: unknown fields refused,
no type coercion, every string text. ``tenant`` is accepted only so that a body naming
another tenant than its key's can be refused (403): leave it out.

An identifier, wherever a request holds one, follows :data:`ID_PATTERN` (255
characters at most): :data:`Id` in a body, :func:`id_path` and :func:`id_query` for a
route's path and query parameters.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Query
from pydantic import Field, StringConstraints
from pydantic import JsonValue as Json

from memledger.api._extra import NAME_PATTERN, MediaType
from memledger.api._strict import Moment, StrictBody
from memledger.corpus import DEFAULT_FLOOR, MAX_K, MAX_QUERY
from memledger.domain.budget import MAX_TOKENS, Section
from memledger.domain.faults import names
from memledger.domain.keys import KeyRole, PrincipalKind
from memledger.domain.records import Kind
from memledger.read.context import MAX_REQUEST
from memledger.read.recall import MAX_K as MAX_RECALL_K
from memledger.read.recall import MAX_QUERY as MAX_RECALL_QUERY

__all__ = [
    "ID_PATTERN",
    "BudgetIn",
    "ConstraintIn",
    "ContextIn",
    "DocumentIn",
    "FamilyIn",
    "Id",
    "KeyIn",
    "LiveIn",
    "MaterialIn",
    "ProcessIn",
    "ReasonIn",
    "RecallIn",
    "SearchIn",
    "id_path",
    "id_query",
]

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@/+\-]{0,254}$"
"""An identifier (tenant, subject, family, scope, event id ...), as the library checks it."""

Id = Annotated[str, StringConstraints(pattern=ID_PATTERN, max_length=255)]


def id_path(description: str | None = None) -> Any:
    """A path parameter holding an identifier (``Annotated[str, id_path("Whose.")]``)."""
    return Path(pattern=ID_PATTERN, max_length=255, description=description)


def id_query(description: str) -> Any:
    """A query parameter holding an identifier (``Annotated[str | None, id_query(...)]``)."""
    return Query(pattern=ID_PATTERN, max_length=255, description=description)


Tenant = Annotated[
    Id | None,
    Field(description="Leave it out: the key decides. Another tenant than the key's is refused."),
]
Token = Annotated[
    str | None,
    Field(
        max_length=16_384,
        description="A write's consistency token (as its Memledger-Consistency header); "
        "merged with the header's.",
    ),
]
Text = Annotated[str, StringConstraints(min_length=1, max_length=10_000)]


class RecallIn(StrictBody):
    query: Annotated[str, StringConstraints(min_length=1, max_length=MAX_RECALL_QUERY)]
    subject: Id | None = None
    k: Annotated[int, Field(ge=1, le=MAX_RECALL_K)] = 10
    valid_at: Moment | None = Field(
        default=None, description="The valid time to answer at (default: now)."
    )
    consistency: Token = None
    tenant: Tenant = None


class BudgetIn(StrictBody):
    total: Annotated[int, Field(ge=1, le=MAX_TOKENS)]
    sections: dict[Section, Annotated[int, Field(ge=1, le=MAX_TOKENS)]] = Field(
        default_factory=dict, description="A cap in tokens per section."
    )


class LiveIn(StrictBody):
    """Current business state the caller read just now from its system of record."""

    name: Id
    value: dict[str, Json]
    observed_at: Moment
    source: Annotated[str, StringConstraints(max_length=255)] = "caller"


class ConstraintIn(StrictBody):
    """A rule in force (current policy)."""

    id: Id
    rule: Text
    effective_from: Moment | None = None


class MaterialIn(StrictBody):
    """Long material the user supplied with this request."""

    name: Annotated[str, StringConstraints(min_length=1, max_length=255)]
    text: Annotated[str, StringConstraints(min_length=1, max_length=2_000_000)]


class ContextIn(StrictBody):
    request: Annotated[str, StringConstraints(min_length=1, max_length=MAX_REQUEST)]
    subject: Id | None = None
    budget: Annotated[int, Field(ge=1, le=MAX_TOKENS)] | BudgetIn = Field(
        default=2000, description="Tokens for the whole packet, or a total and section caps."
    )
    live: list[LiveIn] = Field(default_factory=list, max_length=100)
    constraints: list[ConstraintIn] = Field(default_factory=list, max_length=100)
    material: list[MaterialIn] = Field(default_factory=list, max_length=20)
    k: Annotated[int, Field(ge=1, le=MAX_RECALL_K)] = 20
    valid_at: Moment | None = None
    corpus: bool = Field(
        default=True, description="Consult the tenant's shared corpus when routing says so."
    )
    consistency: Token = None
    tenant: Tenant = None


class ReasonIn(StrictBody):
    reason: Text = Field(description="Why (recorded).")
    tenant: Tenant = None


class UndoIn(StrictBody):
    change_id: Id = Field(
        description="A revocation's or forget's `change_id` (on its receipt), a rollback's, "
        "or the id of an event whose correction to undo."
    )
    reason: Text = "undone"
    tenant: Tenant = None


class RollbackIn(StrictBody):
    extractor: Annotated[str, StringConstraints(min_length=3, max_length=255)] = Field(
        description="The extractor version to take back, NAME@VERSION as on its records."
    )
    since: Moment | None = Field(
        default=None, description="Only what it wrote at or after this record time."
    )
    rederive: bool = Field(
        default=False,
        description="Extract the same events again with the service's extractor (the one "
        "`POST /v1/process` uses), in the same change.",
    )
    reason: Text = "rollback"
    tenant: Tenant = None


class ConsolidateIn(StrictBody):
    subject: Id | None = Field(default=None, description="One subject; default: every one.")
    family: Id | None = Field(default=None, description="One family of that subject.")
    threshold: Annotated[float, Field(gt=0, le=1)] | None = Field(
        default=None, description="Similarity to merge at; default: the NOOP threshold."
    )
    dry_run: bool = False
    reason: Text = "consolidated"
    tenant: Tenant = None


class CompactIn(StrictBody):
    subject: Id | None = Field(default=None, description="One subject; default: every one.")
    older_than_days: Annotated[float, Field(ge=0, le=36_500)] | None = Field(
        default=None,
        description="Compact sessions whose every turn is older than this; default 30.",
    )
    before: Moment | None = Field(
        default=None, description="Compact sessions whose every turn is before this time."
    )
    min_turns: Annotated[int, Field(ge=2, le=100_000)] = 2
    max_tokens: Annotated[int, Field(ge=20, le=100_000)] = 300
    dry_run: bool = False
    reason: Text = "compacted"
    tenant: Tenant = None


class EraseIn(StrictBody):
    event: Id | None = Field(default=None, description="Erase one source event.")
    memory_id: Id | None = Field(
        default=None, description="Erase a memory and the event its words came from."
    )
    subject: Id | None = Field(
        default=None, description="Erase a subject's events and what was said of it."
    )
    reason: Text = "erased"
    tenant: Tenant = None

    @classmethod
    def needs(cls) -> str:
        return f"a JSON object with one of {names(['event', 'memory_id', 'subject'], last='or')}"


class RetentionIn(StrictBody):
    days: Annotated[int, Field(ge=1, le=1_000_000)] | None = Field(
        description="Keep the kind this many days from when each record is written; null: "
        "no retention."
    )
    tenant: Tenant = None


class QuotasIn(StrictBody):
    max_records: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="Open records the tenant may hold."
    )
    jobs_per_minute: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="Extraction jobs the tenant may queue in any minute."
    )
    recalls_per_second: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = Field(
        default=None, description="Recalls and packets per second, per service process."
    )
    packet_tokens: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="The largest budget a context packet may ask for."
    )
    tenant: Tenant = None


class ProcessIn(StrictBody):
    max_jobs: Annotated[int, Field(ge=1, le=10_000)] = Field(
        default=100, description="Run at most this many jobs in this request."
    )
    tenant: Tenant = None


class KeyIn(StrictBody):
    actor: Id = Field(description="Who the key acts as, e.g. user-42.")
    principal: PrincipalKind = "user"
    role: KeyRole = "write"
    grants: list[Annotated[str, StringConstraints(min_length=1, max_length=512)]] = Field(
        default_factory=list,
        max_length=256,
        description="'family' or 'family:scope' the actor may set; '*' for every family.",
    )
    label: Annotated[str, StringConstraints(max_length=200)] = ""
    reads: list[Annotated[str, StringConstraints(min_length=1, max_length=255)]] = Field(
        default_factory=list,
        max_length=256,
        description="Other agents' private namespaces ('agent:<id>') the key may read.",
    )
    tenant: Tenant = None


class FamilyIn(StrictBody):
    name: Id
    kinds: list[Kind] = Field(min_length=1, max_length=6)
    description: Annotated[str, StringConstraints(max_length=2_000)] = ""
    own_say: bool = Field(
        default=False,
        description="The subject's own say: its authenticated user turns set it without a grant.",
    )
    tenant: Tenant = None


class DocumentIn(StrictBody):
    name: Annotated[str, StringConstraints(pattern=f"^{NAME_PATTERN}$")] = Field(
        description="A file name; the media type's suffix is added when missing."
    )
    content: Annotated[str, StringConstraints(min_length=1)]
    media_type: MediaType = "text/markdown"
    tenant: Tenant = None


class SearchIn(StrictBody):
    query: Annotated[str, StringConstraints(min_length=1, max_length=MAX_QUERY)]
    k: Annotated[int, Field(ge=1, le=MAX_K)] = 5
    floor: Annotated[float, Field(ge=0.0, le=1.0)] = DEFAULT_FLOOR
    tenant: Tenant = None
