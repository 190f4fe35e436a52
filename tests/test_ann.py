"""The approximate index for tenant-wide vector search, on real SQLite index files: the
same top hits as the exact scan, removed rows never returned, stale, missing and corrupt
files repaired or rebuilt, rebuilt by ``rebuild``, never used for a subject's search."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from memledger import Memory
from memledger.errors import InvalidInputError
from memledger.index import _ann
from memledger.index._ann import TenantAnn, ann_folder
from memledger.index.derived import AnnStatus, DerivedIndex, Hit
from memledger.index.embedders import HashingEmbedder
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.scenarios import TENANT, actor, day, event
from memledger.write.worker import episode_of

if not _ann.available():  # never import usearch here first: see memledger.index._ann
    pytest.skip("needs the 'ann' extra (usearch)", allow_module_level=True)

TOPICS = (
    "cat shelter pepper kitten adopted grey",
    "budget review quarterly finance meeting thursday",
    "violin orchestra concert music rehearsal sister",
    "sourdough bread baking oven weekend flour",
    "trip japan tokyo flight hotel booking",
    "garden tomatoes basil watering soil compost",
)
SUBJECTS = tuple(f"user-{n}" for n in range(6))
QUERIES = (
    "pepper the grey cat from the shelter",
    "the quarterly budget meeting",
    "my sister's violin concert",
    "baking sourdough in the oven",
    "a flight to tokyo",
    "watering the basil in the garden",
)
THRESHOLD = 100


def _turn(memory: Memory, n: int, text: str, *, tenant: str = TENANT) -> str:
    subject = SUBJECTS[n % len(SUBJECTS)]
    source = replace(
        event(
            f"{tenant}-e{n}",
            text,
            occurred_at=day(10, 1, 9),
            who=actor(actor_id=subject),
            subject=subject,
            tenant=tenant,
        ),
        metadata={"session": "s1"},
    )
    (result,) = memory.ingest(source, [episode_of(source)]).results
    assert result.memory_id is not None
    return result.memory_id


def _clustered(memory: Memory, count: int, *, start: int = 0, tenant: str = TENANT) -> list[str]:
    """``count`` turns, each three words of one topic and a word of its own."""
    rng = random.Random(start)
    ids = []
    for n in range(start, start + count):
        words = rng.sample(TOPICS[n % len(TOPICS)].split(), 3)
        ids.append(_turn(memory, n, " ".join(words) + f" item{n}", tenant=tenant))
    return ids


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    memory = Memory(open_store(tmp_path / "m.db"), clock=FrozenClock(day(10, 2)))
    _clustered(memory, 300)
    yield memory
    memory.close()


def _index(tmp_path: Path, threshold: int | None = THRESHOLD) -> DerivedIndex:
    return DerivedIndex(tmp_path / "m.index", embedder=HashingEmbedder(), ann_threshold=threshold)


@contextmanager
def _built(tmp_path: Path, memory: Memory | None = None) -> Iterator[DerivedIndex]:
    """The index ``m.index`` with the tenant's graph built by a first search (after a sync
    from ``memory``'s store when given); closed, and so its graph saved, on leaving."""
    with _index(tmp_path) as index:
        if memory is not None:
            index.sync(memory.store)
        index.search_vectors(QUERIES[0], tenant=TENANT, k=10)
        yield index


@pytest.fixture
def exact(tmp_path: Path, memory: Memory) -> Iterator[DerivedIndex]:
    index = _index(tmp_path, None)
    index.sync(memory.store)
    yield index
    index.close()


def _graph(index: DerivedIndex) -> AnnStatus:
    status = index.ann_status(TENANT)
    assert status is not None
    return status


def _same(found: list[Hit], expected: list[Hit]) -> None:
    """The same hits but for the order of equal cosines (and which of them make the cut),
    scored against a median estimated from a sample of the rows: every score of the
    query moved by one small amount."""
    assert [h.cosine for h in found] == pytest.approx([h.cosine for h in expected], abs=1e-6)
    shifts = [h.score - g.score for h, g in zip(found, expected, strict=True)]
    assert max(shifts) - min(shifts) < 1e-6 and abs(shifts[0]) < 0.02
    last = expected[-1].cosine
    assert last is not None

    def above(hits: list[Hit]) -> set[str]:
        return {h.memory_id for h in hits if h.cosine is not None and h.cosine > last + 1e-6}

    assert above(found) == above(expected)


