"""What the corpus commands print (:mod:`memledger.cli.corpus`): what ``add`` did, the
documents, the chunks a search found."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from memledger.corpus import AddReport, CorpusHit, Document, stale_marker
from memledger.wire import isoformat


def corpus_report(console: Console, report: AddReport, *, tenant: str, path: Path) -> None:
    """What ``corpus add`` did: counts, then the files skipped and why."""
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


def documents(console: Console, found: Sequence[Document], *, tenant: str) -> None:
    if not found:
        console.print(f"no documents in the corpus of tenant {tenant!r}")
        return
    table = Table("path", "title", "kind", "chunks", "last modified", "indexed at")
    for d in found:
        table.add_row(
            Text(d.path),
            Text(d.title),
            Text(d.kind),
            Text(str(d.chunks)),
            Text(isoformat(d.last_modified)),
            Text(isoformat(d.indexed_at)),
        )
    console.print(table)


def corpus_hits(
    console: Console, hits: Sequence[CorpusHit], *, floor: float, now: datetime
) -> None:
    """Chunks found, best first, each with where it is, its confidence and its staleness."""
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
