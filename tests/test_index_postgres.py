"""The derived index in PostgreSQL against the SQLite index it must rank like: FTS5's
tokens, the same hits and scores on the same records, tenants and subjects kept apart
inside the query, its HNSW path for large tenants, and its reset on a changed schema.

(The behaviour both indexes share, feeding, lag, rebuilds, degradation, windows and
neighbours, runs on both in ``test_derived_index.py``.)"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from psycopg import sql as psycopg_sql

from memledger import Claim, Memory
from memledger.domain.keys import namespace_of
from memledger.errors import InvalidInputError
from memledger.index._fts import table_name
from memledger.index._tokens import tokens
from memledger.index.backends import open_index
from memledger.index.derived import DerivedIndex
from memledger.index.embedders import HashingEmbedder
from memledger.index.postgres import PostgresIndex
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.postgres import PostgresServer
from memledger.testing.scenarios import day, event
from test_derived_index import FlakyEmbedder, texts

WORDS = (
    "running runs ran runner connection connected connecting generalization generously"
    " happily happiness sky skies agreed agreement e.g. app.route step-by-step 3.14"
    " naïve café Zürich résumé ÉCOLE don't it's U.S.A. hello_world x2 2024-05-01 ab a"
    " relational conditional rational valency hesitancy digitizer conformabli radicalli"
    " differentli vileli analogousli vietnamization predication operator feudalism"
    " decisiveness hopefulness callousness formaliti sensitiviti sensibiliti triplicate"
    " formative formalize electriciti electrical hopeful goodness revival allowance"
    " inference airliner gyroscopic adjustable defensible irritant replacement adjustment"
    " dependent adoption homologou communism activate angulariti homologous effective"
    " bowdlerize probate rate cease controll roll  Москва 東京 emoji😀ok"
).split()


def test_tokens_are_those_of_fts5_porter_unicode61() -> None:
    """Every word of a vocabulary chosen for Porter's steps, punctuation, diacritics,
    digits and other scripts, and sentences made of them, tokenise as FTS5 does."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE p USING fts5(text, tokenize = 'porter unicode61')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(p, instance)")
    texts = [*WORDS, " ".join(WORDS), "The RUNNERS ran; e.g. connect-ing, naïvely!"]
    for n, text in enumerate(texts, start=1):
        db.execute("INSERT INTO p (rowid, text) VALUES (?, ?)", (n, text))
    found: dict[int, list[str]] = {}
    for term, doc in db.execute("SELECT term, doc FROM v ORDER BY doc, offset"):
        found.setdefault(doc, []).append(term)
    emoji = {n for n, t in enumerate(texts, start=1) if "😀" in t}  # FTS5 keeps it, see module
    for n, text in enumerate(texts, start=1):
        if n not in emoji:
            assert tokens(text) == found.get(n, []), text


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([w for w in WORDS if "😀" not in w]), min_size=1, max_size=12))
def test_any_sentence_of_those_words_tokenises_as_fts5(words: list[str]) -> None:
    text = " ".join(words)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE p USING fts5(text, tokenize = 'porter unicode61')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(p, instance)")
    db.execute("INSERT INTO p (rowid, text) VALUES (1, ?)", (text,))
    assert tokens(text) == [t for (t,) in db.execute("SELECT term FROM v ORDER BY offset")]


# -- the same records in both backends -----------------------------------------------------

TURNS = (
    ("caroline", "I went to the LGBTQ support group yesterday and it was so powerful."),
    ("melanie", "That's great! I'm painting a sunset with my kids these days."),
    ("caroline", "Researching adoption agencies: I want to give kids a loving home."),
    ("melanie", "We went camping at the beach; the kids loved roasting marshmallows."),
    ("caroline", "My running group meets on Tuesdays, running helps me think."),
    ("melanie", "Pottery class again! I made a bowl, then painted it blue."),
    ("caroline", "The counseling certification course starts next month."),
    ("melanie", "My kids are into dinosaurs; we visited the museum on Sunday."),
)
QUERIES = (
    "When did Caroline go to the support group?",
    "What did Melanie paint?",
    "adoption agencies kids home",
    "running Tuesdays",
    "What are Melanie's kids into? museum dinosaurs",
    "pottery bowl painted",
    "certification counseling course",
    "camping beach marshmallows roasting",
    "who runs the running group? painting painted",  # terms that stem alike count twice
)


