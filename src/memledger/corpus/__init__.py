"""The shared document corpus (RAG): files a tenant's agents may consult, chunked and indexed.

Corpus documents are shared by every subject of a tenant and are never memories
or procedures: they live in a file of their own (``<store file>.corpus``,
:func:`default_corpus_path`), and nothing here writes to the memory store.

* :class:`Corpus` adds text, Markdown and HTML files (one transaction per file;
  unchanged files are not rewritten; unusable files are skipped with a reason),
  removes them, lists them, and searches one tenant's chunks (lexical BM25 and
  optional vectors, fused), returning only hits at or above a confidence floor:
  an empty list means nothing relevant was found.
* :func:`chunk_document` (pure): paragraphs packed per section up to a token
  size, with overlap; tables and code blocks kept whole.
* :func:`stale_marker`: ``"[POSSIBLY OUTDATED: indexed 14 days ago]"`` for an old
  chunk, or when its source file changed after indexing.
* :meth:`Corpus.entities`: titles and headings, for routing questions that name
  them to the corpus.

Example::

    with Corpus(default_corpus_path("sqlite:///memledger.db")) as corpus:
        corpus.add("acme", ["docs/"])
        hits = corpus.search("credit hold on expedited orders", tenant="acme")
"""

from memledger.corpus._chunking import (
    MAX_CHUNK_TOKENS,
    MIN_CHUNK_TOKENS,
    Piece,
    check_chunking,
    chunk_document,
    chunk_parsed,
)
from memledger.corpus._corpus import Corpus
from memledger.corpus._files import KINDS, MAX_DOCUMENT_BYTES
from memledger.corpus._model import (
    DEFAULT_FLOOR,
    STALE_AFTER_DAYS,
    AddReport,
    Chunk,
    CorpusHit,
    Dated,
    Document,
    HitSource,
    Skipped,
    SkipReason,
    default_corpus_path,
    source_mtime,
    stale_marker,
)
from memledger.corpus._parse import Block, BlockKind, DocumentKind, ParsedDocument, parse_document
from memledger.corpus._search import MAX_K, MAX_QUERY, check_search

__all__ = [
    "DEFAULT_FLOOR",
    "KINDS",
    "MAX_CHUNK_TOKENS",
    "MAX_DOCUMENT_BYTES",
    "MAX_K",
    "MAX_QUERY",
    "MIN_CHUNK_TOKENS",
    "STALE_AFTER_DAYS",
    "AddReport",
    "Block",
    "BlockKind",
    "Chunk",
    "Corpus",
    "CorpusHit",
    "Dated",
    "Document",
    "DocumentKind",
    "HitSource",
    "ParsedDocument",
    "Piece",
    "SkipReason",
    "Skipped",
    "check_chunking",
    "check_search",
    "chunk_document",
    "chunk_parsed",
    "default_corpus_path",
    "parse_document",
    "source_mtime",
    "stale_marker",
]
