"""What both index backends do alike to stay caught up with the outbox, written once.

Each backend (:mod:`memledger.index.derived` for SQLite, :mod:`memledger.index.postgres`)
builds its maintenance on :class:`Maintenance`, which holds the loops and leaves the
storage to the backend:

* :meth:`Maintenance.sync`: outbox rows after the cursor in batches (:func:`read_outbox`
  reads one with its records), each embedded and then written in one transaction of
  the backend's (a :class:`Batch`), which skips what another handle or a tenant's sync
  applied and moves the cursors (:meth:`Maintenance._write`); then the vectors missing
  since the embedder failed (:meth:`Maintenance._backfill`); after the indexer's
  syncs (not a read's catch-up) the lexical index tidied
  (:meth:`Maintenance._merge_segments`);
* :meth:`Maintenance.rebuild` and :meth:`Maintenance.rebuild_tenant`: everything, or one
  tenant's entries, dropped and replayed from the outbox, then compacted whole;
* :meth:`Maintenance.lag` and :meth:`Maintenance.status`: how far the index has come;
* :meth:`Maintenance._embed`: vectors for documents, or none (and the index marked
  degraded) while the embedder fails.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol, TypeAlias

import numpy as np
import numpy.typing as npt

from memledger.domain.records import MemoryRecord
from memledger.errors import EmbedderError
from memledger.index._base import Embedder
from memledger.index._common import IndexStatus, Progress
from memledger.index.catchup import pending
from memledger.index.lexical import indexed
from memledger.index.passages import Document, documents
from memledger.ports import OutboxEntry, Store

__all__ = ["Batch", "Embedded", "Maintenance", "Records", "Vector", "read_outbox"]

Vector: TypeAlias = npt.NDArray[np.float32]
"""One document's vector."""
Records: TypeAlias = dict[tuple[str, str], MemoryRecord]
"""The records a batch of outbox rows names, by ``(tenant, memory id)``; only those
that have an entry (:func:`~memledger.index.lexical.indexed`)."""
Embedded: TypeAlias = dict[tuple[str, str], list[tuple[Document, Vector | None]]]
"""Each record's documents with their vectors (``None`` while the embedder fails), by
``(tenant, memory id)``."""


def read_outbox(
    store: Store, after: int, *, limit: int, tenant: str | None, until: int | None = None
) -> tuple[list[OutboxEntry], Records]:
    """Up to ``limit`` outbox rows after ``after`` (of ``tenant`` only, when given; none
    past ``until``) and the records their upserts name, read in one unit."""
    with store.read() as unit:
        rows = list(unit.outbox_after(after, limit=limit, tenant=tenant))
        if until is not None:
            rows = [row for row in rows if row.seq <= until]
        by_tenant: dict[str, list[str]] = {}
        for row in rows:
            if row.op == "upsert":
                by_tenant.setdefault(row.tenant, []).append(row.memory_id)
        records = {
            (t, memory_id): record
            for t, ids in by_tenant.items()
            for memory_id, record in unit.get_records(t, ids).items()
            if indexed(record)
        }
    return rows, records


class Batch(Protocol):
    """One transaction of a backend's feed, at the next stamp (recorded at commit, so
    other handles see what changed)."""

    def cursors(self) -> tuple[int, dict[str, int]]:
        """The global cursor and each tenant's own, as of this transaction."""
        ...

    def apply(self, rows: Sequence[OutboxEntry], records: Records, docs: Embedded) -> None:
        """Apply ``rows`` in outbox order: an upsert indexes its record's documents
        unless a later revision is indexed, a delete takes the entries out."""
        ...

    def advance(self, seq: int, *, tenant: str | None) -> None:
        """Move the global cursor to ``seq`` (dropping the tenants' cursors it reached),
        or ``tenant``'s own."""
        ...

    def fill_vectors(self, entries: Sequence[tuple[str, int]], vectors: Sequence[Vector]) -> None:
        """Store a vector for each ``(tenant, id)`` entry stored without one."""
        ...