def test_tenant_wide_search_finds_the_exact_top_hits_on_clustered_data(
    tmp_path: Path, memory: Memory, exact: DerivedIndex
) -> None:
    with _index(tmp_path) as index:
        for query in QUERIES:
            for k in (1, 10, 40):
                _same(
                    index.search_vectors(query, tenant=TENANT, k=k),
                    exact.search_vectors(query, tenant=TENANT, k=k),
                )
        assert index.vector_searches == {"exact": 0, "ann": 3 * len(QUERIES)}
        assert exact.vector_searches == {"exact": 3 * len(QUERIES), "ann": 0}
        assert _graph(index).builds == 1 and _graph(index).searches == 3 * len(QUERIES)


def test_the_ann_ranking_and_scores_are_the_exact_paths_on_its_hits(
    tmp_path: Path, memory: Memory, exact: DerivedIndex
) -> None:
    """The median baseline is estimated from a sample of rows: every score of a query
    moves alike, so the order of the hits is the exact order of their cosines."""
    with _index(tmp_path) as index:
        everything = {
            h.memory_id: h for h in exact.search_vectors(QUERIES[0], tenant=TENANT, k=300)
        }
        hits = index.search_vectors(QUERIES[0], tenant=TENANT, k=30)
        cosines = [everything[h.memory_id].cosine for h in hits]
        assert cosines == sorted(cosines, reverse=True)
        assert [h.cosine for h in hits] == pytest.approx(cosines)
        offsets = {round(h.score - everything[h.memory_id].score, 6) for h in hits}
        assert len(offsets) == 1  # one shift for the whole query (here 0: every row sampled)


def test_removed_rows_never_come_back_from_the_ann(
    tmp_path: Path, memory: Memory, exact: DerivedIndex
) -> None:
    with _built(tmp_path, memory) as index:
        gone = [
            memory.get(h.memory_id, tenant=TENANT).source_event_id
            for h in exact.search_vectors(QUERIES[0], tenant=TENANT, k=5)
        ]
        twin = _turn(memory, 1000, "cat shelter pepper item7")
        # two rows of one text (one subject, one speaker): one vector, one key in the graph
        kept, dropped = (_turn(memory, n, "cat shelter pepper twins") for n in (1006, 1012))
        index.sync(memory.store)
        exact.sync(memory.store)
        both = index.search_vectors("cat shelter pepper twins", tenant=TENANT, k=2)
        assert {h.memory_id for h in both} == {kept, dropped} and _graph(index).vectors == 302
        memory.forget(memory.get(dropped, tenant=TENANT).source_event_id, tenant=TENANT)
        for event_id in gone:
            memory.forget(event_id, tenant=TENANT)
        memory.revoke(_clustered(memory, 1, start=2000)[0], tenant=TENANT)
        index.sync(memory.store)
        exact.sync(memory.store)
        live = {h.memory_id for h in exact.search_vectors(QUERIES[0], tenant=TENANT, k=1000)}
        assert twin in live and kept in live and len(live) == 300 + 2 - len(gone)
        for query in (*QUERIES, "cat shelter pepper item7", "cat shelter pepper twins"):
            found = index.search_vectors(query, tenant=TENANT, k=50)
            assert {h.memory_id for h in found} <= live
            _same(found, exact.search_vectors(query, tenant=TENANT, k=50))
        assert index.vector_searches["ann"] == len(QUERIES) + 4
        (hit, *_) = index.search_vectors("cat shelter pepper twins", tenant=TENANT, k=1)
        assert hit.memory_id == kept


