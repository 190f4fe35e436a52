"""The tenant's shared corpus on the wire: a :class:`Document`, what adding one did
(:class:`DocumentAdded`) and a :class:`SearchResult` (its hits and their chunks)."""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime

from memledger.corpus import DocumentKind, HitSource, SkipReason
from memledger.wire_models._base import WireModel

__all__ = ["Document", "DocumentAdded", "SearchResult"]


class Document(WireModel):
    """A document of the tenant's shared corpus (``name``: as it was added)."""

    name: str
    title: str
    kind: DocumentKind
    chunks: int
    sha256: str
    last_modified: AwareDatetime
    indexed_at: AwareDatetime


class DocumentAdded(WireModel):
    name: str
    outcome: Literal["added", "replaced", "unchanged", "skipped"]
    chunks: int
    skipped: SkipReason | None
    detail: str | None


class _Chunk(WireModel):
    chunk_id: str
    document: str
    title: str
    section: str
    text: str
    tokens: int
    start: int
    end: int
    is_table: bool
    is_code: bool
    indexed_at: AwareDatetime
    last_modified: AwareDatetime


class _Hit(WireModel):
    score: float
    confidence: float
    sources: list[HitSource]
    stale: str | None
    chunk: _Chunk


class SearchResult(WireModel):
    query: str
    floor: float
    found: int
    message: str | None
    hits: list[_Hit]
