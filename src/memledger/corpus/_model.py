"""What the corpus hands out: chunks, hits, documents, add reports; staleness; paths."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal, Protocol
from urllib.parse import urlsplit

from memledger.corpus._parse import DocumentKind
from memledger.domain.records import require_aware
from memledger.errors import InvalidInputError

__all__ = [
    "DEFAULT_FLOOR",
    "STALE_AFTER_DAYS",
    "AddReport",
    "Chunk",
    "CorpusHit",
    "Dated",
    "Document",
    "HitSource",
    "SkipReason",
    "Skipped",
    "default_corpus_path",
    "source_mtime",
    "stale_marker",
]

DEFAULT_FLOOR = 0.5
"""The least confidence a hit needs to be returned (see :class:`CorpusHit`)."""

STALE_AFTER_DAYS = 14.0
"""Age of an indexed chunk, in days, from which :func:`stale_marker` flags it."""

HitSource = Literal["lexical", "vector"]

SkipReason = Literal[
    "missing", "unsupported", "unreadable", "not_text", "too_large", "empty", "embedder_failed"
]
"""Why a file was not added: it does not exist; its extension is not .txt, .md,
.markdown, .html or .htm; it cannot be read; it is binary or not UTF-8; it is over
the size limit; it holds no text; the embedder failed on it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Chunk:
    """One retrievable piece of a shared document: ``text`` is ``plain[start:end]`` of
    the document's plain text (:func:`~memledger.corpus.parse_document`).

    ``chunk_id`` is stable: a hash of tenant, path, position and text, so re-adding
    an unchanged file keeps every id. ``section`` is the heading path above the
    chunk (``"Expedited orders > Credit hold"``, ``""`` before the first heading).
    ``indexed_at`` is when the document was (re)indexed, ``last_modified`` the
    file's modification time then. ``is_table``/``is_code``: a whole table or code
    block, kept whole even over the chunk size.
    """

    tenant: str
    chunk_id: str
    path: str
    title: str
    section: str
    text: str
    tokens: int
    start: int
    end: int
    indexed_at: datetime
    last_modified: datetime
    is_table: bool = False
    is_code: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class CorpusHit:
    """A chunk found for a query.

    ``score`` is the raw fused rank score (reciprocal rank fusion of the lexical
    and vector lists, ``sum(1 / (60 + rank))``): it orders hits of one search
    and means nothing across searches. ``confidence`` is absolute, in [0, 1]: the
    share of the query's content words (stop words dropped, lightly stemmed,
    :func:`memledger.domain.gates.content_words`) that the chunk's title,
    section and text hold; with a semantic embedder (any but the spelling-only
    hashing one) the chunk's cosine to the query when that is higher. Hits below
    the search's floor are never returned. ``sources``: which searches found it.
    """

    chunk: Chunk
    score: float
    confidence: float
    sources: tuple[HitSource, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Document:
    """One file of the corpus, as indexed."""

    tenant: str
    path: str
    title: str
    kind: DocumentKind
    last_modified: datetime
    indexed_at: datetime
    chunks: int
    sha256: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Skipped:
    """A file :meth:`~memledger.corpus.Corpus.add` left out; nothing of it was written."""

    path: str
    reason: SkipReason
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AddReport:
    """What one :meth:`~memledger.corpus.Corpus.add` did, file by file (absolute paths).

    ``added``: new documents; ``replaced``: documents whose content (or chunking)
    changed, their chunks replaced in one transaction; ``unchanged``: same content
    and chunking, chunks and ``indexed_at`` kept (a newer modification time alone
    is recorded); ``chunks``: chunks written.
    """

    added: tuple[str, ...] = ()
    replaced: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    chunks: int = 0


class Dated(Protocol):
    """What :func:`stale_marker` reads of a chunk (a :class:`Chunk` has it)."""

    @property
    def path(self) -> str: ...
    @property
    def indexed_at(self) -> datetime: ...
    @property
    def last_modified(self) -> datetime: ...


class _Unset(enum.Enum):
    UNSET = enum.auto()


_MTIME_SLACK = timedelta(milliseconds=1)


def source_mtime(path: str | Path) -> datetime | None:
    """The modification time of the file at ``path`` now (UTC), or ``None`` when there
    is no file there (or it cannot be read)."""
    try:
        return datetime.fromtimestamp(Path(path).stat().st_mtime, tz=UTC)
    except (OSError, ValueError, OverflowError):
        return None


def _age(delta: timedelta) -> str:
    seconds = delta.total_seconds()
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size or unit == "minute":
            count = int(seconds // size)
            return f"{count} {unit}{'' if count == 1 else 's'}"
    raise AssertionError("unreachable")  # pragma: no cover


def stale_marker(
    chunk: Dated,
    *,
    now: datetime,
    after_days: float = STALE_AFTER_DAYS,
    source_modified: datetime | _Unset | None = _Unset.UNSET,
) -> str | None:
    """A warning to put before a retrieved chunk, or ``None`` when it is fresh.

    ``"[POSSIBLY OUTDATED: indexed 14 days ago]"`` once ``now - indexed_at`` is at
    least ``after_days``; ``"[POSSIBLY OUTDATED: source changed after indexing]"``
    when the source file's modification time differs from the one recorded at
    indexing; both facts in one marker when both hold.

    ``source_modified`` is the file's modification time now. Left out, it is read
    from the file system (:func:`source_mtime`) when the path still exists; pass
    ``None`` to skip that check and keep the call pure (or pass a time you read).
    """
    moment = require_aware(now, "now", InvalidInputError)
    if (
        isinstance(after_days, bool)
        or not isinstance(after_days, int | float)
        or not math.isfinite(after_days)
        or after_days < 0
    ):
        raise InvalidInputError(f"after_days must be a number >= 0, got {after_days!r}")
    if isinstance(source_modified, _Unset):
        source_modified = source_mtime(chunk.path)
    age = moment - chunk.indexed_at
    old = age >= timedelta(days=after_days)
    changed = (
        source_modified is not None
        and abs(
            require_aware(source_modified, "source_modified", InvalidInputError)
            - chunk.last_modified
        )
        > _MTIME_SLACK
    )
    if old and changed:
        return f"[POSSIBLY OUTDATED: indexed {_age(age)} ago; source changed after indexing]"
    if old:
        return f"[POSSIBLY OUTDATED: indexed {_age(age)} ago]"
    if changed:
        return "[POSSIBLY OUTDATED: source changed after indexing]"
    return None


def default_corpus_path(store: str | Path | None) -> Path:
    """``<store file>.corpus`` beside a SQLite store, given as a path or a store URL
    (``sqlite:///memledger.db``); ``None`` is the default store, ``./memledger.db``.
    Other stores must be given a corpus path."""
    if store is None:
        return Path("memledger.db.corpus")
    if isinstance(store, Path):
        return Path(f"{store}.corpus")
    parts = urlsplit(store)
    if parts.scheme == "sqlite" and not parts.netloc:
        path = parts.path[1:] if parts.path.startswith("/") else parts.path
    elif parts.scheme in ("", "file") and "://" not in store:
        path = store
    else:
        path = ""
    if not path:
        raise InvalidInputError(
            f"no default corpus path for store {store!r}; pass Corpus(path) yourself"
        )
    return Path(f"{path}.corpus")
