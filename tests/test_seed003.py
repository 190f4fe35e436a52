"""Seed 003's walkthrough, end to end: raw turns, the rule extractor, the computed decision."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memledger import Memory, Receipt, WritePolicy
from memledger.domain.decide import Thresholds
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.scenarios import actor, event
from memledger.write.extract.rules import RuleExtractor

FAMILIES = ("home_city", "habit", "plan", "activity", "primary_framework", "tool")
ME = actor(*FAMILIES, actor_id="user-7")
TENANT, SUBJECT = "acme", "user-7"


def at(month: int, dom: int = 1) -> datetime:
    return datetime(2026, month, dom, 9, tzinfo=UTC)


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(at(1))


def open_memory(path: Path, clock: FrozenClock, policy: WritePolicy | None = None) -> Memory:
    return Memory(open_store(path), clock=clock, policy=policy)


@pytest.fixture
def memory(tmp_path: Path, clock: FrozenClock) -> Iterator[Memory]:
    memory = open_memory(tmp_path / "m.db", clock)
    yield memory
    memory.close()


class Conversation:
    def __init__(self, memory: Memory, clock: FrozenClock) -> None:
        self.memory, self.clock, self.n = memory, clock, 0

    def say(self, text: str, when: datetime) -> Receipt:
        """One turn through the normal write path; returns the commit's receipt."""
        self.n += 1
        self.clock.set(when)
        turn = event(
            f"t{self.n}",
            text,
            occurred_at=when,
            sequence=self.n,
            who=ME,
            subject=SUBJECT,
            tenant=TENANT,
        )
        self.memory.ingest(turn)
        report = self.memory.process(extractor=RuleExtractor())
        assert report.outcomes == {"committed": 1}, report
        job = self.memory.jobs(tenant=TENANT, open_only=False)[-1]
        assert job.status == "done"
        receipt = self.memory.ingest(turn)  # the same turn again: the commit's receipt
        assert receipt.duplicate
        return receipt

    def decisions(self, receipt: Receipt) -> list[tuple[str, str | None]]:
        return [(r.family, r.decision) for r in receipt.results if r.family != "conversation"]

    def value(self, family: str, when: datetime) -> list[object]:
        return [r.value for r in self.memory.current(SUBJECT, family, tenant=TENANT, valid_at=when)]


def test_update_keeps_the_closed_window(memory: Memory, clock: FrozenClock) -> None:
    chat = Conversation(memory, clock)
    assert chat.decisions(chat.say("Based in Delhi", at(1, 10))) == [("home_city", "add")]
    assert chat.decisions(chat.say("I'm based in Bangalore now", at(6, 5))) == [
        ("home_city", "update")
    ]
    assert chat.value("home_city", at(3)) == ["Delhi"]
    assert chat.value("home_city", at(6, 10)) == ["Bangalore"]
    history = memory.history(SUBJECT, "home_city", tenant=TENANT)
    assert [(r.value, r.status) for r in history] == [
        ("Delhi", "superseded"),
        ("Delhi", "active"),
        ("Bangalore", "active"),
    ]
    # and the belief before the correction is still readable exactly
    assert [
        r.value
        for r in memory.current(
            SUBJECT, "home_city", tenant=TENANT, valid_at=at(6, 10), as_of=at(6, 1)
        )
    ] == ["Delhi"]


def test_add_delete_and_noop(memory: Memory, clock: FrozenClock) -> None:
    chat = Conversation(memory, clock)
    chat.say("Based in Bangalore", at(1, 10))
    assert chat.decisions(chat.say("I review flashcards every morning", at(2, 1))) == [
        ("habit", "add")
    ]
    assert chat.decisions(chat.say("I'm planning the NeurIPS submission", at(3, 1))) == [
        ("plan", "add")
    ]
    assert chat.decisions(chat.say("The NeurIPS submission plan is off", at(5, 1))) == [
        ("plan", "delete")
    ]
    assert chat.value("plan", at(4, 1)) == [{"plan": "NeurIPS submission", "status": "on"}]
    assert chat.value("plan", at(5, 2)) == []
    assert {r.status for r in memory.history(SUBJECT, "plan", tenant=TENANT)} == {
        "retracted",
        "active",
    }
    receipt = chat.say("Based in Bangalore", at(6, 1))  # an exact repeat
    assert chat.decisions(receipt) == [("home_city", "noop")]
    (city,) = memory.timeline(SUBJECT, "home_city", tenant=TENANT)
    assert (city.mentions, round(city.confidence, 3)) == (2, 0.712)
    assert chat.value("habit", at(6, 1)) == ["review flashcards every morning"]


