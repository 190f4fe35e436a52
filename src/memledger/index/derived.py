"""The derived index: lexical (SQLite FTS5, BM25) and vectors, in one file of its own.

Derived state, never the truth. It is fed from the canonical store's outbox
(tailed by sequence, the cursor kept in the index file), may lag
(:meth:`DerivedIndex.lag`), and can be dropped and rebuilt at any time
(:meth:`DerivedIndex.rebuild`, ``memledger reindex``). Every entry carries
tenant, subject, family, kind, memory id, revision and generation, so the read
path can recheck each hit against the canonical store, and for episodes the
speaker, the thread and the time, so recall can match people and read a hit's
neighbouring turns. A thread is a session within one subject: two subjects
never share one, so no window or neighbour crosses subjects.

Feeding is per tenant when asked (a recall syncs a bounded part of its own
tenant's rows only, :mod:`memledger.index.catchup`, moving that tenant's cursor
ahead of the global one; a sync of every tenant skips the rows a tenant's sync
applied, checked inside its write transaction, and :meth:`DerivedIndex.lag` of
every tenant counts them as applied).

Lexical: each tenant has its own FTS5 tables (BM25 weighs terms by corpus
statistics; a shared table would let one tenant's documents change another's
scores): one of each entry's words, with a token of its subject so that a
subject filter is part of the match, and one of windows, a turn with the
:data:`WINDOW_BEFORE` turns before and :data:`WINDOW_AFTER` after it in its
thread, rewritten whenever a turn comes or goes (a separate table because
FTS5's BM25 normalises by the length of all columns; a neighbour lends only
its first :data:`WINDOW_NEIGHBOUR_WORDS` words). Queries drop stop words
and match any remaining term. A subject-scoped search scores with the subject's
own BM25 statistics (:mod:`memledger.index._fts`), so one subject's words never
move another's scores.

Vectors: one float32 row per entry, stored next to the entry and searched
exactly over the subject's (or the tenant's) rows. Each tenant's rows are held
in memory, with what a hit reports of each entry (so a vector search reads no
table), and brought up to date from what changed since they were read
(entries carry the stamp of their last change, removals are recorded in
``removed``, a rebuild starts a new epoch). Once ``prune_after`` removals have
piled up, a sync deletes the records of them and notes the stamp it pruned at;
rows held in memory from before that stamp are read again whole, since the
removals they would have needed are gone. Exact search keeps tenants apart by
construction and costs about 9 ms per 100k x 384 rows on two cores
(``../shared/FINDINGS.md``); ``memledger bench recall`` measures it.

A tenant-wide search (no ``subjects``) of a tenant with at least
``ann_threshold`` live rows (:data:`~memledger.index._ann.ANN_THRESHOLD`,
20,000, by default) goes through an approximate index instead
(:mod:`memledger.index._ann`: usearch HNSW, the ``ann`` extra), one per tenant
in ``<index>.ann/``: loaded or built on the first such search (a build takes
seconds to minutes) or by :meth:`DerivedIndex.rebuild`, kept up to date with the rows on each
:meth:`DerivedIndex.sync` and search, saved by ``sync`` (and ``close``) once
enough changed, deleted whenever the index is reset. Its candidates are ranked
with their exact cosines and only live rows are returned. Subject-scoped
searches are always exact. Without usearch, or when the graph fails, searches
stay exact; :attr:`DerivedIndex.vector_searches` counts which path served. When
the embedder fails while feeding, entries are stored without vectors (lexical
only, :attr:`IndexStatus.degraded`) and filled in by a later sync once the
embedder works again.

A file written by another schema or another embedder is reset and refilled on
open: it is derived, so nothing is lost.

The parts, each a module a reader looks in for one thing:

* :mod:`memledger.index._sqlite_base`: opening the file, its tables and their
  version, its state (cursors, stamp, epoch) and transactions;
* :mod:`memledger.index._sqlite_lexical`: :meth:`DerivedIndex.search` and the FTS5
  tables and windows (the queries: :mod:`memledger.index._fts`);
* :mod:`memledger.index._sqlite_vectors`: :meth:`DerivedIndex.search_vectors`, the
  vectors held in memory and the approximate indexes;
* :mod:`memledger.index._sqlite_maintenance`: the writing of entries from the
  outbox, pruning, resets for a rebuild and :meth:`DerivedIndex.purge`, under the
  loops both backends share (:mod:`memledger.index._maintenance`:
  :meth:`DerivedIndex.sync`, :meth:`DerivedIndex.rebuild`,
  :meth:`DerivedIndex.rebuild_tenant`, :meth:`DerivedIndex.lag`,
  :meth:`DerivedIndex.status`);
* this module: :class:`DerivedIndex` with what a read asks besides a search
  (standing instructions, names, speakers, neighbouring turns, a glance), and
  :func:`default_index_path`.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from memledger._files import private_folder
from memledger.errors import InvalidInputError
from memledger.index._ann import ANN_THRESHOLD, AnnStatus
from memledger.index._base import Hit
from memledger.index._common import (
    WINDOW_AFTER,
    WINDOW_BEFORE,
    Glance,
    IndexStatus,
    Names,
    Progress,
    VectorPath,
    neighbour_offsets,
)
from memledger.index._names import KnownNames
from memledger.index._sqlite_maintenance import SqliteMaintenance
from memledger.ports import Store

__all__ = [
    "ANN_THRESHOLD",
    "WINDOW_AFTER",
    "WINDOW_BEFORE",
    "AnnStatus",
    "DerivedIndex",
    "Hit",
    "IndexStatus",
    "Progress",
    "VectorPath",
    "default_index_path",
]

_MOVED = {"open_index": "memledger.index.backends", "Index": "memledger.index.backends"}


def __getattr__(name: str) -> object:
    """Names that moved to :mod:`memledger.index.backends`, still found here for one
    release with a ``DeprecationWarning``. Looked up by name at run time only: this
    module builds on nothing that picks between the backends."""
    if name in _MOVED:
        warnings.warn(
            f"memledger.index.derived.{name} moved to {_MOVED[name]}.{name}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def default_index_path(store: Store) -> Path:
    """``<store file>.index`` beside a SQLite store. For a server store (PostgreSQL) a
    file of this machine's: ``$MEMLEDGER_INDEX_DIR/<digest of the store URL>.index``,
    the folder defaulting to ``$XDG_CACHE_HOME/memledger`` (``~/.cache/memledger``).
    Derived state: each machine feeds its own from the shared outbox, and a lost one
    is rebuilt. An in-memory store (``:memory:``) gets an in-memory index."""
    prefix = "sqlite:///"
    if store.url == f"{prefix}:memory:":  # an in-memory store: an in-memory index
        return Path(":memory:")
    if store.url.startswith(prefix):
        return Path(store.url.removeprefix(prefix) + ".index")
    folder = os.environ.get("MEMLEDGER_INDEX_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "memledger"
    )
    try:
        private_folder(Path(folder))
    except OSError as exc:
        raise InvalidInputError(
            f"cannot create the index folder {folder!r} for store {store.url!r}: {exc}; "
            "set MEMLEDGER_INDEX_DIR or pass DerivedIndex(path) yourself"
        ) from exc
    digest = hashlib.sha256(store.url.encode()).hexdigest()[:16]
    return Path(folder) / f"{digest}.index"


class DerivedIndex(SqliteMaintenance, Names):
    """Lexical and vector search over the records of one canonical store, in the index
    file at ``path``.

    ``embedder=None`` keeps the index lexical only. ``ann_threshold``: the live rows
    from which a tenant's tenant-wide vector searches use the approximate index
    (``None``: never; see the module's docstring).
    """

    def standing(
        self, tenant: str, *, subjects: Sequence[str] | None = None, limit: int = 200
    ) -> list[tuple[str, str, str]]:
        """``(memory_id, text, when)`` of the turns of ``tenant`` (of ``subjects`` only,
        when given) that state a standing instruction or preference, newest first;
        ``when`` is the scope it applies in ("" for always), read once when indexed."""
        sql = (
            "SELECT memory_id, text, standing FROM entries"
            " WHERE tenant = ? AND standing IS NOT NULL"
        )
        params: list[object] = [tenant]
        if subjects is not None:
            wanted = list(dict.fromkeys(subjects))
            sql += f" AND subject IN ({', '.join('?' * len(wanted))})"
            params += wanted
        sql += " ORDER BY at DESC, id DESC LIMIT ?"
        with self._lock:
            return [(m, t, w) for m, t, w in self._conn.execute(sql, (*params, limit))]

    def _known(
        self, tenant: str, subject: str | None, *, meta: Mapping[str, str] | None = None
    ) -> KnownNames:
        """The names as of the file's stamp and epoch (read here, or given in ``meta``)."""
        sql = "SELECT DISTINCT speaker, subject FROM entries WHERE tenant = ? AND changed > ?"
        if subject is not None:
            sql += " AND subject = ?"

        def changed(since: int) -> Iterable[tuple[str | None, str]]:
            extra = () if subject is None else (subject,)
            return self._conn.execute(sql, (tenant, since, *extra))

        with self._lock:
            if meta is None:
                meta = self._get_many("stamp", "epoch")
            stamp, epoch = int(meta.get("stamp") or 0), int(meta.get("epoch") or 0)
            return self._names.get(tenant, subject, epoch=epoch, stamp=stamp, changed=changed)

    def glance(self, tenant: str, *, subject: str | None = None) -> Glance:
        """:meth:`names`, :meth:`cursor_of` and :attr:`degraded` together, as a read
        starts (the file's state read once for all three)."""
        with self._lock:
            meta, own = self._state_of(tenant, "stamp", "epoch", "cursor", "degraded")
            return Glance(
                known=self._known(tenant, subject, meta=meta),
                cursor=max(int(meta.get("cursor") or 0), own),
                degraded=meta.get("degraded"),
            )

    def speakers(self, tenant: str, memory_ids: Iterable[str]) -> dict[str, str]:
        """The speaker of each episode among ``memory_ids``."""
        ids = list(memory_ids)
        if not ids:
            return {}
        with self._lock:
            return {
                m: s
                for m, s in self._conn.execute(
                    "SELECT memory_id, speaker FROM entries WHERE tenant = ?"
                    # "+": look rows up by memory id, never scan the speaker index
                    f" AND +speaker IS NOT NULL AND memory_id IN ({', '.join('?' * len(ids))})",
                    (tenant, *ids),
                )
            }

    def neighbours(
        self, tenant: str, memory_ids: Iterable[str], *, window: int
    ) -> dict[str, list[tuple[str, int]]]:
        """For each episode among ``memory_ids`` (in the order of their memory ids): the
        entries of its thread within ``window`` places before or after it, as
        ``(memory_id, offset)``: -1 the turn just before, 1 the turn just after."""
        ids = list(memory_ids)
        found: dict[str, list[tuple[str, int]]] = {}
        if not ids or window < 1:
            return found
        with self._lock:
            rows = self._conn.execute(_NEIGHBOURS, (tenant, json.dumps(ids), window)).fetchall()
        around: dict[str, list[tuple[int, str, str, int]]] = {}
        for anchor, side, memory_id, at, entry_id in rows:
            turns = around.setdefault(anchor, [])
            if side:  # side 0: the anchor itself, so one without neighbours is listed too
                turns.append((side, memory_id, at, entry_id))
        for anchor in sorted(around):
            offsets = neighbour_offsets(around[anchor])
            found[anchor] = [(m, d) for m, d in offsets if abs(d) <= window]
        return found


def _side(direction: str) -> str:
    """The ids of the ``?3`` turns of an anchor ``a``'s thread just before it
    (``direction`` ``"<"``) or just after it (``">"``), and up to ``?3`` more: two
    bounded reads of the thread index, the turns at the anchor's time beyond its id,
    then those beyond its time (SQLite seeks a row value ``(at, id) < (x, y)`` on
    ``at`` alone and would step over every turn of the same time, often a whole
    session). The caller keeps the ``?3`` nearest."""
    order = "DESC" if direction == "<" else "ASC"
    return (
        "SELECT id FROM (SELECT id FROM entries WHERE tenant = ?1 AND thread = a.thread"
        f" AND at = a.at AND id {direction} a.id ORDER BY id {order} LIMIT ?3)"
        " UNION ALL SELECT id FROM (SELECT id FROM entries WHERE tenant = ?1"
        f" AND thread = a.thread AND at {direction} a.at ORDER BY at {order}, id {order}"
        " LIMIT ?3)"
    )


_NEIGHBOURS = (
    # ?1 the tenant, ?2 the memory ids (a JSON array), ?3 the window. One statement
    # whatever the number of anchors; rows (anchor, side, memory_id, at, id), side -1
    # a turn before the anchor, 1 after, 0 the anchor itself.
    "WITH a AS (SELECT memory_id, thread, at, id FROM entries WHERE tenant = ?1"
    # "+": look rows up by memory id, never scan the thread index
    " AND +thread IS NOT NULL AND memory_id IN (SELECT value FROM json_each(?2)))"
    " SELECT memory_id, 0, NULL, NULL, NULL FROM a"
    " UNION ALL SELECT a.memory_id, -1, e.memory_id, e.at, e.id FROM a"
    f" JOIN entries AS e ON e.id IN ({_side('<')})"
    " UNION ALL SELECT a.memory_id, 1, e.memory_id, e.at, e.id FROM a"
    f" JOIN entries AS e ON e.id IN ({_side('>')})"
)
