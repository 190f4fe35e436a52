"""The shapes of the mem0-compatible routes (:mod:`memledger.api._mem0`): the bodies
mem0's Platform API takes, the answers its clients read, and how mem0's ``filters``
name whose memory a call reads.

A body is held to the rules of every body of the API (:class:`StrictBody`), and an
option of mem0's that memledger does not carry out is refused by name (422
``invalid_request``, the option and why in ``errors``) rather than ignored: an option
left ``null`` is as if it were left out.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Annotated, Any, Final, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints, model_validator
from pydantic import JsonValue as Json

from memledger.api._bodies import Id
from memledger.api._strict import StrictBody
from memledger.domain.items import MemoryChange
from memledger.errors import InvalidQueryError
from memledger.read.recall import MAX_K, MAX_QUERY

__all__ = [
    "MAX_PAGE_SIZE",
    "UPDATED",
    "Mem0AddIn",
    "Mem0Added",
    "Mem0Change",
    "Mem0Deleted",
    "Mem0Found",
    "Mem0ListIn",
    "Mem0Memory",
    "Mem0Page",
    "Mem0Ping",
    "Mem0Scope",
    "Mem0Search",
    "Mem0SearchIn",
    "Mem0UpdateIn",
    "Mem0Updated",
    "Seconds",
    "Step",
    "history_steps",
    "scope_of",
]

MAX_PAGE_SIZE: Final = 200
UPDATED: Final = "updated"
"""The reason of the revocation an update makes."""
_LAST_SECOND: Final = 253_402_300_799
"""9999-12-31T23:59:59Z in Unix seconds: the last instant a datetime holds."""

_EXTRACTION = "extraction follows the server's extractor, not instructions sent with a call"
_NO_EXPIRY = "memledger hides expired memories always; expiry is a tenant's retention"
UNSUPPORTED: Final[Mapping[str, str]] = {
    "app_id": "memledger has no apps: the API key's tenant is the application",
    "org_id": "the API key decides the tenant, memledger's organisation and project",
    "project_id": "the API key decides the tenant, memledger's organisation and project",
    "custom_categories": "memledger's categories are its families, set per tenant",
    "categories": "memledger's categories are its families; filtering by them is not offered",
    "custom_instructions": _EXTRACTION,
    "agent_custom_instructions": _EXTRACTION,
    "includes": _EXTRACTION,
    "excludes": _EXTRACTION,
    "structured_data_schema": _EXTRACTION,
    "prompt_profile_id": _EXTRACTION,
    "enable_graph": "graph memory is not part of memledger",
    "immutable": "every memledger memory is immutable: a change writes a new one",
    "expiration_date": _NO_EXPIRY,
    "temporal_reasoning": "valid time is read from the words by the extractor",
    "timezone": "send `timestamp` (Unix seconds) for when the turns were said",
    "observation_datetime": "send `timestamp` (Unix seconds) for when the turns were said",
    "observation_date": "send `timestamp` (Unix seconds) for when the turns were said",
    "reference_date": "this route answers as of now; memledger's own recall reads any "
    "valid time (`POST /v1/recall`)",
    "keyword_search": "search always fuses lexical and vector candidates",
    "fields": "every answer holds every field",
    "keywords": "filtering by keywords is not offered: use search",
    "start_date": "filtering by creation date is not offered",
    "end_date": "filtering by creation date is not offered",
    "version": "this server speaks mem0's v3 routes only",
}
"""mem0 options memledger does not carry out, and why: a body naming one (not null)
is refused with the reason."""

_REFUSED: Final[Mapping[tuple[str, object], str]] = {
    ("infer", False): "memledger always extracts memories from what is said; the words "
    "themselves are kept as the turn's memory too",
    ("async_mode", True): "memledger adds synchronously: the answer holds the memories",
    ("show_expired", True): _NO_EXPIRY,
    ("latest_only", False): "memledger answers with current memories only; older values "
    "are in a memory's history",
}


class _Mem0Body(StrictBody):
    @model_validator(mode="before")
    @classmethod
    def _supported(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        kept = {}
        for name, value in data.items():
            if value is None and name in UNSUPPORTED:
                continue  # null: as if left out
            if name in UNSUPPORTED and name not in cls.model_fields:
                raise ValueError(f"{name} is not supported here: {UNSUPPORTED[name]}")
            reason = _REFUSED.get((name, value)) if isinstance(value, bool) else None
            if reason is not None:
                raise ValueError(f"{name}={str(value).lower()} is not supported: {reason}")
            kept[name] = value
        return kept


Filters = Annotated[
    dict[str, Json] | None,
    Field(
        description="Whose memories: `user_id`, `agent_id`, `run_id` (equal to a value; "
        '`"*"` for any agent or run), alone or under `AND`. `OR`, `NOT`, operators and '
        "other keys are refused."
    ),
]
Seconds = Annotated[int, Field(ge=0, le=_LAST_SECOND)]
_Option = Annotated[bool | None, Field(description="Accepted; changes nothing.")]


class Mem0AddIn(_Mem0Body):
    messages: Json = Field(
        description='A list of `{"role", "content"}` messages (or one, or a string); '
        "`system` messages are left out."
    )
    user_id: Id | None = None
    agent_id: Id | None = Field(
        default=None,
        description="With a user: who spoke the assistant turns. Alone: the agent's "
        "private namespace.",
    )
    run_id: Id | None = Field(default=None, description="The session the turns belong to.")
    filters: Filters = None
    metadata: dict[str, Json] | None = None
    timestamp: Seconds | None = Field(
        default=None, description="When the turns were said, in Unix seconds (default: now)."
    )
    infer: bool | None = Field(default=None, description="`false` is refused.")
    async_mode: bool | None = Field(default=None, description="`true` is refused.")
    output_format: Literal["v1.1"] | None = None


class Mem0SearchIn(_Mem0Body):
    query: Annotated[str, StringConstraints(min_length=1, max_length=MAX_QUERY)]
    filters: Filters = None
    top_k: Annotated[int, Field(ge=1, le=MAX_K)] = 10
    threshold: Annotated[
        float | None,
        Field(
            ge=0,
            le=1,
            description="Left out: only the memories memledger's recall would hand out "
            "(`relevant`). `0`: the nearest whatever their relevance. Other values are "
            "refused: memledger's scores are not on a 0-1 scale.",
        ),
    ] = None
    rerank: _Option = None
    latest_only: bool | None = Field(default=None, description="`false` is refused.")
    show_expired: bool | None = Field(default=None, description="`true` is refused.")


class Mem0ListIn(_Mem0Body):
    filters: Filters = None
    page: Annotated[int | None, Field(ge=1, le=1_000_000)] = None
    page_size: Annotated[int | None, Field(ge=1, le=MAX_PAGE_SIZE)] = None
    latest_only: bool | None = Field(default=None, description="`false` is refused.")
    show_expired: bool | None = Field(default=None, description="`true` is refused.")


class Mem0UpdateIn(_Mem0Body):
    text: Annotated[str, StringConstraints(min_length=1)] = Field(
        description="What the memory says now: said again as the same user's turn."
    )
    metadata: dict[str, Json] | None = Field(
        default=None, description="The new turn's metadata (default: the old turn's)."
    )
    timestamp: Seconds | None = Field(
        default=None, description="When it was said, in Unix seconds (default: now)."
    )

    @model_validator(mode="before")
    @classmethod
    def _has_text(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("text") is None:
            raise ValueError(
                "an update needs text: a memledger memory is never edited in place; the "
                "new text replaces it as a new memory (metadata alone cannot change)"
            )
        return data


# -- answers ------------------------------------------------------------------------------------


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Mem0Ping(_Out):
    status: Literal["ok"]
    org_id: str = Field(description="The key's tenant: memledger's one isolation boundary.")
    project_id: str = Field(description="The key's tenant again.")
    user_email: None = Field(description="API keys name an actor, not an email.")
    tenant: str
    actor: str


class Mem0Memory(_Out):
    id: str
    memory: str
    user_id: str | None
    agent_id: str | None
    app_id: None
    run_id: str | None = Field(description="The session (also as `session_id`).")
    session_id: str | None
    metadata: dict[str, Json] | None = Field(description="The metadata of the turn it came from.")
    categories: list[str] = Field(description="Its memledger family.")
    created_at: AwareDatetime
    updated_at: AwareDatetime = Field(description="Memories are never edited: `created_at`.")
    expiration_date: str | None = Field(description="When memledger stops holding it.")


class Mem0Found(Mem0Memory):
    score: float = Field(description="memledger's fused score (not bounded to 0-1).")
    relevant: bool = Field(description="Whether memledger's recall would hand it out.")


class Mem0Search(_Out):
    results: list[Mem0Found] = Field(description="Best first.")


class Mem0Updated(Mem0Memory):
    replaces: str = Field(description="The memory the update revoked (reason `updated`).")


class Mem0Page(_Out):
    count: int = Field(description="The memories that match (of the newest 1000).")
    next: str | None
    previous: str | None
    results: list[Mem0Memory]


class _Data(_Out):
    memory: str


class Mem0Event(_Out):
    id: str
    event: Literal["ADD", "UPDATE", "DELETE"]
    memory: str
    data: _Data


class Mem0Added(_Out):
    status: Literal["SUCCEEDED", "PENDING"] = Field(
        description="`PENDING`: some turns wait for a worker to extract them."
    )
    message: str
    event_id: str = Field(description="The last turn's memledger event.")
    event_ids: list[str] = Field(description="Every turn's memledger event, in order.")
    results: list[Mem0Event] = Field(description="What the turns changed (not on a retry).")


class _Message(_Out):
    role: str
    content: str


class Mem0Change(_Out):
    id: str
    memory_id: str = Field(
        description="The record the step is about: this memory, one it replaced, or the "
        "one that replaced it."
    )
    input: list[_Message]
    old_memory: str | None
    new_memory: str | None
    event: Literal["ADD", "UPDATE", "DELETE"]
    user_id: str | None
    agent_id: str | None
    app_id: None
    session_id: str | None
    categories: list[str]
    metadata: dict[str, Json] | None
    created_at: AwareDatetime
    updated_at: AwareDatetime


class Mem0Deleted(_Out):
    message: str


# -- filters ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Mem0Scope:
    """Whose memory a call names, and in which session (``run_id``)."""

    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None


_ENTITIES: Final = ("user_id", "agent_id", "run_id")


def scope_of(filters: Mapping[str, Json] | None, **named: str | None) -> Mem0Scope:
    """The scope ``filters`` name, with ``named`` (an add's top-level ids) beside them:
    equalities, under ``AND`` or not; ``"*"`` for any agent or run. Anything else is
    refused by name."""
    found = {key: value for key, value in named.items() if value is not None}
    for key, value, where in _conditions(filters or {}, "filters"):
        if key not in _ENTITIES:
            why = UNSUPPORTED.get(key, f"filtering by {key} is not offered")
            raise InvalidQueryError(f"{where} is not supported: {why}")
        if isinstance(value, dict):
            raise InvalidQueryError(
                f"{where}: operators ({', '.join(sorted(value))}) are not supported: name one {key}"
            )
        if not isinstance(value, str):
            raise InvalidQueryError(f"{where} must be a string, got {type(value).__name__}")
        if value == "*":
            if key == "user_id":
                raise InvalidQueryError(f"{where}: every user at once is not supported")
            continue  # any agent or run: it narrows nothing
        if found.get(key, value) != value:
            raise InvalidQueryError(f"{where}: {key} is named twice, {found[key]!r} and {value!r}")
        found[key] = value
    return Mem0Scope(**found)


def _conditions(filters: Mapping[str, Json], where: str) -> Iterator[tuple[str, Json, str]]:
    for key, value in filters.items():
        if key == "AND":
            if not isinstance(value, list) or not value:
                raise InvalidQueryError(f"{where}.AND must be a non-empty list of filters")
            for n, part in enumerate(value):
                if not isinstance(part, dict):
                    raise InvalidQueryError(f"{where}.AND[{n}] must be an object")
                yield from _conditions(part, f"{where}.AND[{n}]")
        elif key in ("OR", "NOT"):
            raise InvalidQueryError(
                f"{where}.{key} is not supported: a call reads one memory (AND only)"
            )
        else:
            yield key, value, f"{where}.{key}"


# -- history ------------------------------------------------------------------------------------

Event = Literal["ADD", "UPDATE", "DELETE"]


@dataclass(frozen=True, slots=True)
class Step:
    """One entry of a memory's history as mem0 tells it: ``change`` is memledger's step
    (the record it is about, when), ``old`` and ``new`` the texts before and after."""

    event: Event
    change: MemoryChange
    old: str | None
    new: str | None


def history_steps(changes: Sequence[MemoryChange]) -> list[Step]:
    """memledger's history of a memory (oldest first) in mem0's three events.

    A record written is an ``ADD``, or an ``UPDATE`` from the value it closed in the
    same change (a correction) or from the memory an update revoked just before; the
    past window of the closed value, written in the same change, is part of that
    ``UPDATE``. A value retracted, revoked (not for an update) or erased is a
    ``DELETE``. Repetitions, reviews and compactions change no text: they are left out."""
    steps: list[Step] = []
    replaced: MemoryChange | None = None
    """A revocation made by an update: its new text is the next record written."""
    for _, grouped in groupby(changes, key=lambda c: c.cause):
        group = list(grouped)
        closed = [c.memory for c in group if c.action == "closed" and c.status == "superseded"]
        written = [c for c in group if c.action in ("recorded", "restored")]
        new = [c for c in written if c.memory not in closed]
        for change in group:
            if change in new:
                old = closed[0] if closed else replaced.memory if replaced else None
                steps.append(Step("ADD" if old is None else "UPDATE", change, old, change.memory))
                replaced = None
                continue
            if replaced is not None and change not in written:
                steps.append(Step("DELETE", replaced, replaced.memory, None))
                replaced = None
            if change.action == "closed" and change.status == "retracted":
                steps.append(Step("DELETE", change, change.memory, None))
            elif change.action == "closed" and not new:
                steps.append(Step("UPDATE", change, change.memory, None))
            elif change.action == "revoked" and change.cause.endswith(f": {UPDATED}"):
                replaced = change
            elif change.action in ("revoked", "erased"):
                steps.append(Step("DELETE", change, change.memory, None))
    if replaced is not None:
        steps.append(Step("DELETE", replaced, replaced.memory, None))
    return steps