@pytest.mark.parametrize(("noop", "decision"), [(0.85, "add"), (0.75, "noop")])
def test_moving_the_threshold_moves_a_borderline_fact(
    tmp_path: Path, clock: FrozenClock, noop: float, decision: str
) -> None:
    policy = WritePolicy(thresholds=Thresholds(noop=noop))
    memory = open_memory(tmp_path / "t.db", clock, policy)
    chat = Conversation(memory, clock)
    assert chat.decisions(chat.say("I build AI tools", at(1, 5))) == [("activity", "add")]
    assert chat.decisions(chat.say("Builds AI", at(2, 5))) == [("activity", decision)]
    memory.close()


def test_rag_vs_memory_the_current_framework_is_the_new_one(
    memory: Memory, clock: FrozenClock
) -> None:
    chat = Conversation(memory, clock)
    chat.say("I love PyTorch", at(1, 5))
    chat.say("Can you recommend a good book on compilers?", at(2, 5))
    chat.say("The weather has been lovely this week.", at(3, 5))
    assert chat.decisions(chat.say("I moved to JAX", at(4, 5))) == [("primary_framework", "update")]
    assert chat.value("primary_framework", at(4, 6)) == ["JAX"]
    assert chat.value("primary_framework", at(2, 1)) == ["PyTorch"]  # history, not deleted
    turns = memory.timeline(SUBJECT, "conversation", tenant=TENANT)
    assert len(turns) == 4  # every turn is kept as an episode for retrieval


def test_a_move_told_with_a_trailing_time_phrase_starts_then(
    memory: Memory, clock: FrozenClock
) -> None:
    chat = Conversation(memory, clock)
    chat.say("Based in Delhi", at(1, 10))
    assert chat.decisions(chat.say("I moved to Bangalore two weeks ago.", at(6, 15))) == [
        ("home_city", "update")
    ]
    assert chat.value("home_city", at(6, 2)) == ["Bangalore"]  # from June 1, not "Bangalore two"
    assert chat.value("home_city", at(5, 30)) == ["Delhi"]


@pytest.mark.parametrize(
    "switch",
    [
        "I switched to JAX a while ago.",
        "These days I've switched to JAX.",
        "Nowadays I use JAX.",
    ],
)
def test_a_paraphrased_switch_replaces_the_framework(
    memory: Memory, clock: FrozenClock, switch: str
) -> None:
    chat = Conversation(memory, clock)
    chat.say("I love PyTorch", at(1, 5))
    assert chat.decisions(chat.say(switch, at(4, 5))) == [("primary_framework", "update")]
    assert chat.value("primary_framework", at(4, 6)) == ["JAX"]
    assert memory.timeline(SUBJECT, "tool", tenant=TENANT) == ()  # no tool "JAX a"


def test_a_retraction_closes_the_tool_and_a_retraction_of_nothing_changes_nothing(
    tmp_path: Path, clock: FrozenClock
) -> None:
    who = actor("tool", "primary_framework", actor_id="user-7")
    memory = open_memory(tmp_path / "r.db", clock)

    def say(n: int, text: str, when: datetime) -> Receipt:
        clock.set(when)
        turn = event(
            f"r{n}", text, occurred_at=when, sequence=n, who=who, subject=SUBJECT, tenant=TENANT
        )
        memory.ingest(turn)
        assert memory.process(extractor=RuleExtractor()).outcomes == {"committed": 1}
        return memory.ingest(turn)

    say(1, "I use TensorFlow and Vim", at(1, 5))
    dropped = say(2, "No longer uses TensorFlow", at(2, 5))
    assert [(r.family, r.decision) for r in dropped.results if r.family == "tool"] == [
        ("tool", "delete")
    ]
    now = memory.current(SUBJECT, "tool", tenant=TENANT, valid_at=at(3))
    assert [r.value for r in now] == ["Vim"]
    nothing = say(3, "I don't use Keras anymore", at(3, 5))
    (result,) = [r for r in nothing.results if r.family == "tool"]
    assert (result.decision, result.memory_id) == ("noop", None)
    assert {r.value for r in memory.timeline(SUBJECT, "tool", tenant=TENANT)} == {
        "TensorFlow",
        "Vim",
    }
    memory.close()


def test_dropping_the_primary_framework_closes_it_and_leaves_another_alone(
    memory: Memory, clock: FrozenClock
) -> None:
    chat = Conversation(memory, clock)
    chat.say("I use TensorFlow", at(1, 5))
    assert sorted(chat.decisions(chat.say("I stopped using TensorFlow", at(2, 5)))) == [
        ("primary_framework", "delete"),
        ("tool", "noop"),  # no tool record: TensorFlow was the primary framework
    ]
    assert chat.value("primary_framework", at(3)) == []
    chat.say("I love PyTorch", at(4, 5))
    assert sorted(chat.decisions(chat.say("I gave up on Keras", at(5, 5)))) == [
        ("primary_framework", "noop"),  # Keras was never it: PyTorch stays
        ("tool", "noop"),
    ]
    assert chat.value("primary_framework", at(6)) == ["PyTorch"]
