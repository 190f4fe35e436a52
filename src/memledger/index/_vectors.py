"""A tenant's vectors held in memory, and exact nearest-neighbour search over them.

Each row carries what a hit reports of its entry (subject, family, kind,
revision, generation, text), so a search reads no table. The rows are kept up
to date from what the index changed since they were read (see
:class:`memledger.index.derived.DerivedIndex`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from memledger.index._base import Hit

Row: TypeAlias = tuple[str, str, str, int, int, str]
"""An entry's subject, family, kind, revision, generation and text."""


class Matrix:
    """One tenant's vectors in memory, kept up to date from the rows the index changed
    since it was loaded (reloaded whole only after a rebuild or a prune of removals)."""

    def __init__(self, *, epoch: int, dimensions: int) -> None:
        self.epoch = epoch
        self.stamp = -1
        self.memory_ids: list[str] = []
        self.entries: list[Row] = []
        """What the index holds for each row's entry, so a search reads no table."""
        self.position: dict[str, int] = {}
        self.by_subject: dict[str, list[int]] = {}
        self.rows = np.zeros((0, dimensions), dtype=np.float32)
        self.alive = np.zeros(0, dtype=bool)

    @property
    def count(self) -> int:
        return len(self.memory_ids)

    def remove(self, memory_id: str) -> None:
        at = self.position.get(memory_id)
        if at is not None:
            self.alive[at] = False

    def put(self, memory_id: str, row: Row, vector: bytes | None) -> None:
        at = self.position.get(memory_id)
        if at is None:
            if vector is None:
                return
            at = self.count
            if at == len(self.rows):  # grow by doubling
                size = max(64, 2 * len(self.rows))
                self.rows = np.resize(self.rows, (size, self.rows.shape[1]))
                self.alive = np.resize(self.alive, size)
            self.memory_ids.append(memory_id)
            self.entries.append(row)
            self.position[memory_id] = at
            self.by_subject.setdefault(row[0], []).append(at)
        else:
            self.entries[at] = row  # an entry keeps its subject: it is part of its key
        if vector is None:
            self.alive[at] = False
        else:
            self.rows[at] = np.frombuffer(vector, dtype=np.float32)
            self.alive[at] = True

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
            positions = np.array(wanted, dtype=np.intp)
            positions = positions[self.alive[positions]]
        if not len(positions):
            return []
        if len(positions) == self.count:
            scores = self.rows[: self.count] @ vector
        else:
            scores = self.rows[positions] @ vector
        typical = float(np.median(scores))
        top = min(k, len(scores))
        best = np.argpartition(-scores, top - 1)[:top]
        best = best[np.argsort(-scores[best], kind="stable")]
        hits = []
        for i in best:
            at = int(positions[i])
            subject, family, kind, revision, generation, text = self.entries[at]
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
                )
            )
        return hits