def test_a_row_removed_while_the_graph_was_on_disk_is_never_returned(
    tmp_path: Path, memory: Memory, exact: DerivedIndex
) -> None:
    _saved(tmp_path)  # the new graph
    removed = exact.search_vectors(QUERIES[2], tenant=TENANT, k=3)
    for hit in removed:
        memory.forget(memory.get(hit.memory_id, tenant=TENANT).source_event_id, tenant=TENANT)
    exact.sync(memory.store)  # another handle applies the removals; the file is stale now
    with _index(tmp_path) as index:
        found = index.search_vectors(QUERIES[2], tenant=TENANT, k=50)
        status = _graph(index)
        assert (status.loads, status.builds, status.repaired) == (1, 0, len(removed))
        assert not {h.memory_id for h in found} & {h.memory_id for h in removed}
        _same(found, exact.search_vectors(QUERIES[2], tenant=TENANT, k=50))


def _saved(tmp_path: Path, memory: Memory | None = None) -> Path:
    """Build (after a sync from ``memory``'s store when given) and save the graph; the
    folder it is in."""
    with _built(tmp_path, memory):
        pass
    folder = ann_folder(tmp_path / "m.index")
    assert sorted(p.suffix for p in folder.iterdir()) == [".json", ".usearch"]
    return folder


