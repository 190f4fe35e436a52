"""Approximate nearest neighbours for tenant-wide vector search: a usearch HNSW graph per
tenant, persisted beside the index file, that follows the tenant's :class:`Matrix`.

Exact search over 100k x 384 rows costs about 9 ms (``../shared/FINDINGS.md``);
this graph answers a tenant-wide query in 1-2 ms. It only proposes candidates:
every candidate is checked against :attr:`Matrix.alive` and ranked by
:meth:`Matrix.rank` with its exact float32 cosine, so the ANN can miss a row
the exact scan would find, never return a removed row or a wrong score. How
much it misses depends on the vectors: ``memledger bench recall`` found 70% of
the exact top 10 (by nearness) on the synthetic tenant's hashing vectors at
100k rows, 63% at 300k (their top 10 is a field of near ties); on the same rows
embedded with MiniLM, an offline run found 99% for questions about stated facts.

Keys are content addresses: 63 bits of blake2b over a row's float32 bytes, one
graph node per distinct vector (rows with the same text share one; a synthetic
tenant of 100k rows held 66k distinct vectors). A key therefore means the same
vector in every process and at every time, and bringing any graph up to date is
a difference of key sets: the keys the tenant's live rows need against those the
graph holds. That makes a stale file harmless (the difference repairs it when
it is loaded) and needs no record of removals. The graph follows the rows
through :attr:`Matrix.changes`; when the matrix is read again whole (after a
prune, or in another process) the whole difference is taken once (about 2 µs
a row for the hashing).

Rows whose vector is all zeros (a text without a word) are left out: their
cosine is 0 with every query.

On disk, per tenant: ``<index>.ann/<blake2b of the tenant>.usearch`` and a JSON
sidecar naming the embedder, dimensions, graph settings, the index epoch and
stamp it was saved at, the file's size and CRC-32. A file whose sidecar does
not match (another embedder, epoch or settings, a torn or corrupt write) is not
loaded: the graph is built again from the rows. A graph is saved when it is
built and then once :func:`save_after` keys have changed since the last save,
never per query; unsaved changes are recovered from the rows on the next load.

The first tenant-wide search past the threshold without a usable file builds
the graph in that call (17 s at 100k rows, 70 s at 300k on two cores);
``memledger reindex`` builds them ahead.

Needs the ``ann`` extra (``pip install 'memledger[ann]'``, usearch); without it
:func:`available` is false and every search stays exact.

usearch's wheel links libstdc++ statically and exports its locale ids as unique
symbols: importing onnxruntime *after* usearch crashes the process (seen with
usearch 2.26.6 and onnxruntime 1.32). :func:`available` imports onnxruntime
first when it is installed.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import json
import os
import time
import uuid
import zlib
from dataclasses import asdict, dataclass
from hashlib import blake2b
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from memledger._files import FILE_MODE, private_file, private_folder
from memledger.index._vectors import Matrix

if TYPE_CHECKING:
    from usearch.index import Index

__all__ = [
    "ANN_THRESHOLD",
    "AnnStatus",
    "Graphs",
    "TenantAnn",
    "ann_folder",
    "available",
    "save_after",
]

ANN_THRESHOLD = 20_000
"""Live rows from which a tenant's tenant-wide searches use the ANN (exact below:
at 20k rows an exact scan costs about 2 ms)."""
CONNECTIVITY = 16
"""HNSW links per node (``M``)."""
EXPANSION_ADD = 128
"""Search depth while inserting (``efConstruction``)."""
EXPANSION_SEARCH = 512
"""Search depth while querying (``ef``): on the synthetic bench tenant's 100k rows
(66k distinct vectors) 64 found about 50% of the exact top 10 with hashing vectors
and 75% with MiniLM, 512 found 75% and 99% (stated facts), in about 1 ms."""
DTYPE = "f16"
"""How the graph stores vectors: half precision halves its memory and file, with the
overlap of float32 (i8 lost a fifth of it on MiniLM vectors); the ranking uses the
matrix's float32 rows."""
FORMAT = 1
"""Version of the file layout and key scheme; bump it whenever either changes."""
SAMPLE = 2048
"""Rows whose median cosine stands for the tenant's (the exact path's baseline): the
median of 2,048 is within about 1% of the rows' ranks of the true one."""
OVERFETCH = 32
"""Candidates asked for beyond ``k``, for removed rows and ties."""
PARALLEL_ADD = 10_000
"""Batches of at least this many vectors are added on every core."""
_MASK = (1 << 63) - 1


