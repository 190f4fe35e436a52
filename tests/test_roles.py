"""Roles (issue 10, item 1): who spoke a turn in an agent's conversation, and what
follows from it: the assistant's words are kept as turns, never as claims or
authority, rank below the user's, lend less context, and long turns do not flood
their neighbours' windows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memledger import Actor, Claim, Grant, InvalidEventError, Memory, SourceEvent
from memledger.index._common import WINDOW_NEIGHBOUR_WORDS
from memledger.index.derived import DerivedIndex
from memledger.read.recall import RecallSettings, recall
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.scenarios import actor, event
from memledger.wire import parse_event_json
from memledger.write.worker import episode_of

AT = datetime(2026, 3, 1, 9, tzinfo=UTC)
ANYONE = Actor(id="u1", authenticated=True, grants=frozenset({Grant(family="*")}))


def turn(n: int, text: str, role: str | None, *, session: str = "s1") -> SourceEvent:
    return event(
        f"t{n}",
        text,
        occurred_at=AT + timedelta(minutes=n),
        subject="u1",
        who=ANYONE if role != "assistant" else actor(actor_id="assistant"),
        metadata={"session": session},
        role=role,  # type: ignore[arg-type]
    )


def say(memory: Memory, event: SourceEvent) -> None:
    """Keep the turn as its episode, as the worker would."""
    memory.ingest(event, [episode_of(event)])


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    memory = Memory(open_store(tmp_path / "m.db"), clock=FrozenClock(AT + timedelta(days=1)))
    yield memory
    memory.close()


def test_a_role_is_one_of_three_and_leaves_old_hashes_alone() -> None:
    plain = turn(0, "I live in Lyon.", None)
    assert plain.role is None
    assert turn(0, "I live in Lyon.", "user").content_hash() != plain.content_hash()
    before = event(  # as events were made before roles: no role
        "t0",
        "I live in Lyon.",
        occurred_at=AT,
        subject="u1",
        who=ANYONE,
        metadata={"session": "s1"},
    )
    assert before.content_hash() == plain.content_hash()  # stored ledgers still match
    with pytest.raises(InvalidEventError, match="unknown role 'system'"):
        turn(0, "x", "system")


def test_the_wire_format_carries_the_role() -> None:
    body = {
        "tenant": "acme",
        "event_id": "t0",
        "subject": "u1",
        "actor": {"id": "assistant", "authenticated": True},
        "channel": "chat",
        "occurred_at": "2026-03-01T09:00:00Z",
        "text": "Here is how to do it.",
        "role": "assistant",
    }
    assert parse_event_json(json.dumps(body)).event.role == "assistant"
    with pytest.raises(InvalidEventError):
        parse_event_json(json.dumps({**body, "role": "robot"}))


def test_the_assistants_words_are_a_turn_never_a_claim(memory: Memory) -> None:
    memory.ingest(turn(0, "Since you moved to Lyon, you might like the Rhone trail.", "assistant"))
    memory.ingest(turn(1, "I work at Initech these days.", "user"))
    report = memory.process()
    assert report.outcomes == {"committed": 2}
    assert memory.stats(tenant="acme")["agent_turn"] == 1
    assert memory.current("u1", "home_city", tenant="acme", valid_at=AT + timedelta(days=1)) == ()
    (employer,) = memory.current("u1", "employer", tenant="acme", valid_at=AT + timedelta(days=1))
    assert employer.value == "Initech"
    turns = memory.timeline("u1", "conversation", tenant="acme")
    assert [t.value["role"] for t in turns] == ["assistant", "user"]  # type: ignore[index]
    assert memory.event("t0", tenant="acme").role == "assistant"  # stored in the ledger
    # claims a caller hands over with an assistant's turn are observations, not settings
    said = turn(2, "You live in Lyon.", "assistant")
    city = Claim(family="home_city", kind="fact", statement="Lives in Lyon", value="Lyon")
    (result,) = memory.ingest(said, [city]).results
    assert (result.disposition, result.reason) == ("observation", "agent_words")


def test_the_assistants_turns_rank_below_the_users(memory: Memory, tmp_path: Path) -> None:
    say(memory, turn(0, "My sourdough starter smells like acetone.", "user"))
    say(memory, turn(1, "An acetone smell in a sourdough starter means it is hungry.", "assistant"))
    with DerivedIndex(tmp_path / "m.index") as index:
        index.sync(memory.store)
        asked = "sourdough starter acetone smell hungry"
        at = AT + timedelta(days=1)
        found = recall(memory.reading, index, asked, tenant="acme", valid_at=at)
        assert [i.record.source_event_id for i in found.items] == ["t0", "t1"]
        even = recall(
            memory.reading,
            index,
            asked,
            tenant="acme",
            valid_at=at,
            settings=RecallSettings(assistant_weight=1.0),
        )
        assert even.items[0].record.source_event_id == "t1"  # more of the words: it wins


def test_an_agents_turn_lends_less_context(memory: Memory, tmp_path: Path) -> None:
    """The reply after a peer's question gains 0.6 of its score; the assistant's answer
    after the user's question only ``agent_context_weight`` of that."""
    for session, roles in (("peer", (None, None)), ("agent", ("user", "assistant"))):
        base = 0 if session == "peer" else 10
        say(
            memory,
            turn(base, "Which kiln temperature works for stoneware?", roles[0], session=session),
        )
        say(memory, turn(base + 1, "Cone six, held for ten minutes.", roles[1], session=session))
    settings = RecallSettings(
        window_weight=0.0, context_before=(), asking_weight=1.0, assistant_weight=1.0, tau_days=1e9
    )
    with DerivedIndex(tmp_path / "m.index") as index:
        index.sync(memory.store)
        found = recall(
            memory.reading,
            index,
            "kiln temperature stoneware",
            tenant="acme",
            k=10,
            valid_at=AT + timedelta(days=1),
            settings=settings,
        )
        score = {i.record.source_event_id: i.score for i in found.items}
    peer = score["t1"] / score["t0"]
    agent = score["t11"] / score["t10"]
    assert peer == pytest.approx(0.6, rel=1e-6)
    assert agent == pytest.approx(0.6 * RecallSettings().agent_context_weight, rel=1e-6)


def test_a_long_neighbour_lends_a_window_only_its_first_words(
    memory: Memory, tmp_path: Path
) -> None:
    long_answer = "Glaze " + " ".join(f"word{n}" for n in range(200)) + " zirconium"
    say(memory, turn(0, "What about my pottery glaze?", "user"))
    say(memory, turn(1, long_answer, "assistant"))
    with DerivedIndex(tmp_path / "m.index") as index:
        index.sync(memory.store)
        near = index.search("word10", tenant="acme", k=5, windows=True)
        assert {h.memory_id for h in near} >= {
            h.memory_id for h in index.search("pottery", tenant="acme", k=5)
        }  # the user's window holds word10
        far = index.search("zirconium", tenant="acme", k=5, windows=True)
        (own,) = index.search("zirconium", tenant="acme", k=5)
        assert [h.memory_id for h in far] == [own.memory_id]  # only its own window
    assert WINDOW_NEIGHBOUR_WORDS < 200
