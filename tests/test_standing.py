"""Standing instructions and preferences (issue 10, item 3): found in the user's turns,
and surfaced by recall for a request in their scope even when ranking leaves them out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memledger import Actor, Memory, SourceEvent
from memledger.domain.standing import standing
from memledger.index.derived import DerivedIndex
from memledger.read.recall import RecallSettings, recall
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.write.worker import episode_of


@pytest.mark.parametrize(
    ("text", "kind", "when"),
    [
        (
            "Always format code snippets with syntax highlighting when I ask about "
            "implementation details.",
            "instruction",
            "implementation details",
        ),
        ("Never use semicolons in JavaScript examples.", "instruction", ""),
        ("Thanks! From now on, answer in French.", "instruction", ""),
        ("Please always include version numbers for libraries.", "instruction", ""),
        ("I prefer metric units, to be honest.", "preference", ""),
        ("Could you always cite sources when I ask about history?", "instruction", "history"),
    ],
)
def test_standing_instructions_are_found(text: str, kind: str, when: str) -> None:
    found = standing(text)
    assert found is not None and (found.kind, found.when) == (kind, when)
    assert text[found.start : found.end].startswith(found.rule[:10])


@pytest.mark.parametrize(
    "text",
    [
        "I always walk to work.",  # a habit
        "Should I always use type hints?",  # a question
        "My boss always asks for reports on Friday.",  # someone else
        "The build never finishes before noon.",
        "I live in Lyon.",
    ],
)
def test_other_sentences_are_no_instruction(text: str) -> None:
    assert standing(text) is None


AT = datetime(2026, 3, 1, 9, tzinfo=UTC)


def test_between_peers_no_one_is_instructed(tmp_path: Path) -> None:
    memory = Memory(open_store(tmp_path / "m.db"), clock=FrozenClock(AT + timedelta(days=9)))
    texts = [
        "Always include version numbers when I ask about libraries or dependencies.",
        *[
            f"Which libraries did the team pick for the billing service, part {n}?"
            for n in range(12)
        ],
    ]
    for n, text in enumerate(texts):
        event = SourceEvent(
            tenant="acme",
            event_id=f"t{n}",
            subject="u1",
            actor=Actor(id="ann" if n % 2 else "bob", authenticated=True),
            channel="chat",
            occurred_at=AT + timedelta(minutes=n),
            text=text,
        )
        memory.ingest(event, [episode_of(event)])
    with DerivedIndex(tmp_path / "m.index") as index:
        index.sync(memory.store)
        assert index.standing("acme") == []
    memory.close()


def test_recall_surfaces_an_instruction_in_scope(tmp_path: Path) -> None:
    memory = Memory(open_store(tmp_path / "m.db"), clock=FrozenClock(AT + timedelta(days=9)))
    turns = [
        ("user", "Always include version numbers when I ask about libraries or dependencies."),
        ("assistant", "Noted, I will include version numbers."),
        *[
            ("user", f"Which libraries did the team pick for the billing service, part {n}?")
            for n in range(12)
        ],
    ]
    for n, (role, text) in enumerate(turns):
        event = SourceEvent(
            tenant="acme",
            event_id=f"t{n}",
            subject="u1",
            actor=Actor(id=role, authenticated=True),
            channel="chat",
            occurred_at=AT + timedelta(minutes=n),
            text=text,
            role=role,  # type: ignore[arg-type]
        )
        memory.ingest(event, [episode_of(event)])
    asked = "Which libraries are used in this project?"
    with DerivedIndex(tmp_path / "m.index") as index:
        index.sync(memory.store)
        found = recall(memory, index, asked, tenant="acme", k=5, valid_at=AT + timedelta(days=9))
        ids = [i.record.source_event_id for i in found.items]
        assert "t0" in ids[:5] and ids.index("t0") <= RecallSettings().standing_rank - 1
        item = next(i for i in found.items if i.record.source_event_id == "t0")
        assert "standing" in item.sources
        off = RecallSettings(standing_k=0)
        without = recall(
            memory, index, asked, tenant="acme", k=5, valid_at=AT + timedelta(days=9), settings=off
        )
        assert "t0" not in [i.record.source_event_id for i in without.items]
        # a request out of its scope does not bring it
        other = recall(
            memory,
            index,
            "billing service team",
            tenant="acme",
            k=5,
            valid_at=AT + timedelta(days=9),
        )
        assert "t0" not in [i.record.source_event_id for i in other.items]
    memory.close()