def available() -> bool:
    """Whether usearch is installed (the ``ann`` extra)."""
    return _index_class() is not None


@functools.cache
def _index_class() -> type[Index] | None:
    if importlib.util.find_spec("usearch") is None:
        return None
    try:
        if importlib.util.find_spec("onnxruntime") is not None:
            importlib.import_module("onnxruntime")  # before usearch: see the module's docstring
        from usearch.index import Index
    except ImportError:
        return None  # a broken install: searches stay exact
    return Index


def _threads(count: int) -> int:
    """Threads to add ``count`` vectors with: every core for a large batch, one for a
    small one (concurrent inserts into a small graph race for the same nodes and left
    some unreachable in our tests; one thread also makes small graphs reproducible)."""
    return 0 if count >= PARALLEL_ADD else 1


def graph_files(folder: Path, tenant: str) -> tuple[Path, Path]:
    """A tenant's graph file and its sidecar in ``folder``."""
    name = blake2b(tenant.encode(), digest_size=16).hexdigest()
    return folder / f"{name}.usearch", folder / f"{name}.json"


def ann_folder(index_path: Path) -> Path:
    """Where the graphs of the index at ``index_path`` live."""
    return index_path.with_name(index_path.name + ".ann")


def save_after(size: int) -> int:
    """How many keys may change after a save before the graph is saved again."""
    return max(1_000, size // 20)


def key_of(row: npt.NDArray[np.float32]) -> int:
    """The content address of a row: 63 bits of blake2b over its bytes, never 0."""
    digest = int.from_bytes(blake2b(row.tobytes(), digest_size=8).digest(), "little")
    return (digest & _MASK) or 1


@dataclass(frozen=True, slots=True, kw_only=True)
class AnnStatus:
    """What one tenant's approximate index holds and has done in this handle."""

    vectors: int
    """Distinct vectors in the graph."""
    searches: int
    builds: int
    loads: int
    """Graphs read from disk."""
    repaired: int
    """Keys the last load added or removed to match the rows (a stale file's gap)."""
    saves: int
    build_seconds: float
    """How long the last build took (0.0 if none)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Sidecar:
    format: int
    embedder: str
    dimensions: int
    dtype: str
    connectivity: int
    epoch: int
    stamp: int
    size: int
    bytes: int
    crc32: int


def _crc32(path: Path) -> int:
    crc = 0
    with path.open("rb") as file:
        while chunk := file.read(1 << 22):
            crc = zlib.crc32(chunk, crc)
    return crc


class TenantAnn:
    """One tenant's graph, following one :class:`Matrix` of that tenant at a time.

    Counters (observable, for tests and benchmarks) as in :class:`AnnStatus`.
    """

    def __init__(
        self, folder: Path, tenant: str, *, embedder: str, dimensions: int, epoch: int
    ) -> None:
        self.path, self.sidecar = graph_files(folder, tenant)
        self.embedder = embedder
        self.dimensions = dimensions
        self.epoch = epoch
        self._graph: Index | None = None
        self._matrix: Matrix | None = None
        self._keys = np.zeros(0, dtype=np.uint64)
        """Each matrix position's key (0: none, the row is dead or all zeros)."""
        self._first: dict[int, int] = {}
        """Each key's first position."""
        self._more: dict[int, list[int]] = {}
        """Each key's other positions, for keys that several rows share."""
        self._sample = np.zeros(0, dtype=np.intp)
        self._sample_rows = np.zeros((0, dimensions), dtype=np.float32)
        """A copy of the sampled rows, so a query reads them in one contiguous block."""
        self._since_sample = 0
        self._unsaved = 0
        """Keys added or removed since the graph was last saved or loaded."""
        self._fresh = False
        """Built here and not saved yet."""
        self._churn = 0
        """Keys removed since the graph was built."""
        self.searches = 0
        self.builds = 0
        self.loads = 0
        self.repaired = 0
        self.saves = 0
        self.build_seconds = 0.0

    def status(self) -> AnnStatus:
        return AnnStatus(
            vectors=self.size,
            searches=self.searches,
            builds=self.builds,
            loads=self.loads,
            repaired=self.repaired,
            saves=self.saves,
            build_seconds=self.build_seconds,
        )

    @property
    def size(self) -> int:
        """Distinct vectors in the graph."""
        return 0 if self._graph is None else len(self._graph)

    # -- following the rows --------------------------------------------------------------

    def follow(self, matrix: Matrix) -> None:
        """Bring the graph up to date with ``matrix``: load or build it the first time,
        take the whole difference when the matrix is a new one, else apply the
        positions its changes touched."""
        if matrix.epoch != self.epoch:
            raise ValueError(f"matrix of epoch {matrix.epoch}, graph of epoch {self.epoch}")
        if self._graph is None:
            self._attach(matrix)
            if not self._load():
                self._build()
            return
        if matrix is not self._matrix:
            self._attach(matrix)
            self._reconcile()
            return
        changes, matrix.changes = matrix.changes or [], []
        if changes:
            self._apply(dict.fromkeys(changes))
        if self._churn > max(self.size, 1_000):
            self._build()  # removals leave the graph worse connected: start afresh

    def detach(self) -> None:
        """Stop following the matrix (the graph is let go)."""
        if self._matrix is not None:
            self._matrix.changes = None

    def _attach(self, matrix: Matrix) -> None:
        """Index ``matrix``'s live rows by key and follow its changes from now on."""
        self._matrix = matrix
        matrix.changes = []
        self._keys = np.zeros(matrix.count, dtype=np.uint64)
        self._first, self._more = {}, {}
        rows, alive = matrix.rows, matrix.alive
        for at in np.flatnonzero(alive[: matrix.count]).tolist():
            if rows[at].any():
                self._join(at, key_of(rows[at]))
        self._resample()

    def _join(self, at: int, key: int) -> bool:
        """Record that row ``at`` has ``key``; whether the key is new."""
        self._keys[at] = key
        if key not in self._first:
            self._first[key] = at
            return True
        self._more.setdefault(key, []).append(at)
        return False

    def _leave(self, at: int, key: int) -> bool:
        """Record that row ``at`` no longer has ``key``; whether no row has it now."""
        self._keys[at] = 0
        more = self._more.get(key)
        if self._first.get(key) == at:
            if not more:
                del self._first[key]
                return True
            self._first[key] = more.pop()
        elif more is not None:
            more.remove(at)
        if more is not None and not more:
            del self._more[key]
        return False

    def _apply(self, positions: dict[int, None]) -> None:
        """Re-key the rows at ``positions`` and add or remove what the graph needs."""
        assert self._matrix is not None and self._graph is not None
        matrix = self._matrix
        if len(self._keys) < matrix.count:
            self._keys = np.concatenate(
                [self._keys, np.zeros(matrix.count - len(self._keys), dtype=np.uint64)]
            )
        added: dict[int, int] = {}
        dropped: set[int] = set()
        for at in positions:
            row = matrix.rows[at]
            new = key_of(row) if matrix.alive[at] and row.any() else 0
            old = int(self._keys[at])
            if new == old:
                continue
            if old and self._leave(at, old) and added.pop(old, None) is None:
                dropped.add(old)  # no row has it now (unless added by this very batch)
            if new and self._join(at, new):
                if new in dropped:
                    dropped.discard(new)  # the same vector is back: the graph keeps it
                else:
                    added[new] = at
        self._change(added, dropped)
        self._since_sample += len(positions)
        if self._since_sample * 20 > matrix.live:  # 5% of the rows changed: sample again
            self._resample()

    def _reconcile(self) -> None:
        """Make the graph hold exactly the keys of the attached matrix's live rows."""
        assert self._graph is not None
        held = set(np.asarray(self._graph.keys[:], dtype=np.uint64).tolist())
        needed = self._first
        added = {k: at for k, at in needed.items() if k not in held}
        dropped = {k for k in held if k not in needed}
        self._change(added, dropped)
        self.repaired = len(added) + len(dropped)

    def _change(self, added: dict[int, int], dropped: set[int]) -> None:
        assert self._matrix is not None and self._graph is not None
        if dropped:
            self._graph.remove(np.fromiter(dropped, dtype=np.uint64, count=len(dropped)))
        if added:
            keys = np.fromiter(added, dtype=np.uint64, count=len(added))
            rows = np.fromiter(added.values(), dtype=np.intp, count=len(added))
            self._graph.add(keys, self._matrix.rows[rows], threads=_threads(len(keys)))
        self._unsaved += len(added) + len(dropped)
        self._churn += len(dropped)

    def _resample(self) -> None:
        """Fix the rows whose median cosine estimates the tenant's: evenly spaced over
        the live rows (about :data:`SAMPLE` of them)."""
        assert self._matrix is not None
        live = np.flatnonzero(self._matrix.alive[: self._matrix.count])
        step = max(1, len(live) // SAMPLE)
        self._sample = live[::step]
        self._sample_rows = self._matrix.rows[self._sample]
        self._since_sample = 0

    def _build(self) -> None:
        """A new graph of every key the attached matrix's live rows have."""
        assert self._matrix is not None
        started = time.perf_counter()
        graph = self._empty_graph()
        if self._first:
            keys = np.fromiter(self._first, dtype=np.uint64, count=len(self._first))
            rows = np.fromiter(self._first.values(), dtype=np.intp, count=len(self._first))
            graph.add(keys, self._matrix.rows[rows], threads=_threads(len(keys)))
        self._graph = graph
        self._unsaved = self._churn = 0
        self._fresh = True
        self.builds += 1
        self.build_seconds = time.perf_counter() - started

    def _empty_graph(self) -> Index:
        """A graph without keys, of this tenant's dimensions and the module's settings."""
        index_class = _index_class()
        assert index_class is not None
        return index_class(
            ndim=self.dimensions,
            metric="cos",
            dtype=DTYPE,
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=EXPANSION_SEARCH,
        )

    # -- disk -----------------------------------------------------------------------------

    def _settings(self) -> dict[str, object]:
        return {
            "format": FORMAT,
            "embedder": self.embedder,
            "dimensions": self.dimensions,
            "dtype": DTYPE,
            "connectivity": CONNECTIVITY,
            "epoch": self.epoch,
        }

    def _load(self) -> bool:
        """Read the graph from disk and repair it against the matrix; ``False`` when
        there is no usable file (missing, of other settings, torn or corrupt)."""
        try:
            found = json.loads(self.sidecar.read_text())
            if not isinstance(found, dict) or any(
                found.get(key) != value for key, value in self._settings().items()
            ):
                return False
            if self.path.stat().st_size != found.get("bytes") or _crc32(self.path) != found.get(
                "crc32"
            ):
                return False
            graph = self._empty_graph()
            graph.load(str(self.path))
            if graph.ndim != self.dimensions or len(graph) != found.get("size"):
                return False
        except (OSError, ValueError, RuntimeError):
            return False  # json.JSONDecodeError is a ValueError; usearch raises both
        self._graph = graph
        self._unsaved = self._churn = 0
        self.loads += 1
        self._reconcile()
        return True

    def due(self) -> bool:
        """Whether the graph should be saved: it was built and never saved, or
        :func:`save_after` keys changed since the last save."""
        return self._fresh or self._unsaved >= save_after(self.size)

    def save(self, *, stamp: int) -> None:
        """Write the graph and its sidecar (each to a temporary file, then renamed:
        a reader sees the old pair, the new pair or a mismatch it rejects)."""
        assert self._graph is not None
        private_folder(self.path.parent)
        suffix = f".{uuid.uuid4().hex}.tmp"  # never shared by two writers
        graph_tmp = self.path.with_name(self.path.name + suffix)
        sidecar_tmp = self.sidecar.with_name(self.sidecar.name + suffix)
        try:
            private_file(graph_tmp)  # usearch writes into it, keeping its mode
            self._graph.save(str(graph_tmp))
            os.chmod(graph_tmp, FILE_MODE)
            sidecar = _Sidecar(
                format=FORMAT,
                embedder=self.embedder,
                dimensions=self.dimensions,
                dtype=DTYPE,
                connectivity=CONNECTIVITY,
                epoch=self.epoch,
                stamp=stamp,
                size=len(self._graph),
                bytes=graph_tmp.stat().st_size,
                crc32=_crc32(graph_tmp),
            )
            private_file(sidecar_tmp)
            sidecar_tmp.write_text(json.dumps(asdict(sidecar)))
            os.replace(graph_tmp, self.path)
            os.replace(sidecar_tmp, self.sidecar)
        finally:
            graph_tmp.unlink(missing_ok=True)
            sidecar_tmp.unlink(missing_ok=True)
        self._unsaved = 0
        self._fresh = False
        self.saves += 1

    # -- searching ------------------------------------------------------------------------

    def candidates(self, vector: npt.NDArray[np.float32], *, k: int) -> npt.NDArray[np.intp]:
        """Live rows near ``vector``, each once: every row of each of the graph's
        nearest keys (at least ``k`` of them when the tenant has that many live rows
        the graph holds; fewer only when the graph missed them)."""
        assert self._graph is not None and self._matrix is not None
        self.searches += 1
        alive = self._matrix.alive
        count = min(k + OVERFETCH, self.size)
        while count:
            found = self._graph.search(vector, count, threads=1).keys
            positions: list[int] = []
            for key in found.tolist():
                first = self._first.get(key)
                if first is None:
                    continue  # not a live key (cannot happen once followed; kept safe)
                positions.append(first)
                positions.extend(self._more.get(key, ()))
            chosen = np.array(positions, dtype=np.intp)
            chosen = chosen[alive[chosen]] if len(chosen) else chosen
            if len(chosen) >= k or count >= self.size:
                return chosen
            count = min(4 * count, self.size)
        return np.zeros(0, dtype=np.intp)

    def typical(self, vector: npt.NDArray[np.float32]) -> float:
        """The median cosine of the sampled live rows: the exact path's baseline (the
        median over every row searched), estimated. It moves every score of a query
        by the same amount, so the ranking is the exact one. A sampled row changed
        since it was sampled counts as it was (the sample is drawn again once 5% of
        the rows changed)."""
        assert self._matrix is not None
        alive = self._matrix.alive[self._sample]
        if not alive.any():
            return 0.0
        cosines = self._sample_rows @ vector
        return float(np.median(cosines if alive.all() else cosines[alive]))


class Graphs:
    """The approximate indexes of one index file's tenants, as one handle holds them
    (call every method with the handle's lock held).

    A tenant gets one when it has at least ``threshold`` live rows (``None``: never)
    and usearch is installed; a graph that fails (a usearch error, no memory, no
    disk) is dropped and its tenant searched exactly for the rest of the handle's
    life. Saving is best effort: a graph that cannot be written is repaired or
    rebuilt by the next load.
    """

    def __init__(self, index_path: Path, *, threshold: int | None) -> None:
        self.folder = ann_folder(index_path)
        self.threshold = threshold
        self._held: dict[str, TenantAnn] = {}
        self._failed: set[str] = set()

    def held(self) -> list[str]:
        """The tenants whose graphs are held."""
        return list(self._held)

    def status(self, tenant: str) -> AnnStatus | None:
        held = self._held.get(tenant)
        return None if held is None else held.status()

    def get(
        self, tenant: str, matrix: Matrix, *, embedder: str, dimensions: int
    ) -> TenantAnn | None:
        """``tenant``'s graph, loaded or built and up to date with ``matrix``, when its
        tenant-wide searches should use one; else ``None``."""
        held = self._held.get(tenant)
        if (
            self.threshold is None
            or matrix.live < self.threshold
            or tenant in self._failed
            or not available()
        ):
            if held is not None:  # below the threshold again: exact, and stop following
                del self._held[tenant]
                matrix.changes = None
            return None
        if held is None or held.epoch != matrix.epoch:
            held = TenantAnn(
                self.folder, tenant, embedder=embedder, dimensions=dimensions, epoch=matrix.epoch
            )
            self._held[tenant] = held
        try:
            held.follow(matrix)
        except (OSError, RuntimeError, ValueError, MemoryError):
            del self._held[tenant]
            self._failed.add(tenant)
            matrix.changes = None
            return None
        return held

    def save(self, ann: TenantAnn, *, stamp: int) -> None:
        """Save ``ann`` if it is due."""
        if ann.due():
            with contextlib.suppress(OSError, RuntimeError):
                ann.save(stamp=stamp)

    def close(self, *, stamp: int) -> None:
        """Save what is due and let go of every graph."""
        for ann in self._held.values():
            self.save(ann, stamp=stamp)
        self._held.clear()

    def forget(self, tenant: str) -> bool:
        """Let go of ``tenant``'s graph and delete its files; whether there was one. A
        removed key's vector stays in a graph (marked deleted) until it is rebuilt."""
        held = self._held.pop(tenant, None)
        if held is not None:
            held.detach()
        found = held is not None
        for file in graph_files(self.folder, tenant):
            found = file.exists() or found
            file.unlink(missing_ok=True)
        return found

    def drop(self) -> None:
        """Forget every graph, in memory and on disk (the index was reset)."""
        self._held.clear()
        self._failed.clear()
        if self.folder.is_dir():
            for file in self.folder.iterdir():
                file.unlink(missing_ok=True)
