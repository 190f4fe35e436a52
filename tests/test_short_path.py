"""The short path in Python: ``add`` chat messages, ``search`` them with scores,
``get_all``, ``get``, ``delete`` and a memory's ``history``, each in one call."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memledger import InvalidEventError, InvalidQueryError, Memory, MemoryNotFoundError
from memledger.domain.records import SourceEvent
from memledger.ports import Extraction
from memledger.testing import FrozenClock, FunctionExtractor

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
CHAT = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "I love spicy ramen."},
    {"role": "assistant", "content": "Noted! Any favourite place?"},
    {"role": "user", "content": "I live in Lisbon."},
]


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(NOW)


def test_add_keeps_each_turn_with_its_role_and_reads_facts_from_the_users_words(
    memory: Memory,
) -> None:
    added = memory.add(CHAT, user_id="alice")
    assert added.skipped == 1  # the system prompt is nobody's memory
    assert len(added.event_ids) == 3 and not added.duplicate and added.pending == ()
    assert [r.outcome for r in added.receipts] == ["committed"] * 3
    turns = [m for m in added.memories if m.kind == "episode"]
    assert [(t.role, t.memory) for t in turns] == [
        ("user", "I love spicy ramen."),
        ("assistant", "Noted! Any favourite place?"),
        ("user", "I live in Lisbon."),
    ]
    assert all(t.user_id == "alice" and t.agent_id is None for t in added.memories)
    (city,) = memory.current("alice", "home_city", tenant="default")
    assert city.value == "Lisbon" and city.source_actor_id == "alice"
    assert city.source_identity_authenticated  # the user is the speaker of their turns
    event = memory.event(added.event_ids[2], tenant="default")
    assert event.role == "user" and event.occurred_at == NOW
    assert memory.event(added.event_ids[1], tenant="default").actor.id == "assistant"


def test_a_string_or_one_message_is_one_user_turn(memory: Memory) -> None:
    one = memory.add("I live in Porto.", user_id="bob")
    two = memory.add(
        {"role": "user", "content": [{"type": "text", "text": "I work at Acme."}]}, user_id="bob"
    )
    assert len(one.event_ids) == len(two.event_ids) == 1
    assert memory.current("bob", "home_city", tenant="default")[0].value == "Porto"
    assert memory.event(two.event_ids[0], tenant="default").text == "I work at Acme."


def test_adding_the_same_messages_again_is_a_duplicate(memory: Memory, clock: FrozenClock) -> None:
    first = memory.add(CHAT, user_id="alice", session="s1")
    clock.advance(timedelta(minutes=5))  # a retry later: the time is not part of the id
    again = memory.add(CHAT, user_id="alice", session="s1")
    assert again.duplicate and again.event_ids == first.event_ids
    assert len(memory.get_all(user_id="alice")) == len(first.memories)
    # another session, other metadata or another user are other turns
    for other in (
        memory.add(CHAT, user_id="alice", session="s2"),
        memory.add(CHAT, user_id="alice", session="s1", metadata={"channel": "web"}),
        memory.add(CHAT, user_id="carol", session="s1"),
    ):
        assert not other.duplicate and set(other.event_ids).isdisjoint(first.event_ids)


def test_an_explicit_time_is_part_of_the_turns(memory: Memory) -> None:
    at = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
    first = memory.add("I live in Porto.", user_id="dan", at=at)
    assert memory.add("I live in Porto.", user_id="dan", at=at).duplicate
    later = memory.add("I live in Porto.", user_id="dan", at=at + timedelta(days=1))
    assert not later.duplicate and later.event_ids != first.event_ids
    assert memory.event(first.event_ids[0], tenant="default").occurred_at == at


def test_only_an_agent_writes_into_its_private_namespace(memory: Memory) -> None:
    added = memory.add("The customer prefers email.", agent_id="planner")
    assert {m.agent_id for m in added.memories} == {"planner"}
    assert memory.event(added.event_ids[0], tenant="default").subject == "agent:planner"
    assert [m.id for m in memory.get_all(agent_id="planner")] == [m.id for m in added.memories]
    assert memory.get_all(user_id="planner") == ()


def test_wait_false_leaves_extraction_to_the_worker(memory: Memory) -> None:
    added = memory.add("I live in Oslo.", user_id="erin", wait=False)
    assert added.pending == added.event_ids and added.memories == ()
    memory.process()
    assert memory.current("erin", "home_city", tenant="default")[0].value == "Oslo"


def test_add_waits_for_turns_another_worker_took_first(memory: Memory) -> None:
    """A service's background worker may lease the turns' job before ``add`` runs the
    queue: ``add`` then waits for that worker's commit instead of answering without
    the memories."""
    from memledger.write.extract.rules import RuleExtractor

    rules = RuleExtractor()
    taken, release = threading.Event(), threading.Event()

    def slowly(event: SourceEvent) -> Extraction:
        taken.set()
        release.wait(10)
        return rules.extract(event)

    first = memory.add("I live in Oslo.", user_id="erin", wait=False)
    worker = threading.Thread(
        target=memory.process, kwargs={"extractor": FunctionExtractor(slowly)}
    )
    worker.start()
    assert taken.wait(10)
    threading.Timer(0.3, release.set).start()  # the other worker commits a moment later
    again = memory.add("I live in Oslo.", user_id="erin")  # a retry that waits
    worker.join(10)
    assert again.duplicate and again.event_ids == first.event_ids
    assert again.pending == ()
    assert [m.memory for m in again.memories if m.family == "home_city"] == ["Lives in Oslo"]


def test_an_add_runs_no_more_than_its_share_of_the_tenants_queue(
    memory: Memory, clock: FrozenClock
) -> None:
    """An add allowed ``most_jobs`` of its tenant's queued jobs (a service's request)
    runs that many, oldest first, and answers its own turn pending when it comes later
    in the queue: it does not go on running the queue while it waits."""
    for n, city in enumerate(["Oslo", "Rome", "Bern"]):
        memory.add(f"I live in {city}.", user_id=f"user-{n}", wait=False)
        clock.advance(timedelta(minutes=1))
    _, token = memory.create_key("default", "app", principal="service")
    app = memory.authenticate(token)
    added = memory.add_as(app, "I live in Lima.", user_id="erin", most_jobs=1)
    assert added.pending == added.event_ids
    assert memory.current("user-0", "home_city", tenant="default")[0].value == "Oslo"
    assert memory.current("user-1", "home_city", tenant="default") == ()


def test_bad_messages_name_every_problem_and_write_nothing(memory: Memory) -> None:
    bad = [
        {"role": "user", "content": "fine"},
        {"role": "narrator", "content": "x"},
        {"role": "user"},
        {"role": "user", "content": "  "},
        42,
    ]
    with pytest.raises(InvalidEventError) as caught:
        memory.add(bad, user_id="alice")
    text = str(caught.value)
    assert text.startswith("4 problems in messages")
    for part in (
        "messages[1].role",
        "messages[2] has no content",
        "messages[3].content is empty",
        "messages[4] must be",
    ):
        assert part in text
    many = [{"role": "user"} for _ in range(12)]
    with pytest.raises(InvalidEventError, match=r"12 problems .*\(and 2 more not shown\)"):
        memory.add(many, user_id="alice")
    for messages in ([], [{"role": "system", "content": "only instructions"}], b"bytes"):
        with pytest.raises(InvalidEventError):
            memory.add(messages, user_id="alice")  # type: ignore[arg-type]
    with pytest.raises(InvalidQueryError, match="user_id or agent_id"):
        memory.add("hello")
    with pytest.raises(InvalidEventError, match="timezone-aware"):
        memory.add("hello", user_id="alice", at=datetime(2026, 1, 1))
    assert memory.subjects(tenant="default") == ()


def test_search_returns_the_nearest_with_scores_where_recall_abstains(memory: Memory) -> None:
    memory.add(CHAT, user_id="alice")
    memory.add("I live in Porto.", user_id="zoe")  # another user's memory is never found
    found = memory.search("where does she live?", user_id="alice", k=3)
    assert found and found[0].memory == "Lives in Lisbon" and found[0].relevant
    assert [f.score for f in found] == sorted((f.score for f in found), reverse=True)
    assert all(f.user_id == "alice" for f in found)
    # nothing relevant: recall abstains, search still hands the nearest, marked so
    question = "what is the capital of France?"
    assert memory.recall(question, tenant="default", subject="alice").abstained
    nearest = memory.search(question, user_id="alice", k=2)
    assert len(nearest) == 2 and not any(n.relevant for n in nearest)
    assert all(n.score is not None for n in nearest)


def test_deleted_memories_never_come_back_through_search_or_get_all(memory: Memory) -> None:
    memory.add(CHAT, user_id="alice")
    (fact,) = [m for m in memory.get_all(user_id="alice") if m.family == "likes"]
    receipt = memory.delete(fact.id)
    assert receipt.revoked and fact.id in receipt.revoked and receipt.reason == "deleted"
    assert fact.id not in {m.id for m in memory.get_all(user_id="alice")}
    assert fact.id not in {m.id for m in memory.search("ramen", user_id="alice")}
    assert memory.get(fact.id).status == "revoked"  # the record stays, closed
    with pytest.raises(MemoryNotFoundError):
        memory.delete("mem-missing")
    # forgetting a turn takes every memory it gave out of the list
    (city,) = [m for m in memory.get_all(user_id="alice") if m.family == "home_city"]
    memory.forget(city.source_event_id, tenant="default")
    assert city.source_event_id not in {m.source_event_id for m in memory.get_all(user_id="alice")}


def test_get_all_is_newest_first_and_bounded(memory: Memory, clock: FrozenClock) -> None:
    for n in range(3):
        memory.add(f"Note number {n} about the garden.", user_id="fay")
        clock.advance(timedelta(minutes=1))
    listed = memory.get_all(user_id="fay")
    assert [m.memory for m in listed] == [f"Note number {n} about the garden." for n in (2, 1, 0)]
    assert len(memory.get_all(user_id="fay", limit=2)) == 2
    for limit in (0, 1001, True):
        with pytest.raises(InvalidQueryError, match="limit"):
            memory.get_all(user_id="fay", limit=limit)


def test_a_memorys_history_follows_its_corrections(memory: Memory, clock: FrozenClock) -> None:
    memory.add("I live in Lisbon.", user_id="gus")
    (lisbon,) = memory.current("gus", "home_city", tenant="default")
    clock.advance(timedelta(days=1))
    memory.add("I moved to Porto.", user_id="gus")
    (porto,) = memory.current("gus", "home_city", tenant="default")
    steps = memory.history(porto.memory_id)
    # Lisbon's record closed, written again with its valid window ended, then Porto
    assert [(s.action, s.memory) for s in steps] == [
        ("recorded", "Lives in Lisbon"),
        ("closed", "Lives in Lisbon"),
        ("recorded", "Lives in Lisbon"),
        ("recorded", porto.claim),
    ]
    assert steps[0].memory_id == steps[1].memory_id == lisbon.memory_id
    assert steps[-1].memory_id == porto.memory_id
    (window,) = [
        r for r in memory.timeline("gus", "home_city", tenant="default") if r.value == "Lisbon"
    ]
    assert steps[2].memory_id == window.memory_id and window.valid_until == porto.valid_from
    assert memory.history(lisbon.memory_id) == steps  # one lineage, from either end
    # the family's history is still there, with its subject and family
    assert [r.value for r in memory.history("gus", "home_city", tenant="default")] == [
        "Lisbon",
        "Lisbon",
        "Porto",
    ]
    with pytest.raises(MemoryNotFoundError):
        memory.history("mem-missing")
    with pytest.raises(InvalidQueryError, match="include_revoked"):
        memory.history(porto.memory_id, include_revoked=True)  # type: ignore[call-overload]


def test_get_all_leaves_out_late_stale_values_and_what_has_expired(
    memory: Memory, clock: FrozenClock
) -> None:
    memory.add("I live in Porto.", user_id="hal", at=NOW - timedelta(days=30))
    memory.add("I live in Lisbon.", user_id="hal", at=NOW - timedelta(days=31))  # late, older
    listed = {(m.family, m.memory) for m in memory.get_all(user_id="hal")}
    assert ("home_city", "Lives in Porto") in listed
    assert ("home_city", "Lives in Lisbon") not in listed  # kept as historical, not a value
    memory.set_retention("episode", 1, tenant="default")
    clock.advance(timedelta(days=2))  # the turns expired: out of every read before erasure
    assert {m.family for m in memory.get_all(user_id="hal")} == {"home_city"}


def test_three_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``Memory()`` alone is a memory in the current folder; a URL or a path opens another."""
    monkeypatch.chdir(tmp_path)
    m = Memory()
    m.add([{"role": "user", "content": "I love spicy ramen."}], user_id="alice")
    assert m.search("what food does alice like?", user_id="alice")[0].memory == "Likes spicy ramen"
    m.close()
    assert (tmp_path / "memledger.db").exists()
    with Memory(tmp_path / "other.db") as other, Memory(f"sqlite:///{tmp_path}/third.db") as third:
        assert other.get_all(user_id="alice") == () == third.get_all(user_id="alice")
    assert (tmp_path / "other.db").exists() and (tmp_path / "third.db").exists()
