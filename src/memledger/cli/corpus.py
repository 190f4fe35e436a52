"""``memledger corpus ...``: the shared document corpus (RAG) of a tenant.

The corpus lives beside the store, in ``<store file>.corpus`` (``--db`` names
the store). ``add`` creates it; ``list``, ``search`` and ``remove`` never do (an
absent corpus holds nothing). Nothing here writes to the memory store.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from memledger.cli import render
from memledger.cli._command import Call, store_command
from memledger.cli._run import CliError
from memledger.cli.options import CorpusEmbedder, embedder_named, store_url
from memledger.corpus import (
    DEFAULT_FLOOR,
    MAX_CHUNK_TOKENS,
    MAX_K,
    MIN_CHUNK_TOKENS,
    AddReport,
    Corpus,
    CorpusHit,
    Document,
    check_chunking,
    check_search,
    default_corpus_path,
)
from memledger.domain.records import JsonValue, require_id
from memledger.errors import InvalidInputError, InvalidQueryError
from memledger.wire import document_to_dict, hit_to_dict

__all__ = ["corpus"]

corpus = typer.Typer(
    help="The shared document corpus (RAG): add, list, search and remove documents.",
    no_args_is_help=True,
)


def _path(call: Call) -> Path:
    """The corpus beside the store ``--db`` names."""
    return default_corpus_path(store_url(call.ctx, call.db))


def _open(path: Path, embedder: str) -> Corpus:
    return Corpus(path, embedder=embedder_named(embedder))


# -- JSON -------------------------------------------------------------------------------


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
@store_command
def add(
    call: Call,
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
    embedder: CorpusEmbedder = "default",
) -> None:
    """Add documents to the tenant's corpus, or refresh them: unchanged files are kept as
    they are, changed ones have their chunks replaced, unusable ones are skipped (with the
    reason). Fails (exit 2) when nothing named could be added."""
    who = call.tenant
    require_id(who, "tenant", InvalidInputError)
    check_chunking(chunk_tokens, overlap_tokens)  # before a model is loaded
    path = _path(call)
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
    call.show(
        report_to_dict(report, tenant=who), render.corpus_report, report, tenant=who, path=path
    )
    if report.skipped and not (report.added or report.replaced or report.unchanged):
        first = report.skipped[0]
        raise CliError(
            f"nothing added: {len(report.skipped)} file(s) skipped, "
            f"first {first.path!r}: {first.reason} ({first.detail})"
        )


@corpus.command("list")
@store_command
def list_documents(call: Call) -> None:
    """The tenant's documents, by path."""
    who = call.tenant
    require_id(who, "tenant", InvalidQueryError)
    path = _path(call)
    documents: list[Document] = []
    if path.exists():
        with _open(path, "none") as opened:
            documents = opened.documents(who)
    call.show([document_to_dict(d) for d in documents], render.documents, documents, tenant=who)


@corpus.command("search")
@store_command
def search(
    call: Call,
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
    embedder: CorpusEmbedder = "default",
) -> None:
    """The tenant's chunks most relevant to QUERY, with a staleness marker when old;
    says so when nothing reaches the confidence floor."""
    who = call.tenant
    check_search(query, tenant=who, k=k, floor=floor)  # before a model is loaded
    path = _path(call)
    hits: list[CorpusHit] = []
    if path.exists():
        with _open(path, embedder) as opened:
            hits = opened.search(query, tenant=who, k=k, floor=floor)
    now = datetime.now(UTC)
    found: dict[str, JsonValue] = {
        "tenant": who,
        "query": query,
        "floor": floor,
        "found": len(hits),
        "message": None if hits else "no relevant document found",
        "hits": [hit_to_dict(h, now=now) for h in hits],
    }
    call.show(found, render.corpus_hits, hits, floor=floor, now=now)


@corpus.command("remove")
@store_command
def remove(
    call: Call,
    *,
    path: Annotated[
        str,
        typer.Argument(metavar="PATH", help="A document, or a directory: every document in it."),
    ],
) -> None:
    """Remove a document (or every document under a directory) from the tenant's corpus."""
    who = call.tenant
    require_id(who, "tenant", InvalidInputError)
    where = _path(call)
    removed = 0
    if where.exists():
        with _open(where, "none") as opened:
            removed = opened.remove(who, path)
    if not removed:
        raise CliError(f"no document at {path!r} in the corpus of tenant {who!r}")
    call.say(
        {"tenant": who, "path": path, "removed_chunks": removed},
        f"removed {removed} chunk(s) of {path!r} from the corpus of tenant {who!r}",
    )