def fill(memory: Memory, *, tenant: str = "acme") -> None:
    """The turns above in two sessions of two subjects, plus one stated claim each."""
    for n, (speaker, text) in enumerate(TURNS):
        subject = "caroline" if n % 2 == 0 else "melanie"
        at = day(10, 1 + n // 4, 9 + n)
        claim = Claim(
            family="conversation",
            kind="episode",
            statement=text,
            value={"text": text, "speaker": speaker, "session": f"s{n // 4}"},
            scope=f"turn:t{n}",
        )
        memory.ingest(event(f"t{n}", text, occurred_at=at, tenant=tenant, subject=subject), [claim])


@pytest.fixture
def pair(postgres: PostgresServer, tmp_path: Path) -> Iterator[tuple[Memory, Memory]]:
    lite = Memory(open_store(tmp_path / "m.db"), clock=FrozenClock(day(10, 2)))
    pg = Memory(open_store(postgres.create_database()), clock=FrozenClock(day(10, 2)))
    for memory in (lite, pg):
        fill(memory)
        fill(memory, tenant="globex")
    yield lite, pg
    lite.close()
    pg.close()


def _same(a: list[object], b: list[object]) -> None:
    """The same hits, in the same order, with the same scores (to float rounding)."""
    assert [h.memory_id for h in a] == [h.memory_id for h in b]  # type: ignore[attr-defined]
    for x, y in zip(a, b, strict=True):
        assert x.score == pytest.approx(y.score, rel=1e-9, abs=1e-9)  # type: ignore[attr-defined]


def test_both_backends_rank_the_same_records_alike(
    pair: tuple[Memory, Memory], tmp_path: Path
) -> None:
    lite, pg = pair
    with (
        DerivedIndex(tmp_path / "m.index", embedder=HashingEmbedder()) as sqlite_index,
        PostgresIndex(pg.store, embedder=HashingEmbedder()) as pg_index,
    ):
        assert sqlite_index.sync(lite.store) == pg_index.sync(pg.store) > 0
        compared = 0
        for query in QUERIES:
            for subjects in (None, ["caroline"], ["caroline", "melanie"]):
                for windows in (False, True):
                    a = sqlite_index.search(
                        query, tenant="acme", k=5, subjects=subjects, windows=windows
                    )
                    b = pg_index.search(
                        query, tenant="acme", k=5, subjects=subjects, windows=windows
                    )
                    _same(a, b)  # type: ignore[arg-type]
                    compared += len(a)
                a = sqlite_index.search_vectors(query, tenant="acme", k=5, subjects=subjects)
                b = pg_index.search_vectors(query, tenant="acme", k=5, subjects=subjects)
                # pgvector sums in another order than numpy: cosines agree to float32
                # rounding, so only near-ties (within 1e-6) may swap places
                assert len(a) == len(b)
                for x, y in zip(a, b, strict=True):
                    assert x.cosine == pytest.approx(y.cosine, abs=1e-6)
                    assert x.score == pytest.approx(y.score, abs=1e-6)
                    if x.memory_id != y.memory_id:
                        assert y.memory_id in {
                            h.memory_id for h in a if abs(h.cosine - x.cosine) < 1e-6
                        } or x.cosine == pytest.approx(a[-1].cosine, abs=1e-6)
                compared += len(a)
        assert compared > 150  # the queries found things to compare
        assert sqlite_index.names("acme") == pg_index.names("acme")
        ids = [h.memory_id for h in sqlite_index.search("kids", tenant="acme", k=8)]
        assert sqlite_index.neighbours("acme", ids, window=2) == pg_index.neighbours(
            "acme", ids, window=2
        )
        assert sqlite_index.speakers("acme", ids) == pg_index.speakers("acme", ids)


def test_recall_through_memory_uses_the_index_in_the_database(pair: tuple[Memory, Memory]) -> None:
    """``Memory.open("postgresql://...")`` reads the PostgreSQL index, and recalls what
    the SQLite store's recall does."""
    lite, pg = pair
    assert isinstance(pg.index, PostgresIndex) and isinstance(lite.index, DerivedIndex)
    for query in QUERIES:
        a = lite.recall(query, tenant="acme", k=5)
        b = pg.recall(query, tenant="acme", k=5)
        assert [i.record.memory_id for i in a.items] == [i.record.memory_id for i in b.items], query
    # a recall syncs its own tenant only
    assert pg.index.status().entries == len(TURNS) and pg.index.lag(pg.store, tenant="acme") == 0


# -- incremental feeding: windows of turns that arrive out of order, and leave ------------------

steps = st.lists(
    st.one_of(
        st.tuples(
            st.just("say"),
            st.sampled_from(["s1", "s2"]),
            st.integers(min_value=0, max_value=40),
            st.sampled_from(
                [
                    "pottery class bowl",
                    "running group",
                    "kids museum dinosaurs",
                    "adoption agency",
                    "sunset painting beach",
                ]
            ),
        ),
        st.tuples(st.just("revoke"), st.integers(min_value=0, max_value=30)),
    ),
    min_size=1,
    max_size=14,
)


def _windows(index: DerivedIndex | PostgresIndex, memory: Memory) -> dict[str, object]:
    """Each live turn's window document, as its tokens with counts, and its length."""
    out: dict[str, object] = {}
    if isinstance(index, PostgresIndex):
        with index._connection() as conn:
            rows = conn.execute(
                f"SELECT e.memory_id, e.win_length, p.lexeme, p.tf FROM {index.ns}.entries e"
                f" LEFT JOIN {index.ns}.win_postings p ON p.tenant = e.tenant AND p.doc = e.id"
                " WHERE e.tenant = 'acme'"
            ).fetchall()
        for memory_id, length, lexeme, tf in rows:
            entry = out.setdefault(memory_id, [length, {}])
            if lexeme is not None:
                entry[1][lexeme] = tf  # type: ignore[index]
        return out
    table = table_name("acme", "win")
    if not index._conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone():
        return {}  # nothing said yet
    for memory_id, length, text in index._conn.execute(
        f"SELECT e.memory_id, e.win_length, w.text FROM entries e LEFT JOIN {table} w"
        " ON w.rowid = e.id WHERE e.tenant = 'acme'"
    ):
        counts: dict[str, int] = {}
        for token in tokens(text or ""):
            counts[token] = counts.get(token, 0) + 1
        out[memory_id] = [length, counts]
    return out


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(script=steps)
@example(  # a turn in the middle of a session leaves: both sides' windows move
    script=[("say", "s1", m, "running group") for m in (5, 1, 9, 3, 7, 11)] + [("revoke", 3)]
)
@example(script=[("say", "s1", m, "kids museum dinosaurs") for m in (9, 7, 5, 3, 1, 0)])
def test_windows_fed_one_change_at_a_time_match_the_sqlite_index(
    postgres: PostgresServer, tmp_path_factory: pytest.TempPathFactory, script: list[tuple]
) -> None:
    """Turns said out of time order into two sessions, some revoked, each change synced
    on its own: every turn's window (its words and length) and the statistics are the
    SQLite index's, and a rebuild gives the same."""
    folder = tmp_path_factory.mktemp("win")
    lite = Memory(open_store(folder / "m.db"), clock=FrozenClock(day(10, 2)))
    pg = Memory(open_store(postgres.create_database()), clock=FrozenClock(day(10, 2)))
    a = DerivedIndex(folder / "m.index")
    b = PostgresIndex(pg.store)
    said: list[str] = []
    try:
        for n, step in enumerate(script):
            for memory, index in ((lite, a), (pg, b)):
                if step[0] == "say":
                    _, session, minute, words = step
                    claim = Claim(
                        family="conversation", kind="episode", statement=words,
                        value={"text": f"{words} {n}", "speaker": "ann", "session": session},
                        scope=f"turn:t{n}",
                    )  # fmt: skip
                    at = day(10, 1, 9, minute)
                    receipt = memory.ingest(
                        event(f"t{n}", words, occurred_at=at, subject="ann"), [claim]
                    )
                    if memory is lite:
                        said.append(receipt.results[0].memory_id or "")
                elif said:
                    victim = said[step[1] % len(said)]
                    if memory.get(victim, tenant="acme").status == "active":
                        memory.revoke(victim, tenant="acme", reason="test")
                index.sync(memory.store)
        assert _windows(b, pg) == _windows(a, lite)
        for query in ("pottery running", "kids adoption sunset beach"):
            _same(a.search(query, tenant="acme", k=8, windows=True),
                  b.search(query, tenant="acme", k=8, windows=True))  # fmt: skip
        before = _windows(b, pg)
        b.rebuild(pg.store)
        assert _windows(b, pg) == before  # by memory id: the entries' own ids change
    finally:
        a.close()
        b.close()
        lite.close()
        pg.close()


# -- tenants and subjects inside the query ---------------------------------------------------


def _say(memory: Memory, tenant: str, docs: list[str], *, start: int, subject: str) -> None:
    for n, text in enumerate(docs, start=start):
        claim = Claim(
            family="conversation",
            kind="episode",
            statement=text,
            value={"text": text, "speaker": "u", "session": "s"},
            scope=f"turn:e{n}",
        )
        at: datetime = day(10, 1, n % 20)
        memory.ingest(event(f"e{n}", text, occurred_at=at, tenant=tenant, subject=subject), [claim])


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(shared=texts, others=texts)
def test_another_tenants_or_subjects_documents_never_change_scores(
    postgres: PostgresServer, shared: list[str], others: list[str]
) -> None:
    """Scores of one tenant, and of one subject, are the same before and after another
    tenant (and another subject of the same tenant) gets more documents."""
    memory = Memory(open_store(postgres.create_database()), clock=FrozenClock(day(10, 1)))
    index = PostgresIndex(memory.store, embedder=HashingEmbedder())
    try:
        _say(memory, "acme", shared, start=0, subject="ann")
        _say(memory, "globex", shared, start=0, subject="ann")
        index.sync(memory.store)

        def answers() -> list[object]:
            query = "digest friday sushi trip"
            return [
                index.search(query, tenant="acme", k=10),
                index.search(query, tenant="acme", k=10, windows=True),
                index.search(query, tenant="globex", k=10, subjects=["ann"]),
                index.search_vectors(query, tenant="acme", k=10),
                index.search_vectors(query, tenant="globex", k=10, subjects=["ann"]),
            ]

        before = answers()
        _say(memory, "globex", others, start=100, subject="bob")
        _say(memory, "acme-2", others, start=100, subject="ann")
        index.sync(memory.store)
        assert answers() == before
        assert all(h.tenant == "acme" for h in before[0])  # type: ignore[attr-defined]
    finally:
        index.close()
        memory.close()


# -- the HNSW path, resets, errors -------------------------------------------------------------


def test_a_large_tenant_searches_its_own_hnsw_index(postgres: PostgresServer) -> None:
    memory = Memory(open_store(postgres.create_database()), clock=FrozenClock(day(10, 2)))
    index = PostgresIndex(memory.store, embedder=HashingEmbedder(), ann_threshold=6)
    try:
        fill(memory)
        fill(memory, tenant="small")
        _say(memory, "small", ["one more"], start=50, subject="x")
        _say(memory, "tiny", ["tiny tenant words"], start=50, subject="x")
        index.sync(memory.store)
        assert index.ann_status("acme") is None  # not built yet
        exact = index.search_vectors("kids painting sunset", tenant="acme", k=3)
        assert index.vector_searches == {"exact": 0, "ann": 1}
        status = index.ann_status("acme")
        assert status is not None and status.vectors == len(TURNS) and status.searches == 1

        def graphs() -> int:
            with index._connection() as conn:
                (count,) = conn.execute(
                    "SELECT count(*) FROM pg_indexes WHERE schemaname = %s"
                    " AND indexname LIKE 'hnsw_%%'",
                    (index.ns,),
                ).fetchone()
            return int(count)

        assert graphs() == 1  # the searched tenant's own, none for the whole table
        assert index.warm("small") is not None and graphs() == 2
        assert index.warm("tiny") is None and graphs() == 2  # below the threshold
        assert exact[0].text.startswith("melanie: That's great")
        # subject-scoped searches stay exact, and another tenant's rows never show up
        scoped = index.search_vectors("kids", tenant="acme", k=20, subjects=["melanie"])
        assert index.vector_searches["exact"] == 1
        assert {h.subject for h in scoped} == {"melanie"}
        assert all(h.tenant == "acme" for h in index.search_vectors("kids", tenant="acme", k=20))
        # the planner can serve the candidates query from the tenant's own index (with
        # so few rows it would rather scan and sort, hence both off)
        with index._transaction() as conn:
            conn.execute("SET LOCAL enable_seqscan = off")
            conn.execute("SET LOCAL enable_sort = off")
            plan = conn.execute(
                psycopg_sql.SQL("EXPLAIN ") + index._ann_query("acme"),
                {"q": HashingEmbedder().embed(["kids"])[0], "n": 5},
            ).fetchall()
        assert any("hnsw_" in line for (line,) in plan), plan
        with PostgresIndex(memory.store, embedder=HashingEmbedder(), ann_threshold=None) as plain:
            assert plain.search_vectors("kids painting sunset", tenant="acme", k=3) == exact
            assert plain.ann_status("acme") is None
    finally:
        index.close()
        memory.close()


def test_vectors_backfilled_after_a_failing_embedder_count_towards_the_hnsw_threshold(
    postgres: PostgresServer,
) -> None:
    memory = Memory(open_store(postgres.create_database()), clock=FrozenClock(day(10, 2)))
    flaky = FlakyEmbedder()
    index = PostgresIndex(memory.store, embedder=flaky, ann_threshold=len(TURNS))
    try:
        fill(memory)
        index.sync(memory.store)
        assert index.status().vectors == 0 and index.warm("acme") is None
        flaky.failing = False
        index.sync(memory.store)  # backfills
        assert index.status().vectors == len(TURNS)
        status = index.warm("acme")
        assert status is not None and status.vectors == len(TURNS)
    finally:
        index.close()
        memory.close()


def test_a_changed_schema_or_tokenizer_resets_the_index_on_open(postgres: PostgresServer) -> None:
    memory = Memory(open_store(postgres.create_database()), clock=FrozenClock(day(10, 2)))
    try:
        fill(memory)
        for key in ("schema", "tokens"):
            with PostgresIndex(memory.store) as index:
                index.sync(memory.store)
                assert index.status().entries == len(TURNS)
                with index._connection() as conn:
                    conn.execute(f"UPDATE {index.ns}.meta SET value = 'old' WHERE key = %s", (key,))
            with PostgresIndex(memory.store) as index:
                assert (index.cursor, index.status().entries) == (0, 0), key
                assert index.search("kids", tenant="acme", k=3) == []
                index.sync(memory.store)
                assert index.search("kids", tenant="acme", k=3)
    finally:
        memory.close()


def test_open_index_picks_the_backend_and_bad_options_are_refused(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    lite = open_store(tmp_path / "m.db")
    pg = open_store(postgres.create_database())
    try:
        with open_index(lite) as a, open_index(pg) as b:
            assert isinstance(a, DerivedIndex) and isinstance(b, PostgresIndex)
        with pytest.raises(InvalidInputError, match="PostgreSQL store"):
            PostgresIndex(lite)
        for bad in ("Bad-Name", "1x", "", "x" * 64):
            with pytest.raises(InvalidInputError, match="namespace"):
                PostgresIndex(pg, namespace=bad)
        with pytest.raises(InvalidInputError, match="ann_threshold"):
            PostgresIndex(pg, ann_threshold=0)
    finally:
        lite.close()
        pg.close()


def test_names_of_a_private_namespace_count_for_its_readers_on_both_backends(
    pair: tuple[Memory, Memory], tmp_path: Path
) -> None:
    """A speaker heard only in ``agent:bo``'s namespace is a name for a reader of it, not
    for another; heard in the shared namespace too, it is everyone's."""
    lite, pg = pair

    def said(memory: Memory, n: int, speaker: str, subject: str) -> None:
        text = f"Turn {n} by {speaker}."
        claim = Claim(
            family="conversation",
            kind="episode",
            statement=text,
            value={"text": text, "speaker": speaker, "session": "p"},
            scope=f"turn:p{n}",
        )
        memory.ingest(event(f"p{n}", text, occurred_at=day(10, 2), subject=subject), [claim])

    def reads(*namespaces: str) -> Callable[[str], bool]:
        return lambda name: namespace_of(name) is None or namespace_of(name) in namespaces

    with (
        DerivedIndex(tmp_path / "m.index") as sqlite_index,
        PostgresIndex(pg.store) as pg_index,
    ):
        shared = {"caroline", "melanie"}
        for step, (speaker, subject) in enumerate(
            (("bartholomew", "agent:bo/x"), ("bartholomew", "caroline"))
        ):
            for memory, index in ((lite, sqlite_index), (pg, pg_index)):
                said(memory, step, speaker, subject)
                index.sync(memory.store)
                assert index.names("acme", visible=reads("agent:bo")) == {
                    *shared,
                    "bartholomew",
                    "agent:bo/x",
                }
                assert index.names("acme", visible=reads()) == (
                    shared | {"bartholomew"} if step else shared
                )
                assert index.glance("acme").names == index.names("acme")
