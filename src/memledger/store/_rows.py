"""How the SQL stores (SQLite and PostgreSQL) lay domain values out in rows: record
columns, times as fixed-width text, grants as ``[family, scope]`` pairs. Shared by the
unit of work."""

from __future__ import annotations

import json
import time
from datetime import datetime
from functools import lru_cache
from typing import Any

from memledger.domain.records import Grant, MemoryRecord, format_time, parse_time
from memledger.errors import InvalidEventError
from memledger.store import codec


def t(value: datetime | None) -> str | None:
    return None if value is None else format_time(value)


def pt(value: str | None) -> datetime | None:
    return None if value is None else parse_time(value)


@lru_cache(maxsize=1024)
def grants(text: str) -> frozenset[Grant]:
    """Grants as stored: ``[family, scope]`` pairs, or (rows written before schema 3)
    ``"family:scope"`` text. Old text that no valid grant writes (an empty family or
    scope, a family with a colon) granted nothing on the path that stored it, so it
    is read as granting nothing, never widened."""
    found: set[Grant] = set()
    for item in json.loads(text):
        if isinstance(item, list):
            family, scope = item
            found.add(Grant(family=family, scope=scope))
            continue
        try:
            found.add(Grant.parse(item))
        except InvalidEventError:
            continue
    return frozenset(found)


def grants_json(grants: frozenset[Grant]) -> str:
    """Grants as stored: sorted ``[family, scope]`` pairs, nothing joined or split."""
    return codec.dumps(sorted([g.family, g.scope] for g in grants))


RECORD_COLUMNS = (
    "tenant, memory_id, subject, family, scope, kind, proposed_kind, claim, value, status,"
    " source_event_id, source_actor_id, source_channel, source_identity_authenticated,"
    " scope_authorized, claim_faithful_to_source, operational_setting_confirmed, recorded_at,"
    " superseded_at, closed_by, valid_from, valid_until, revision, generation, confidence,"
    " grounding, extractor, supersedes, exclusion, mentions, trust, expires_at"
)


def record_row(r: MemoryRecord) -> tuple[Any, ...]:
    return (
        r.tenant,
        r.memory_id,
        r.subject,
        r.family,
        r.scope,
        r.kind,
        r.proposed_kind,
        r.claim,
        codec.dumps(r.value),
        r.status,
        r.source_event_id,
        r.source_actor_id,
        r.source_channel,
        int(r.source_identity_authenticated),
        int(r.scope_authorized),
        int(r.claim_faithful_to_source),
        int(r.operational_setting_confirmed),
        t(r.recorded_at),
        t(r.superseded_at),
        r.closed_by,
        t(r.valid_from),
        t(r.valid_until),
        r.revision,
        r.generation,
        r.confidence,
        r.grounding,
        codec.extractor_to_json(r.extractor),
        r.supersedes,
        r.exclusion,
        r.mentions,
        r.trust,
        t(r.expires_at),
    )


RECORD_CACHE = 4096
"""Decoded record rows kept per process (least recently used out past it)."""
CACHED_CHARS = 4096
"""A row whose claim and value together run past this many characters is decoded
each time, never kept: the cache stays a few megabytes however long the turns."""
KEPT_S = 60.0
"""Seconds a decoded row is kept at most: the cache is emptied that often, so a
record erased through another process leaves this one's memory within it too."""
_emptied = [time.monotonic()]


def record(row: tuple[Any, ...]) -> MemoryRecord:
    """The record a row of :data:`RECORD_COLUMNS` holds. Decoding is a pure function of
    the row, and a record is frozen, so a row read again (the same values in every
    column) is served from a bounded cache: a closed window, a revocation, a new
    revision or mention count is another row, decoded afresh. (A record's ``value`` is
    shared by the reads of one row: no reader changes it.)"""
    if len(row[7]) + len(row[8]) > CACHED_CHARS:
        return _decode(row)
    if time.monotonic() - _emptied[0] > KEPT_S:
        forget()
    return _cached(row)


def forget() -> None:
    """Drops every decoded row: erased memories do not stay in this process."""
    _cached.cache_clear()
    _emptied[0] = time.monotonic()


def _decode(row: tuple[Any, ...]) -> MemoryRecord:
    (
        tenant,
        memory_id,
        subject,
        family,
        scope,
        kind,
        proposed_kind,
        claim,
        value,
        status,
        event_id,
        actor_id,
        channel,
        authenticated,
        authorized,
        faithful,
        confirmed,
        recorded_at,
        superseded_at,
        closed_by,
        valid_from,
        valid_until,
        revision,
        generation,
        confidence,
        grounding,
        extractor,
        supersedes,
        exclusion,
        mentions,
        trust,
        expires_at,
    ) = row
    recorded = parse_time(recorded_at)
    start = parse_time(valid_from)
    return MemoryRecord(
        tenant=tenant,
        memory_id=memory_id,
        subject=subject,
        family=family,
        kind=kind,
        proposed_kind=proposed_kind,
        claim=claim,
        value=codec.loads_json(value),
        scope=scope,
        status=status,
        source_event_id=event_id,
        source_actor_id=actor_id,
        source_channel=channel,
        source_identity_authenticated=bool(authenticated),
        scope_authorized=bool(authorized),
        claim_faithful_to_source=bool(faithful),
        operational_setting_confirmed=bool(confirmed),
        recorded_at=recorded,
        superseded_at=pt(superseded_at),
        closed_by=closed_by,
        valid_from=start,
        valid_until=pt(valid_until),
        revision=revision,
        generation=generation,
        confidence=confidence,
        grounding=grounding,
        extractor=codec.extractor_from_json(extractor),
        supersedes=supersedes,
        exclusion=exclusion,
        mentions=mentions,
        trust=trust,
        expires_at=pt(expires_at),
    )


_cached = lru_cache(maxsize=RECORD_CACHE)(_decode)