@pytest.mark.parametrize("damage", ["deleted", "truncated", "garbage", "sidecar", "epoch"])
def test_a_missing_or_damaged_file_is_rebuilt(
    tmp_path: Path, memory: Memory, exact: DerivedIndex, damage: str
) -> None:
    folder = _saved(tmp_path, memory)
    (graph_file,) = folder.glob("*.usearch")
    (sidecar,) = folder.glob("*.json")
    if damage == "deleted":
        graph_file.unlink()
    elif damage == "truncated":
        graph_file.write_bytes(graph_file.read_bytes()[:-100])
    elif damage == "garbage":
        data = bytearray(graph_file.read_bytes())
        data[len(data) // 2] ^= 0xFF  # same size: only the checksum tells
        graph_file.write_bytes(bytes(data))
    elif damage == "sidecar":
        sidecar.write_text("{not json")
    else:
        body = json.loads(sidecar.read_text())
        sidecar.write_text(json.dumps({**body, "epoch": body["epoch"] - 1}))
    with _index(tmp_path) as index:
        for query in QUERIES:
            _same(
                index.search_vectors(query, tenant=TENANT, k=10),
                exact.search_vectors(query, tenant=TENANT, k=10),
            )
        assert (_graph(index).loads, _graph(index).builds) == (0, 1)
    with _index(tmp_path) as reopened:
        reopened.search_vectors(QUERIES[0], tenant=TENANT, k=10)
        assert (_graph(reopened).loads, _graph(reopened).builds) == (1, 0)  # saved again


def test_a_stale_file_is_repaired_on_load(
    tmp_path: Path, memory: Memory, exact: DerivedIndex
) -> None:
    folder = _saved(tmp_path, memory)
    old = tmp_path / "old"
    shutil.copytree(folder, old)
    added = _clustered(memory, 20, start=500)
    removed = exact.search_vectors(QUERIES[4], tenant=TENANT, k=4)
    for hit in removed:
        memory.forget(memory.get(hit.memory_id, tenant=TENANT).source_event_id, tenant=TENANT)
    _saved(tmp_path, memory)
    shutil.rmtree(folder)
    shutil.copytree(old, folder)  # the graph from before the changes
    exact.sync(memory.store)
    with _index(tmp_path) as index:
        found = index.search_vectors(QUERIES[4], tenant=TENANT, k=60)
        assert _graph(index).loads == 1 and _graph(index).repaired == len(added) + len(removed)
        assert not {h.memory_id for h in found} & {h.memory_id for h in removed}
        assert {h.memory_id for h in found} & set(added)
        _same(found, exact.search_vectors(QUERIES[4], tenant=TENANT, k=60))


def test_rebuild_and_reindex_recreate_the_graph(
    tmp_path: Path, memory: Memory, exact: DerivedIndex
) -> None:
    folder = _saved(tmp_path, memory)
    before = json.loads(next(folder.glob("*.json")).read_text())
    memory._index = _index(tmp_path)  # what Memory.reindex rebuilds
    try:
        memory.reindex()
        after = json.loads(next(folder.glob("*.json")).read_text())
        assert after["epoch"] > before["epoch"] and after["size"] == before["size"]
        assert _graph(memory.index).builds == 1 and _graph(memory.index).saves == 1
        searches = memory.index.vector_searches["ann"]
        exact.rebuild(memory.store)  # another handle's rebuild: a new epoch, no graph
        assert not list(folder.iterdir())
        _same(
            memory.index.search_vectors(QUERIES[1], tenant=TENANT, k=10),
            exact.search_vectors(QUERIES[1], tenant=TENANT, k=10),
        )
        assert memory.index.vector_searches["ann"] == searches + 1
        assert _graph(memory.index).builds == 1  # a new graph for the new epoch
    finally:
        memory.index.close()


def test_another_embedder_resets_the_index_and_drops_the_graph(
    tmp_path: Path, memory: Memory
) -> None:
    folder = _saved(tmp_path, memory)
    with DerivedIndex(
        tmp_path / "m.index", embedder=HashingEmbedder(dimensions=64), ann_threshold=THRESHOLD
    ):
        assert not list(folder.iterdir())


def test_subject_scoped_searches_never_use_the_ann(
    tmp_path: Path, memory: Memory, exact: DerivedIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _built(tmp_path) as index:
        asked: list[int] = []
        original = TenantAnn.candidates

        def spy(self: TenantAnn, vector: object, *, k: int) -> object:
            asked.append(k)
            return original(self, vector, k=k)  # type: ignore[arg-type]

        monkeypatch.setattr(TenantAnn, "candidates", spy)
        for query in QUERIES:
            for subjects in ([SUBJECTS[0]], list(SUBJECTS), ["nobody"]):
                assert index.search_vectors(
                    query, tenant=TENANT, k=10, subjects=subjects
                ) == exact.search_vectors(query, tenant=TENANT, k=10, subjects=subjects)
        assert asked == [] and index.vector_searches == {"exact": 18, "ann": 1}
        index.search_vectors(QUERIES[0], tenant=TENANT, k=7)
        assert asked == [7]


def test_below_the_threshold_or_without_usearch_searches_stay_exact(
    tmp_path: Path, memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = Memory(open_store(tmp_path / "small.db"), clock=FrozenClock(day(10, 2)))
    _clustered(other, THRESHOLD - 1)
    small = DerivedIndex(tmp_path / "small.index", embedder=HashingEmbedder(), ann_threshold=100)
    try:
        small.sync(other.store)
        small.search_vectors(QUERIES[0], tenant=TENANT, k=10)
        assert small.vector_searches == {"exact": 1, "ann": 0}
        _clustered(other, 1, start=THRESHOLD - 1)  # the hundredth live row
        small.sync(other.store)
        small.search_vectors(QUERIES[0], tenant=TENANT, k=10)
        assert small.vector_searches == {"exact": 1, "ann": 1}
    finally:
        small.close()
        other.close()
    monkeypatch.setattr(_ann, "available", lambda: False)
    with _built(tmp_path, memory) as index:
        assert index.vector_searches == {"exact": 1, "ann": 0}
        assert not ann_folder(tmp_path / "m.index").exists()


def test_sync_follows_the_rows_and_saves_only_when_enough_changed(
    tmp_path: Path, memory: Memory, exact: DerivedIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _built(tmp_path) as index:
        index.sync(memory.store)  # saves the new graph
        assert _graph(index).saves == 1
        for query in QUERIES:
            index.search_vectors(query, tenant=TENANT, k=10)
        assert _graph(index).saves == 1  # never per query
        new = _turn(memory, 3000, "a hot air balloon ride over cappadocia")
        index.sync(memory.store)
        assert _graph(index).saves == 1  # one change: not worth writing the file
        (hit, *_) = index.search_vectors("balloon ride cappadocia", tenant=TENANT, k=5)
        assert hit.memory_id == new and _graph(index).vectors == 301
        monkeypatch.setattr(_ann, "save_after", lambda size: 1)
        _turn(memory, 3001, "snorkelling at the reef in belize")
        index.sync(memory.store)
        assert _graph(index).saves == 2
        sidecar = json.loads(next(ann_folder(tmp_path / "m.index").glob("*.json")).read_text())
        assert sidecar["size"] == 302 and sidecar["stamp"] == index._stamp


def test_a_matrix_read_again_after_a_prune_is_followed_whole(
    tmp_path: Path, memory: Memory, exact: DerivedIndex
) -> None:
    with DerivedIndex(
        tmp_path / "m.index", embedder=HashingEmbedder(), ann_threshold=THRESHOLD, prune_after=1
    ) as index:
        index.search_vectors(QUERIES[3], tenant=TENANT, k=10)
        removed = exact.search_vectors(QUERIES[3], tenant=TENANT, k=2)
        for hit in removed:
            memory.forget(memory.get(hit.memory_id, tenant=TENANT).source_event_id, tenant=TENANT)
        index.sync(memory.store)  # prunes: the matrix is read again whole
        exact.sync(memory.store)
        found = index.search_vectors(QUERIES[3], tenant=TENANT, k=20)
        assert not {h.memory_id for h in found} & {h.memory_id for h in removed}
        _same(found, exact.search_vectors(QUERIES[3], tenant=TENANT, k=20))
        assert _graph(index).vectors == 298


def test_tenants_get_graphs_of_their_own(tmp_path: Path, memory: Memory) -> None:
    _clustered(memory, 120, tenant="globex/eu:team+1@x")
    with _index(tmp_path) as index:
        index.sync(memory.store)
        for tenant in (TENANT, "globex/eu:team+1@x"):
            hits = index.search_vectors(QUERIES[0], tenant=tenant, k=20)
            assert {h.tenant for h in hits} == {tenant}
        assert index.vector_searches == {"exact": 0, "ann": 2}
        assert len(list(ann_folder(tmp_path / "m.index").glob("*.usearch"))) == 0  # not saved
        index.sync(memory.store)  # saves both
        assert len(list(ann_folder(tmp_path / "m.index").glob("*.usearch"))) == 2


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "100"])
def test_a_bad_threshold_is_refused(tmp_path: Path, bad: object) -> None:
    with pytest.raises(InvalidInputError, match="ann_threshold"):
        DerivedIndex(tmp_path / "x.index", ann_threshold=bad)  # type: ignore[arg-type]


def test_an_erasure_rebuilds_the_graph_without_the_erased_vectors(
    tmp_path: Path, memory: Memory
) -> None:
    """usearch marks a removed key deleted and keeps its vector in the file; after an
    erasure the tenant's graph is built again from its live rows and saved over it."""
    import numpy as np

    from memledger.index.lexical import entry_text

    folder = _saved(tmp_path, memory)
    with _index(tmp_path) as index:
        (graph_file,) = folder.glob("*.usearch")
        gone = [memory.get(h.memory_id, tenant=TENANT) for h in index.search_vectors(
            QUERIES[2], tenant=TENANT, k=3)]  # fmt: skip
        vectors = [
            np.asarray(v, dtype=np.float16).tobytes()
            for v in HashingEmbedder().embed([entry_text(r) for r in gone])
        ]
        assert all(v in graph_file.read_bytes() for v in vectors)
        for record in gone:
            memory.erase(tenant=TENANT, event=record.source_event_id, reason="asked")
        index.sync(memory.store)
        index.search_vectors(QUERIES[2], tenant=TENANT, k=10)  # the graph follows...
    # ...and is saved with the removed vectors still in it
    assert any(v in graph_file.read_bytes() for v in vectors)
    with _index(tmp_path) as index:
        index.purge(TENANT)
        assert not any(v in graph_file.read_bytes() for v in vectors)
        status = _graph(index)
        assert status.builds == 1
        found = index.search_vectors(QUERIES[2], tenant=TENANT, k=50)
        assert not {h.memory_id for h in found} & {r.memory_id for r in gone}