class Maintenance(ABC):
    """The feed, rebuild and progress of an index, over the primitives its backend
    gives (the abstract methods)."""

    embedder: Embedder | None

    # -- what a backend gives -------------------------------------------------------------

    @property
    @abstractmethod
    def cursor(self) -> int:
        """The outbox sequence up to which every tenant's rows are applied."""

    @abstractmethod
    def cursor_of(self, tenant: str) -> int:
        """The outbox sequence up to which ``tenant``'s rows are applied."""

    @property
    @abstractmethod
    def degraded(self) -> str | None:
        """Why some entries were stored without a vector, or ``None``."""

    @abstractmethod
    def _cursors(self) -> tuple[int, dict[str, int]]:
        """The global cursor and each tenant's own."""

    @abstractmethod
    def _tally(self) -> tuple[int, int, int, str | None]:
        """The global cursor, the entries, those with a vector, and :attr:`degraded`."""

    @abstractmethod
    def _batch(self) -> AbstractContextManager[Batch]:
        """A transaction of the feed (committed when the block ends without error)."""

    @abstractmethod
    def _reset(self) -> None:
        """Drop every entry and cursor and lay the tables out again."""

    @abstractmethod
    def _forget(self, tenant: str) -> int:
        """Drop ``tenant``'s entries and move the epoch; the cursor its syncs had reached."""

    @abstractmethod
    def _build_anns(self) -> None:
        """Build the approximate index of every tenant past the threshold."""

    @abstractmethod
    def _note_degraded(self, reason: str) -> None:
        """Record why entries are being stored without vectors."""

    @abstractmethod
    def _unvectored(self, limit: int) -> list[tuple[str, int, str]]:
        """Up to ``limit`` entries without a vector, as ``(tenant, id, text)``."""

    @abstractmethod
    def _clear_degraded(self) -> None:
        """Record that every entry has a vector again."""

    def _synced(self, tenant: str | None) -> None:
        """What a backend does after each sync (``tenant``: the tenant synced, or all)."""
        del tenant

    def _merge_segments(self) -> None:
        """What a backend does to keep its lexical index quick to search after a sync of
        the indexer, in bounded steps (SQLite: merge the FTS5 segments the writes left;
        a GIN index has none)."""
        return None

    def _compact_segments(self, tenant: str | None) -> None:
        """Likewise after a rebuild of everything (``None``) or of ``tenant``, whole."""
        del tenant

    # -- progress -------------------------------------------------------------------------

    def lag(self, store: Store, *, tenant: str | None = None) -> int:
        """Outbox rows the index has not applied yet (0: caught up): of every tenant, or
        of ``tenant`` only (what its reads are behind by)."""
        if tenant is not None:
            with store.read() as unit:
                return unit.outbox_pending(tenant, after=self.cursor_of(tenant))
        cursor, ahead = self._cursors()
        with store.read() as unit:
            return pending(unit, cursor=cursor, ahead=ahead)

    def status(self) -> IndexStatus:
        cursor, entries, vectors, degraded = self._tally()
        return IndexStatus(
            cursor=cursor,
            entries=entries,
            vectors=vectors,
            embedder=None if self.embedder is None else self.embedder.name,
            degraded=degraded,
        )

    # -- feeding --------------------------------------------------------------------------

    def sync(
        self,
        store: Store,
        *,
        tenant: str | None = None,
        batch: int = 500,
        limit: int | None = None,
        deadline: float | None = None,
        progress: Progress | None = None,
        merge: bool = True,
    ) -> int:
        """Apply outbox rows after the cursor (all, or ``limit``, in batches of ``batch``,
        none after the first begun once :func:`time.monotonic` reaches ``deadline``);
        returns how many. With ``merge`` (the indexer's syncs) the backend then tidies
        its lexical index in bounded steps (:meth:`_merge_segments`); a read's catch-up
        leaves that to the indexer.

        With ``tenant`` only that tenant's rows are applied (what a recall needs: its
        work never grows with another tenant's writes) and the tenant's own cursor
        moves; a later sync of every tenant skips the rows a tenant's sync applied.
        Rows another handle applied meanwhile are skipped (checked inside the write
        transaction), so an older row is never applied after a newer one.
        """
        applied = 0
        total = 0
        if progress is not None:  # (a recall's sync asks for no progress: fewer round trips)
            total = self.lag(store, tenant=tenant)
            if limit is not None:
                total = min(total, limit)
        while (limit is None or applied < limit) and (
            deadline is None or applied == 0 or time.monotonic() < deadline
        ):
            size = batch if limit is None else min(batch, limit - applied)
            start = self.cursor if tenant is None else self.cursor_of(tenant)
            rows, records = read_outbox(store, start, limit=size, tenant=tenant)
            if not rows:
                break
            self._write(rows, records, self._embed_records(records), tenant=tenant)
            applied += len(rows)
            if progress is not None:
                progress(min(applied, max(total, applied)), max(total, applied))
        self._backfill(batch)
        self._synced(tenant)
        if merge:
            self._merge_segments()
        return applied

    def _write(
        self,
        rows: Sequence[OutboxEntry],
        records: Records,
        docs: Embedded,
        *,
        tenant: str | None,
    ) -> None:
        """One batch of a sync in one transaction: the rows not applied yet (by a tenant's
        sync or another handle), then the cursor moved past them all."""
        with self._batch() as batch:
            done, ahead = batch.cursors()
            fresh = [row for row in rows if row.seq > max(done, ahead.get(row.tenant, 0))]
            batch.apply(fresh, records, docs)
            last = rows[-1].seq
            if tenant is None:
                batch.advance(max(done, last), tenant=None)
            elif last > max(done, ahead.get(tenant, 0)):
                batch.advance(last, tenant=tenant)

    def rebuild(self, store: Store, *, progress: Progress | None = None) -> int:
        """Drop everything and replay the whole outbox; then build the approximate index
        of every tenant past the threshold."""
        self._reset()
        applied = self.sync(store, progress=progress, merge=False)
        self._compact_segments(None)
        self._build_anns()
        return applied

    def rebuild_tenant(
        self, store: Store, tenant: str, *, batch: int = 500, progress: Progress | None = None
    ) -> int:
        """Drop ``tenant``'s entries and rebuild them from its outbox rows; every other
        tenant's stay as they are. Returns the rows applied. The epoch moves, as in
        :meth:`rebuild`, so no handle keeps vectors or graphs from before."""
        reached = self._forget(tenant)
        total = self.lag(store, tenant=tenant) + reached  # an upper bound, for the bar
        applied, after = 0, 0
        while True:
            rows, records = read_outbox(store, after, limit=batch, tenant=tenant, until=reached)
            if not rows:
                break
            docs = self._embed_records(records)
            with self._batch() as writing:
                writing.apply(rows, records, docs)  # in outbox order, as the syncs did
            applied += len(rows)
            after = rows[-1].seq
            if progress is not None:
                progress(applied, max(total, applied))
        applied += self.sync(store, tenant=tenant, progress=None, merge=False)
        self._compact_segments(tenant)
        return applied

    # -- vectors --------------------------------------------------------------------------

    def _embed_records(self, records: Records) -> Embedded:
        """Each record's documents (one, or a long turn's passages,
        :func:`~memledger.index.passages.documents`) with their vectors, embedded in
        one call."""
        docs = {key: documents(record) for key, record in records.items()}
        vectors = iter(self._embed([d.text for mine in docs.values() for d in mine]))
        return {key: [(d, next(vectors)) for d in mine] for key, mine in docs.items()}

    def _embed(self, texts: Sequence[str]) -> list[Vector | None]:
        """A vector for each text; none at all when there is no embedder, or when it
        fails (recorded as :attr:`degraded`, filled in later by :meth:`_backfill`)."""
        if self.embedder is None or not texts:
            return [None] * len(texts)
        try:
            matrix = self.embedder.embed(list(texts))
        except EmbedderError as exc:
            self._note_degraded(f"{exc.reason}: {exc}")
            return [None] * len(texts)
        return [row.astype(np.float32) for row in matrix]

    def _backfill(self, batch: int) -> None:
        """Give vectors to entries stored without one while the embedder was failing."""
        if self.embedder is None or self.degraded is None:
            return
        while True:
            missing = self._unvectored(batch)
            if not missing:
                self._clear_degraded()
                return
            vectors = self._embed([text for _, _, text in missing])
            if vectors[0] is None:
                return  # still failing; recorded as degraded
            with self._batch() as writing:
                writing.fill_vectors(
                    [(tenant, entry_id) for tenant, entry_id, _ in missing],
                    [v for v in vectors if v is not None],
                )
