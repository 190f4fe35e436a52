"""``memledger corpus ...``: the shared document corpus (RAG) of a tenant.

The corpus lives beside the store, in ``<store file>.corpus`` (``--db`` names
the store). ``add`` creates it; ``list``, ``search`` and ``remove`` never do (an
absent corpus holds nothing). Nothing here writes to the memory store.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from memledger.cli import render
from memledger.cli._run import CliError
from memledger.cli.options import AsJson, Db, Tenant, check_store_path, require_tenant, store_url
from memledger.corpus import (
    DEFAULT_FLOOR,
    MAX_CHUNK_TOKENS,
    MAX_K,
    MIN_CHUNK_TOKENS,
    AddReport,
    Chunk,
    Corpus,
    CorpusHit,
    Document,
    check_chunking,
    check_search,
    default_corpus_path,
    stale_marker,
)
from memledger.domain.records import JsonValue, require_id
from memledger.errors import InvalidInputError, InvalidQueryError
from memledger.index.embedders import (
    CachedEmbedder,
    Embedder,
    default_embedder,
    embedder_from_name,
)
from memledger.wire import isoformat

__all__ = ["corpus"]

corpus = typer.Typer(
    help="The shared document corpus (RAG): add, list, search and remove documents.",
    no_args_is_help=True,
)

_EMBEDDERS = ("default", "hashing", "minilm", "minilm-onnx", "none")

EmbedderOption = Annotated[
    str,
    typer.Option(
        "--embedder",
        help="Vectors: default (MiniLM on onnxruntime), minilm-onnx, minilm (the 'minilm'"
        " extra), hashing, or none (lexical only). Chunks made with another embedder are"
        " embedded again on the next search.",
    ),
]


def _embedder(choice: str) -> Embedder | None:
    if choice not in _EMBEDDERS:
        raise CliError(f"--embedder must be one of {', '.join(_EMBEDDERS)}, got {choice!r}")
    if choice == "none":
        return None
    if choice == "default":
        return default_embedder()
    try:
        return CachedEmbedder(embedder_from_name(choice))
    except ImportError as exc:  # an optional extra is missing; its message names it
        raise CliError(f"--embedder {choice}: {exc}") from None


def _path(ctx: typer.Context, db: str | None) -> Path:
    url = store_url(ctx, db)
    check_store_path(url)
    return default_corpus_path(url)


@contextmanager
def _open(path: Path, embedder: str) -> Iterator[Corpus]:
    with Corpus(path, embedder=_embedder(embedder)) as opened:
        yield opened


# -- JSON -------------------------------------------------------------------------------


def chunk_to_dict(chunk: Chunk) -> dict[str, JsonValue]:
    return {
        "chunk_id": chunk.chunk_id,
        "path": chunk.path,
        "title": chunk.title,
        "section": chunk.section,
        "text": chunk.text,
        "tokens": chunk.tokens,
        "start": chunk.start,
        "end": chunk.end,
        "is_table": chunk.is_table,
        "is_code": chunk.is_code,
        "indexed_at": isoformat(chunk.indexed_at),
        "last_modified": isoformat(chunk.last_modified),
    }


def hit_to_dict(hit: CorpusHit, *, now: datetime) -> dict[str, JsonValue]:
    return {
        "score": hit.score,
        "confidence": hit.confidence,
        "sources": list(hit.sources),
        "stale": stale_marker(hit.chunk, now=now),
        "chunk": chunk_to_dict(hit.chunk),
    }


def document_to_dict(document: Document) -> dict[str, JsonValue]:
    return {
        "path": document.path,
        "title": document.title,
        "kind": document.kind,
        "chunks": document.chunks,
        "sha256": document.sha256,
        "last_modified": isoformat(document.last_modified),
        "indexed_at": isoformat(document.indexed_at),
    }


def report_to_dict(report: AddReport, *, tenant: str) -> dict[str, JsonValue]:
    return {
        "tenant": tenant,
        "added": list(report.added),
        "replaced": list(report.replaced),
        "unchanged": list(report.unchanged),
        "skipped": [
            {"path": s.path, "reason": s.reason, "detail": s.detail} for s in report.skipped
        ],
        "chunks": report.chunks,
    }


# -- commands ---------------------------------------------------------------------------


@corpus.command("add")
def add(
    ctx: typer.Context,
    *,
    paths: Annotated[
        list[str],
        typer.Argument(
            metavar="PATH...",
            help="Files (.txt, .md, .markdown, .html, .htm) or directories to walk.",
            show_default=False,
        ),
    ],
    chunk_tokens: Annotated[
        int,
        typer.Option(
            "--chunk-tokens",
            min=MIN_CHUNK_TOKENS,
            max=MAX_CHUNK_TOKENS,
            help="Most tokens in a chunk (a whole table or code block may be more).",
        ),
    ] = 300,
    overlap_tokens: Annotated[
        int,
        typer.Option(
            "--overlap-tokens", min=0, help="Tokens a chunk repeats of the one before it."
        ),
    ] = 40,
    embedder: EmbedderOption = "default",
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Add documents to the tenant's corpus, or refresh them: unchanged files are kept as
    they are, changed ones have their chunks replaced, unusable ones are skipped (with the
    reason). Fails (exit 2) when nothing named could be added."""
    who = require_tenant(ctx, tenant)
    require_id(who, "tenant", InvalidInputError)
    check_chunking(chunk_tokens, overlap_tokens)  # before a model is loaded
    path = _path(ctx, db)
    with _open(path, embedder) as opened:
        if not Console(stderr=True).is_terminal:  # a bar only where someone watches it
            report = opened.add(
                who, paths, chunk_tokens=chunk_tokens, overlap_tokens=overlap_tokens
            )
        else:
            with render.progress_bar("corpus add") as bar:
                task = bar.add_task("corpus add", total=None)

                def progress(done: int, total: int) -> None:
                    bar.update(task, completed=done, total=total)

                report = opened.add(
                    who,
                    paths,
                    chunk_tokens=chunk_tokens,
                    overlap_tokens=overlap_tokens,
                    progress=progress,
                )
    if as_json:
        render.print_json(report_to_dict(report, tenant=who))
    else:
        _show_report(report, tenant=who, path=path)
    if report.skipped and not (report.added or report.replaced or report.unchanged):
        first = report.skipped[0]
        raise CliError(
            f"nothing added: {len(report.skipped)} file(s) skipped, "
            f"first {first.path!r}: {first.reason} ({first.detail})"
        )


