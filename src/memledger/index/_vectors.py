"""A tenant's vectors held in memory, and exact nearest-neighbour search over them.

Each row carries what a hit reports of its entry (subject, family, kind,
revision, generation, text, passage span), so a search reads no table. A long
turn has a row per passage (:mod:`memledger.index.passages`); a search returns
each memory id once, at its best row. The rows are kept up
to date from what the index changed since they were read (see
:class:`memledger.index.derived.DerivedIndex`). An approximate index that
follows the rows (:mod:`memledger.index._ann`) reads the positions each change
touched from :attr:`Matrix.changes` and ranks its candidates with
:meth:`Matrix.rank`, so both paths score alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from memledger.index._base import Hit
from memledger.index.passages import best_per_memory

Row: TypeAlias = tuple[str, str, str, int, int, str, tuple[int, int] | None]
"""An entry's subject, family, kind, revision, generation, text and passage span."""
Key: TypeAlias = str | tuple[str, int]
"""A row's key: the memory id for an entry's first document, ``(memory id, part)`` for
the other passages of a long turn."""


def median(values: npt.NDArray[np.float32]) -> float:
    """``float(np.median(values))`` of a non-empty 1-d array, bit for bit (the same
    partition, the mean of the two middle values, NaN when any value is NaN), without
    its overhead on a few rows."""
    size = len(values)
    half = size // 2
    middle = [half] if size % 2 else [half - 1, half]
    part = np.partition(values, [*middle, -1])  # a NaN sorts last
    if np.isnan(part[-1]):
        return float("nan")
    # numpy's own mean of the middle row(s): a sum that starts at 0.0 makes a -0.0 +0.0
    return float(np.mean(part[half : half + 1] if size % 2 else part[half - 1 : half + 1]))


class Matrix:
    """One tenant's vectors in memory, kept up to date from the rows the index changed
    since it was loaded (reloaded whole only after a rebuild or a prune of removals)."""

    def __init__(self, *, epoch: int, dimensions: int) -> None:
        self.epoch = epoch
        self.stamp = -1
        self.memory_ids: list[str] = []
        self.entries: list[Row] = []
        """What the index holds for each row's entry, so a search reads no table."""
        self.position: dict[Key, int] = {}
        self.parts: dict[str, int] = {}
        """For a long turn, its highest passage number."""
        self.extra = 0
        """How many rows are passages past a turn's first."""
        self.by_subject: dict[str, list[int]] = {}
        self.rows = np.zeros((0, dimensions), dtype=np.float32)
        self.alive = np.zeros(0, dtype=bool)
        self.live = 0
        """How many rows are alive (have a vector and were not removed)."""
        self.changes: list[int] | None = None
        """Positions put or removed since a follower last took them (``None``: nobody
        follows, nothing is recorded)."""

    @property
    def count(self) -> int:
        return len(self.memory_ids)

    def remove(self, memory_id: str) -> None:
        """Take every row of ``memory_id`` out (each passage of a long turn)."""
        at = self.position.get(memory_id)
        if at is not None:
            self._mark(at, alive=False)
        for part in range(1, self.parts.get(memory_id, 0) + 1):
            at = self.position.get((memory_id, part))
            if at is not None and self.alive[at]:
                self._mark(at, alive=False)

    def _mark(self, at: int, *, alive: bool) -> None:
        self.live += int(alive) - int(self.alive[at])
        self.alive[at] = alive
        if self.changes is not None:
            self.changes.append(at)

    def put(self, memory_id: str, row: Row, vector: bytes | None, *, part: int = 0) -> None:
        key: Key = memory_id if part == 0 else (memory_id, part)
        at = self.position.get(key)
        if at is None:
            if vector is None:
                return
            at = self.count
            if at == len(self.rows):  # grow by doubling
                size = max(64, 2 * len(self.rows))
                self.rows = np.resize(self.rows, (size, self.rows.shape[1]))
                self.alive = np.resize(self.alive, size)
                self.alive[at:] = False  # np.resize repeats the old values
            self.memory_ids.append(memory_id)
            self.entries.append(row)
            self.position[key] = at
            self.by_subject.setdefault(row[0], []).append(at)
            if part:
                self.parts[memory_id] = max(part, self.parts.get(memory_id, 0))
                self.extra += 1
        else:
            self.entries[at] = row  # an entry keeps its subject: it is part of its key
        if vector is None:
            self._mark(at, alive=False)
        else:
            self.rows[at] = np.frombuffer(vector, dtype=np.float32)
            self._mark(at, alive=True)

    def nearest(
        self,
        vector: npt.NDArray[np.float32],
        *,
        tenant: str,
        k: int,
        subjects: Sequence[str] | None,
    ) -> list[Hit]:
        """The ``k`` rows nearest to ``vector`` by cosine, of the ``subjects`` (or all),
        each scored by how much nearer it is than the median row searched."""
        if subjects is None:
            positions = np.flatnonzero(self.alive[: self.count])
        else:  # only the subjects' rows are read
            wanted = [p for s in dict.fromkeys(subjects) for p in self.by_subject.get(s, ())]
            # in row order: when the subjects hold every row, the scores below are those
            # of rows 0, 1, 2 ... and must line up with the positions
            positions = np.sort(np.array(wanted, dtype=np.intp))
            positions = positions[self.alive[positions]]
        if not len(positions):
            return []
        if len(positions) == self.count:
            scores = self.rows[: self.count] @ vector
        else:
            scores = self.rows[positions] @ vector
        typical = median(scores)
        return self.rank(vector, positions, scores=scores, typical=typical, tenant=tenant, k=k)

    def rank(
        self,
        vector: npt.NDArray[np.float32],
        positions: npt.NDArray[np.intp],
        *,
        typical: float,
        tenant: str,
        k: int,
        scores: npt.NDArray[np.float32] | None = None,
    ) -> list[Hit]:
        """The ``k`` memory ids of ``positions`` (alive rows, each once) nearest to
        ``vector``, each at its best row, scored as :meth:`nearest` scores them against
        ``typical``, the median cosine of the rows searched (or an estimate of it):
        the top ``k`` rows, more when passages of one turn take several of those
        places. ``scores``: the rows' cosines, when the caller has them already."""
        if not len(positions):
            return []
        if scores is None:
            scores = self.rows[positions] @ vector
        top = min(k, len(scores))
        while True:
            best = np.argpartition(-scores, top - 1)[:top]
            hits = self._hits(positions[best], scores[best], typical=typical, tenant=tenant)
            if not self.extra:
                return hits
            hits = best_per_memory(hits)
            if len(hits) >= k or top == len(scores):
                return hits[:k]
            top = min(len(scores), top * 4)

    def _hits(
        self,
        positions: npt.NDArray[np.intp],
        scores: npt.NDArray[np.float32],
        *,
        typical: float,
        tenant: str,
    ) -> list[Hit]:
        """Hits for these rows, nearest first (ties: the row indexed first)."""
        order = np.lexsort((positions, -scores))
        hits = []
        for i in order:
            at = int(positions[i])
            subject, family, kind, revision, generation, text, span = self.entries[at]
            cosine = float(scores[i])
            hits.append(
                Hit(
                    tenant=tenant,
                    memory_id=self.memory_ids[at],
                    subject=subject,
                    family=family,
                    kind=kind,
                    revision=revision,
                    generation=generation,
                    score=cosine - typical,
                    text=text,
                    cosine=cosine,
                    span=span,
                )
            )
        return hits
