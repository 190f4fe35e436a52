"""Consistency tokens at the edge: written by every write, honoured by every read.

A write answers its receipt's revision tokens in JSON (``revisions``) and as one
string in the ``Memledger-Consistency`` header
(:class:`~memledger.wire_models.ConsistencyToken`:
``user-42/delivery_preference@3,user-42/home_city@1``). A read given the token (in
that header, or as ``consistency`` in its JSON body; both are merged) checks each
floor that concerns it against the canonical store (:meth:`Memory.families`) before
answering, and passes ``min_revision`` on where :class:`Memory` takes one, so the
read never answers below the token: a store that has not reached a floor refuses
with the ``revision_not_met`` problem (409, ``Retry-After: 1``) rather than answer
stale. Which floors concern a read: those of its subject (those of its family too,
for a family's views); for a read across the tenant (recall without a subject), all.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any

from fastapi import Header, Response

from memledger.domain.records import FamilyRevision
from memledger.errors import RevisionNotMetError
from memledger.memory import Memory
from memledger.store import floors
from memledger.wire_models import CONSISTENCY_HEADER, ConsistencyToken

__all__ = [
    "CONSISTENCY_HEADER",
    "Consistency",
    "check_floors",
    "read_token",
    "token_response",
    "write_token",
]

TOKEN_CHARS = 16_384
"""The longest ``Memledger-Consistency`` header a read takes (longer: 422)."""

Consistency = Annotated[
    str | None,
    Header(
        alias=CONSISTENCY_HEADER,
        description="A write's consistency token (its `Memledger-Consistency` header): "
        "the read does not answer below it, and refuses with `revision_not_met` (409) "
        "where this server has not reached it.",
        max_length=TOKEN_CHARS,
    ),
]


def token_response(status: int = 200) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses=`` entry of a write's answer: its token header."""
    return {
        status: {
            "headers": {
                CONSISTENCY_HEADER: {
                    "description": "The revision tokens of this write, for a later read "
                    "(absent when it changed no family).",
                    "schema": {"type": "string"},
                }
            }
        }
    }


def read_token(*given: str | None) -> ConsistencyToken | None:
    """The token of the header and the body's ``consistency`` field, merged; ``None``
    when neither is given. A malformed one is an ``invalid_query`` problem."""
    token: ConsistencyToken | None = None
    for text in given:
        if text is None:
            continue
        parsed = ConsistencyToken.parse(text)
        token = parsed if token is None else token.merge(parsed)
    return token


def check_floors(
    memory: Memory,
    token: ConsistencyToken | None,
    *,
    tenant: str,
    subject: str | None,
    family: str | None = None,
) -> int | None:
    """Refuse (:class:`RevisionNotMetError`) unless the store holds every floor of
    ``token`` that concerns a read of ``subject`` (and ``family``; ``subject=None``: the
    whole tenant). Returns the ``min_revision`` to pass on: the family's floor for a
    family's views; the lowest floor of the subject for recall (each was just checked);
    ``None`` when no floor concerns the read."""
    if token is None:
        return None
    wanted: dict[str, dict[str, int]] = {}
    for (s, f), revision in token.floors.items():
        if (subject is None or s == subject) and (family is None or f == family):
            wanted.setdefault(s, {})[f] = revision
    # every later read of this request is served only by a store copy holding these
    # (a read replica behind them is passed over: memledger.store.floors)
    floors.require({(tenant, s, f): r for s, held in wanted.items() for f, r in held.items()})
    for s, subject_floors in sorted(wanted.items()):
        held = {slot.family: slot.revision for slot in memory.families(s, tenant=tenant)}
        for f, revision in sorted(subject_floors.items()):
            if held.get(f, 0) < revision:
                raise RevisionNotMetError(
                    f"holds revision {held.get(f, 0)} of {s!r}/{f!r}, below the token's {revision}"
                )
    if subject is None or subject not in wanted:
        return None
    return min(wanted[subject].values())


def write_token(response: Response, revisions: Iterable[FamilyRevision]) -> ConsistencyToken:
    """Set the header of a write's response to its revisions' token (none: no header)."""
    token = ConsistencyToken.of(revisions)
    if token:
        response.headers[CONSISTENCY_HEADER] = str(token)
    return token