def _show_report(report: AddReport, *, tenant: str, path: Path) -> None:
    console = render.make_console()
    console.print(
        f"corpus {str(path)!r}, tenant {tenant!r}: {len(report.added)} added, "
        f"{len(report.replaced)} replaced, {len(report.unchanged)} unchanged, "
        f"{len(report.skipped)} skipped; {report.chunks} chunk(s) written"
    )
    if report.skipped:
        table = Table("skipped", "reason", "detail")
        for item in report.skipped:
            table.add_row(Text(item.path), Text(item.reason), Text(item.detail))
        console.print(table)


@corpus.command("list")
def list_documents(
    ctx: typer.Context,
    *,
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """The tenant's documents, by path."""
    who = require_tenant(ctx, tenant)
    require_id(who, "tenant", InvalidQueryError)
    path = _path(ctx, db)
    documents: list[Document] = []
    if path.exists():
        with _open(path, "none") as opened:
            documents = opened.documents(who)
    if as_json:
        render.print_json([document_to_dict(d) for d in documents])
        return
    console = render.make_console()
    if not documents:
        console.print(f"no documents in the corpus of tenant {who!r}")
        return
    table = Table("path", "title", "kind", "chunks", "last modified", "indexed at")
    for d in documents:
        table.add_row(
            Text(d.path),
            Text(d.title),
            Text(d.kind),
            Text(str(d.chunks)),
            Text(isoformat(d.last_modified)),
            Text(isoformat(d.indexed_at)),
        )
    console.print(table)


@corpus.command("search")
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(metavar="QUERY", help="What to look for, in words.")],
    *,
    k: Annotated[
        int, typer.Option("-k", "--k", min=1, max=MAX_K, help="How many chunks at most.")
    ] = 5,
    floor: Annotated[
        float,
        typer.Option(
            "--floor",
            min=0.0,
            max=1.0,
            help="Least confidence a chunk needs (share of the query's words it holds,"
            " or its cosine with a semantic embedder).",
        ),
    ] = DEFAULT_FLOOR,
    embedder: EmbedderOption = "default",
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """The tenant's chunks most relevant to QUERY, with a staleness marker when old;
    says so when nothing reaches the confidence floor."""
    who = require_tenant(ctx, tenant)
    check_search(query, tenant=who, k=k, floor=floor)  # before a model is loaded
    path = _path(ctx, db)
    hits: list[CorpusHit] = []
    if path.exists():
        with _open(path, embedder) as opened:
            hits = opened.search(query, tenant=who, k=k, floor=floor)
    now = datetime.now(UTC)
    if as_json:
        render.print_json(
            {
                "tenant": who,
                "query": query,
                "floor": floor,
                "found": len(hits),
                "message": None if hits else "no relevant document found",
                "hits": [hit_to_dict(h, now=now) for h in hits],
            }
        )
        return
    console = render.make_console()
    if not hits:
        console.print(f"no relevant document found (confidence floor {floor:g})")
        return
    for n, hit in enumerate(hits, 1):
        chunk = hit.chunk
        where = f"{chunk.title} > {chunk.section}" if chunk.section else chunk.title
        head = Text(f"[{n}] {where}  ({chunk.path})  confidence {hit.confidence:.2f}")
        head.stylize("bold", 0, len(f"[{n}] {where}"))
        console.print(head)
        marker = stale_marker(chunk, now=now)
        if marker:
            console.print(Text(marker, style="yellow"))
        console.print(Text(chunk.text))
        console.print()


@corpus.command("remove")
def remove(
    ctx: typer.Context,
    *,
    path: Annotated[
        str,
        typer.Argument(metavar="PATH", help="A document, or a directory: every document in it."),
    ],
    db: Db = None,
    tenant: Tenant = None,
    as_json: AsJson = False,
) -> None:
    """Remove a document (or every document under a directory) from the tenant's corpus."""
    who = require_tenant(ctx, tenant)
    require_id(who, "tenant", InvalidInputError)
    where = _path(ctx, db)
    removed = 0
    if where.exists():
        with _open(where, "none") as opened:
            removed = opened.remove(who, path)
    if not removed:
        raise CliError(f"no document at {path!r} in the corpus of tenant {who!r}")
    if as_json:
        render.print_json({"tenant": who, "path": path, "removed_chunks": removed})
    else:
        typer.echo(f"removed {removed} chunk(s) of {path!r} from the corpus of tenant {who!r}")
