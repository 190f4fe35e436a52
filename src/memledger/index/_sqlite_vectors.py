"""Vector search of the SQLite index: :meth:`SqliteVectors.search_vectors`, each tenant's
vectors held in memory (:meth:`SqliteVectors._matrix`) and its approximate index.

Vectors: one float32 row per entry, stored next to the entry and searched exactly over
the subject's (or the tenant's) rows. Each tenant's rows are held in memory
(:class:`~memledger.index._vectors.Matrix`), with what a hit reports of each entry
(so a vector search reads no table), and brought up to date from what changed since
they were read (entries carry the stamp of their last change, removals are recorded
in ``removed``, a rebuild starts a new epoch). Rows held from before the last prune
of ``removed`` are read again whole, since the removals they would have needed are
gone.

A tenant-wide search of a tenant past ``ann_threshold`` live rows goes through its
approximate index (:mod:`memledger.index._ann`, :class:`~memledger.index._ann.Graphs`):
loaded or built on the first such search (:meth:`SqliteVectors.warm` does it ahead),
kept up to date with the rows after each sync (:meth:`SqliteVectors._follow_anns`),
built for every tenant past the threshold by a rebuild
(:meth:`SqliteVectors._build_anns`) and rebuilt from the live rows after an erasure
(:meth:`SqliteVectors._rebuild_graph`).
"""

from __future__ import annotations

from collections.abc import Sequence
from sys import intern

from memledger.index import _ann
from memledger.index._ann import AnnStatus, TenantAnn
from memledger.index._base import Hit
from memledger.index._common import query_vector
from memledger.index._sqlite_base import SqliteIndexBase
from memledger.index._vectors import Matrix

__all__ = ["SqliteVectors"]


class SqliteVectors(SqliteIndexBase):
    """Exact and approximate vector search over a tenant's rows held in memory."""

    def search_vectors(
        self, query: str, *, tenant: str, k: int, subjects: Sequence[str] | None = None
    ) -> list[Hit]:
        """The ``k`` entries of ``tenant`` nearest to ``query`` by cosine, of ``subjects``
        only when given: an exact scan, or for a tenant-wide search of a tenant past
        ``ann_threshold`` the approximate index's candidates ranked exactly.

        Scores are the cosine above the median cosine of the rows searched; on the
        approximate path that median is estimated from a fixed sample of the
        tenant's live rows (:meth:`TenantAnn.typical`), which moves every score of
        a query alike and keeps the exact ranking.

        Raises :class:`~memledger.errors.EmbedderError` when there is no embedder
        or it fails; the caller decides whether to go on lexical only.
        """
        vector = query_vector(self.embedder, query, k=k)
        with self._lock:
            matrix = self._matrix(tenant)
            ann = None if subjects is not None else self._ann(tenant, matrix)
            if ann is None:
                self.vector_searches["exact"] += 1
                return matrix.nearest(vector, tenant=tenant, k=k, subjects=subjects)
            self.vector_searches["ann"] += 1
            positions = ann.candidates(vector, k=k + min(matrix.extra, 3 * k))
            return matrix.rank(vector, positions, typical=ann.typical(vector), tenant=tenant, k=k)

    def warm(self, tenant: str) -> AnnStatus | None:
        """Do now what ``tenant``'s first tenant-wide vector search would: read its
        vectors and, past ``ann_threshold``, load or build its approximate index;
        that index's status (``None``: searches stay exact)."""
        if self.embedder is None:
            return None
        with self._lock:
            ann = self._ann(tenant, self._matrix(tenant))
            return None if ann is None else ann.status()

    def ann_status(self, tenant: str) -> AnnStatus | None:
        """The approximate index this handle holds for ``tenant``, or ``None``."""
        with self._lock:
            return self._graphs.status(tenant)

    def _ann(self, tenant: str, matrix: Matrix) -> TenantAnn | None:
        """``tenant``'s approximate index, up to date, if its tenant-wide searches use
        one (call with the lock held)."""
        assert self.embedder is not None
        return self._graphs.get(
            tenant, matrix, embedder=self.embedder.name, dimensions=self.embedder.dimensions
        )

    def _matrix(self, tenant: str) -> Matrix:
        """``tenant``'s vectors, brought up to date (call with the lock held)."""
        assert self.embedder is not None
        meta = self._get_many("stamp", "epoch", "pruned")
        stamp, epoch = int(meta.get("stamp") or 0), int(meta.get("epoch") or 0)
        pruned = int(meta.get("pruned") or -1)
        matrix = self._matrices.get(tenant)
        # a matrix older than the last prune may have missed removals: read it again
        if matrix is None or matrix.epoch != epoch or matrix.stamp < pruned:
            matrix = Matrix(epoch=epoch, dimensions=self.embedder.dimensions)
            self._matrices[tenant] = matrix
        if matrix.stamp == stamp:
            return matrix
        for (memory_id,) in self._conn.execute(
            "SELECT memory_id FROM removed WHERE tenant = ? AND changed > ? ORDER BY changed",
            (tenant, matrix.stamp),
        ):
            matrix.remove(memory_id)
        for (
            memory_id,
            subject,
            family,
            kind,
            revision,
            generation,
            text,
            vector,
            part,
            start,
            end,
        ) in self._conn.execute(
            "SELECT memory_id, subject, family, kind, revision, generation, text, vector,"
            " part, span_start, span_end FROM entries WHERE tenant = ? AND changed > ?"
            " ORDER BY id",
            (tenant, matrix.stamp),
        ):
            # interned: a tenant's many rows share a few subjects, families and kinds
            span = None if start is None else (start, end)
            row = (intern(subject), intern(family), intern(kind), revision, generation, text, span)
            matrix.put(memory_id, row, vector, part=part)
        matrix.stamp = stamp
        return matrix

    def _follow_anns(self, tenant: str | None) -> None:
        """Bring the approximate indexes this handle holds (``tenant``'s, or all) up to
        date with what the sync changed, and save those that changed enough."""
        with self._lock:
            for name in self._graphs.held():
                if tenant is None or name == tenant:
                    self._save_graph(name)

    def _build_anns(self) -> None:
        """Build and save the approximate index of every tenant past the threshold."""
        if self.embedder is None or self.ann_threshold is None or not _ann.available():
            return
        with self._lock:
            tenants = self._conn.execute(
                "SELECT tenant FROM entries WHERE vector IS NOT NULL GROUP BY tenant"
                " HAVING count(*) >= ?",
                (self.ann_threshold,),
            ).fetchall()
            for (tenant,) in tenants:
                self._save_graph(tenant)

    def _rebuild_graph(self, tenant: str) -> None:
        """``tenant``'s graph, if it has one, built again from its live rows and saved
        over the old file (call with the lock held)."""
        if self._graphs.forget(tenant) and self.embedder is not None:
            self._save_graph(tenant)

    def _save_graph(self, tenant: str) -> None:
        """``tenant``'s approximate index, if its searches use one, brought up to date
        (loaded or built when this handle holds none) and saved when due (a new graph,
        or enough changed since its last save; call with the lock held)."""
        ann = self._ann(tenant, self._matrix(tenant))
        if ann is not None:
            self._graphs.save(ann, stamp=self._stamp)
