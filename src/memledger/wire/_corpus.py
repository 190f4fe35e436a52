"""The shared document corpus as JSON: a document (:func:`document_to_dict`), one of
its chunks (:func:`chunk_to_dict`) and a search hit (:func:`hit_to_dict`).

Each names its document by the path the corpus holds (``"path"``, as the CLI shows it)
unless ``named`` gives another key and value (the HTTP API's ``("name", ...)`` for a
document, ``("document", ...)`` for a chunk: the name it shows the document by)."""

from __future__ import annotations

from datetime import datetime

from memledger.corpus import Chunk, CorpusHit, Document, stale_marker
from memledger.wire._json import Fields, JsonObject

__all__ = ["chunk_to_dict", "document_to_dict", "hit_to_dict"]


def _naming(path: str, named: tuple[str, str] | None) -> JsonObject:
    key, value = ("path", path) if named is None else named
    return {key: value}


_DOCUMENT: Fields[Document] = Fields("title kind chunks sha256 last_modified indexed_at")


def document_to_dict(document: Document, *, named: tuple[str, str] | None = None) -> JsonObject:
    """A document as indexed: its title, kind, chunk count, sha256 and times."""
    return {**_naming(document.path, named), **_DOCUMENT(document)}


_CHUNK: Fields[Chunk] = Fields(
    "title section text tokens start end is_table is_code indexed_at last_modified"
)


def chunk_to_dict(chunk: Chunk, *, named: tuple[str, str] | None = None) -> JsonObject:
    """A chunk: its text, where it stands in the document, and the document's times."""
    return {"chunk_id": chunk.chunk_id, **_naming(chunk.path, named), **_CHUNK(chunk)}


def hit_to_dict(
    hit: CorpusHit, *, now: datetime, named: tuple[str, str] | None = None
) -> JsonObject:
    """A search hit: score, confidence, sources, the staleness marker at ``now`` and
    the chunk (its document named as :func:`chunk_to_dict` names it)."""
    return {
        "score": hit.score,
        "confidence": hit.confidence,
        "sources": list(hit.sources),
        "stale": stale_marker(hit.chunk, now=now),
        "chunk": chunk_to_dict(hit.chunk, named=named),
    }
