"""Recall under the hardening of issue 9: subjects stay apart, revoked words stay gone,
and one tenant's writes never become another tenant's work."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memledger import Actor, Grant, Memory, SourceEvent
from memledger.domain.redact import contains, revoked_words
from memledger.index.derived import DerivedIndex
from memledger.index.embedders import HashingEmbedder
from memledger.read.recall import RecallResult
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.scenarios import fact
from memledger.write.worker import episode_of

START = datetime(2026, 3, 1, 9, tzinfo=UTC)
ASKED = START + timedelta(days=3)
_folders = itertools.count()


def _open(folder: Path, *, embedder: bool = True) -> Memory:
    folder.mkdir(parents=True, exist_ok=True)
    index = DerivedIndex(folder / "m.index", embedder=HashingEmbedder() if embedder else None)
    return Memory(open_store(folder / "m.db"), clock=FrozenClock(ASKED), index=index)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    memory = _open(tmp_path)
    yield memory
    memory.close()


def _turn(
    n: int,
    subject: str,
    text: str,
    *,
    tenant: str = "acme",
    speaker: str | None = None,
    session: str | None = None,
) -> SourceEvent:
    return SourceEvent(
        tenant=tenant,
        event_id=f"t{n}",
        subject=subject,
        actor=Actor(
            id=speaker or subject, authenticated=True, grants=frozenset({Grant(family="*")})
        ),
        channel="chat",
        occurred_at=START + timedelta(minutes=n),
        text=text,
        metadata={} if session is None else {"session": session},
    )


def _subjects(result: RecallResult) -> set[str]:
    return {item.record.subject for item in result.items}


# -- defect 1: a subject-scoped read never crosses the subject --------------------------------


@pytest.mark.parametrize("session", [None, "shared"])
def test_a_subject_scoped_recall_returns_only_that_subjects_records(
    memory: Memory, session: str | None
) -> None:
    turns = [
        ("u1", "Did you see the hiking trail by the river?"),
        ("u2", "My bank PIN is 4417."),
        ("u1", "The hiking trail by the river was beautiful."),
    ]
    for n, (subject, text) in enumerate(turns):
        memory.ingest(_turn(n, subject, text, session=session))
    memory.process()
    result = memory.recall("hiking trail by the river", tenant="acme", subject="u1")
    assert result.items and _subjects(result) == {"u1"}
    for item in result.items:
        assert all(memory.get(m, tenant="acme").subject == "u1" for m in item.context)
    assert not any("4417" in str(item.record.value) for item in result.items)
    # another subject's records are not even named among the exclusions
    theirs = {r.memory_id for r in memory.timeline("u2", "conversation", tenant="acme")}
    assert theirs and not theirs & {e.memory_id for e in result.excluded}
    # the tenant-wide read still finds both subjects' turns by their own words
    assert _subjects(memory.recall("bank PIN", tenant="acme")) == {"u2"}


def test_a_subject_scoped_recall_knows_only_its_own_people(memory: Memory) -> None:
    memory.ingest(_turn(0, "u1", "We walked the hiking trail all morning."))
    memory.ingest(_turn(1, "u2", "Zelda loves the hiking trail.", speaker="zelda"))
    memory.process()
    scoped = memory.recall(
        "What did Zelda say about the hiking trail?", tenant="acme", subject="u1"
    )
    assert scoped.understood.people == ()
    wide = memory.recall("What did Zelda say about the hiking trail?", tenant="acme")
    assert wide.understood.people == ("zelda",)


def test_subject_scores_do_not_move_with_another_subjects_words(tmp_path: Path) -> None:
    """BM25 statistics of a subject-scoped search are the subject's own: flooding another
    subject with the query's words changes nothing of the subject's scores."""
    mine = [
        "The hiking trail by the river was beautiful.",
        "We packed lunch for the river walk.",
        "The trail was muddy after the rain.",
    ]
    results = []
    for flood in (0, 40):
        memory = _open(tmp_path / f"flood{flood}")
        for n, text in enumerate(mine):
            memory.ingest(_turn(n, "u1", text))
        for n in range(flood):
            memory.ingest(_turn(100 + n, "u2", f"river river trail number {n}", session="x"))
        memory.process()
        result = memory.recall("river trail", tenant="acme", subject="u1", k=5)
        results.append([(i.record.memory_id, round(i.score, 9)) for i in result.items])
        memory.close()
    assert results[0] and results[0] == results[1]


# -- defect 2 through recall: revoked words stay gone, other facts stay --------------------


def _move(memory: Memory) -> dict[str, str]:
    event = _turn(0, "u1", "I moved to Quorvale last week and I work at Initech.")
    claims = [
        fact("home_city", "Lives in Quorvale", "Quorvale", grounding="moved to Quorvale"),
        fact("employer", "Works at Initech", "Initech", grounding="work at Initech"),
        episode_of(event),
    ]
    receipt = memory.ingest(event, claims)
    memory.ingest(_turn(1, "u1", "The weather in the park is lovely today."), [])
    return {r.family: r.memory_id for r in receipt.results if r.memory_id is not None}


@pytest.mark.parametrize("sync", [True, False])
def test_revoked_words_never_come_back_through_recall(memory: Memory, sync: bool) -> None:
    ids = _move(memory)
    memory.index.sync(memory.store)  # the index holds the words before the revocation
    memory.revoke(ids["home_city"], tenant="acme")
    for query in ("Quorvale", "Where did I move to?", "moved to Quorvale last week"):
        result = memory.recall(query, tenant="acme", subject="u1", sync=sync)
        assert not any("Quorvale" in str(i.record.value) for i in result.items), query
    # not synced: the revocation's delete and the episode's re-issue (delete, upsert)
    assert memory.index.lag(memory.store, tenant="acme") == (0 if sync else 3)
    found = memory.recall("Initech", tenant="acme", subject="u1", sync=sync)
    assert ids["employer"] in {i.record.memory_id for i in found.items}


# -- defect 6: a recall's work is its own tenant's ----------------------------------------


def test_a_recall_syncs_only_its_own_tenant(memory: Memory) -> None:
    memory.ingest(_turn(0, "u1", "The hiking trail by the river was beautiful.", tenant="acme"))
    memory.process()
    memory.recall("hiking", tenant="acme")
    for n in range(5):
        memory.ingest(_turn(10 + n, "u9", f"Globex turn number {n} about rivers", tenant="globex"))
    memory.process()
    behind = memory.index.lag(memory.store, tenant="globex")
    assert behind == 5 and memory.index.lag(memory.store, tenant="acme") == 0
    result = memory.recall("hiking", tenant="acme")
    assert result.index_lag == 0 and result.items
    assert memory.index.lag(memory.store, tenant="globex") == behind  # not applied for acme
    assert memory.index.cursor_of("acme") > memory.index.cursor
    wide = memory.recall("rivers", tenant="globex", sync=False)
    assert wide.index_lag == behind and wide.items == ()
    # a sync of every tenant applies globex's rows and skips acme's, applied already
    assert memory.index.sync(memory.store) >= behind
    assert memory.index.lag(memory.store, tenant="globex") == 0
    assert memory.recall("rivers", tenant="globex", sync=False).items


# -- properties -------------------------------------------------------------------------


@dataclass(frozen=True)
class Said:
    tenant: str
    subject: str
    speaker: str
    session: str | None
    words: tuple[str, ...]


VOCABULARY = [
    "river", "trail", "bank", "pin", "garden", "painting", "sunset", "kids", "dog",
    "friday", "concert", "guitar", "Quorvale", "Initech", "counseling", "group",
]  # fmt: skip
_said = st.builds(
    Said,
    tenant=st.sampled_from(["acme", "globex"]),
    subject=st.sampled_from(["u1", "u2", "u3"]),
    speaker=st.sampled_from(["u1", "u2", "mira", "assistant"]),
    session=st.sampled_from([None, "s1", "s2"]),
    words=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=8).map(tuple),
)


def _recalls(
    folder: Path, history: list[tuple[int, Said]], queries: list[str]
) -> list[RecallResult]:
    memory = _open(folder)
    try:
        for n, said in history:
            memory.ingest(
                _turn(
                    n,
                    said.subject,
                    "We talked about " + " ".join(said.words) + ".",
                    tenant=said.tenant,
                    speaker=said.speaker,
                    session=said.session,
                )
            )
        memory.process()
        return [memory.recall(q, tenant="acme", subject="u1", k=5) for q in queries]
    finally:
        memory.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=st.lists(_said, min_size=1, max_size=14),
    queries=st.lists(
        st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3).map(" ".join),
        min_size=1,
        max_size=3,
    ),
)
def test_a_subjects_recall_takes_nothing_from_other_subjects_or_tenants(
    tmp_path_factory: pytest.TempPathFactory, history: list[Said], queries: list[str]
) -> None:
    """The same questions over the whole history and over the subject's turns alone
    give the same records, in the same order, with the same scores and exclusions."""
    folder = tmp_path_factory.mktemp(f"iso{next(_folders)}")
    numbered = list(enumerate(history))  # the same event ids and times in both stores
    alone = [(n, s) for n, s in numbered if (s.tenant, s.subject) == ("acme", "u1")]
    everything = _recalls(folder / "all", numbered, queries)
    own = _recalls(folder / "own", alone, queries)
    for full, solo in zip(everything, own, strict=True):
        assert _subjects(full) <= {"u1"}
        assert [(i.record.memory_id, round(i.score, 9), i.context) for i in full.items] == [
            (i.record.memory_id, round(i.score, 9), i.context) for i in solo.items
        ]
        assert full.excluded == solo.excluded
        assert full.understood.people == solo.understood.people


CITIES = ["Quorvale", "Brindle", "Ostmark", "Velloran"]
EMPLOYERS = ["Initech", "Globodyne", "Umbrex", "Vandelay"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    facts=st.lists(
        st.tuples(st.sampled_from(CITIES), st.sampled_from(EMPLOYERS)),
        min_size=1,
        max_size=4,
        unique_by=(lambda f: f[0], lambda f: f[1]),
    ),
    pick=st.integers(min_value=0, max_value=100),
    which=st.sampled_from(["home_city", "employer", "conversation"]),
    sync=st.booleans(),
)
def test_a_revoked_records_words_leave_every_read_path(
    tmp_path_factory: pytest.TempPathFactory,
    facts: list[tuple[str, str]],
    pick: int,
    which: str,
    sync: bool,
) -> None:
    memory = _open(tmp_path_factory.mktemp(f"rev{next(_folders)}"))
    try:
        events = []
        for n, (city, employer) in enumerate(facts):
            event = _turn(n, "u1", f"I moved to {city} last week and I work at {employer}.")
            events.append(event)
            memory.ingest(
                event,
                [
                    fact(
                        "home_city",
                        f"Lives in {city}",
                        city,
                        grounding=f"moved to {city}",
                        scope=f"move-{n}",  # each event its own slot: nothing supersedes
                    ),
                    fact(
                        "employer",
                        f"Works at {employer}",
                        employer,
                        grounding=f"work at {employer}",
                        scope=f"move-{n}",
                    ),
                    episode_of(event),
                ],
            )
        memory.index.sync(memory.store)
        chosen = events[pick % len(events)]
        (target,) = [
            r
            for r in memory.history("u1", which, tenant="acme")
            if r.source_event_id == chosen.event_id
        ]
        memory.revoke(target.memory_id, tenant="acme")
        gone = {chosen.text} if which == "conversation" else set(revoked_words(target))

        def clean(record_text: str) -> bool:
            return not any(contains(record_text, w) for w in gone)

        same_event = []
        for family in ("home_city", "employer", "conversation"):
            same_event += [
                r
                for view in (
                    memory.timeline("u1", family, tenant="acme"),
                    memory.history("u1", family, tenant="acme"),
                    memory.current("u1", family, tenant="acme", valid_at=chosen.occurred_at),
                    memory.current(
                        "u1", family, tenant="acme", valid_at=chosen.occurred_at, as_of=START
                    ),
                )
                for r in view
                if r.source_event_id == chosen.event_id
            ]
        for word in [*sorted(gone), chosen.text]:
            result = memory.recall(word, tenant="acme", subject="u1", sync=sync, k=20)
            same_event += [
                i.record for i in result.items if i.record.source_event_id == chosen.event_id
            ]
        for record in same_event:
            assert clean(f"{record.claim} {record.value} {record.grounding}"), record
        if which != "conversation":  # the event's other fact stays recallable
            other = "employer" if which == "home_city" else "home_city"
            (kept,) = [
                r
                for r in memory.timeline("u1", other, tenant="acme")
                if r.source_event_id == chosen.event_id
            ]
            result = memory.recall(str(kept.value), tenant="acme", subject="u1", k=20)
            assert kept.memory_id in {i.record.memory_id for i in result.items}
    finally:
        memory.close()


def test_the_recheck_drops_another_subjects_record_without_naming_it(memory: Memory) -> None:
    """Defence in depth: should an index ever hand a subject-scoped read another subject's
    id, the recheck drops it, and does not list it among the exclusions either."""
    from memledger.read.recall import Excluded
    from memledger.read.recheck import Checker

    memory.ingest(_turn(0, "u1", "The hiking trail by the river was beautiful."))
    memory.ingest(_turn(1, "u2", "My bank PIN is 4417."))
    memory.process()
    (mine,) = memory.timeline("u1", "conversation", tenant="acme")
    (theirs,) = memory.timeline("u2", "conversation", tenant="acme")
    kept: dict[str, object] = {}
    excluded: list[Excluded] = []
    with memory.store.read() as unit:
        checker = Checker(unit, tenant="acme", subject="u1", at=ASKED, now=ASKED, indexed={})
        checker.admit([mine.memory_id, theirs.memory_id], kept, excluded)  # type: ignore[arg-type]
    assert list(kept) == [mine.memory_id] and excluded == []


def test_a_sync_of_every_tenant_never_replays_what_a_tenants_sync_applied(
    memory: Memory,
) -> None:
    """Once a recall's sync removed a revoked entry, a later sync of every tenant does not
    put it back, not even between two of its batches."""
    ids = _move(memory)
    memory.revoke(ids["home_city"], tenant="acme")
    memory.index.sync(memory.store, tenant="acme")
    assert not memory.index.search("Quorvale", tenant="acme", k=10)
    seen: list[set[str]] = []

    def after_each_batch(done: int, total: int) -> None:
        hits = memory.index.search("Quorvale", tenant="acme", k=10)
        seen.append({h.memory_id for h in hits})

    memory.index.sync(memory.store, batch=1, progress=after_each_batch)
    assert len(seen) > 1 and all(not found for found in seen)
