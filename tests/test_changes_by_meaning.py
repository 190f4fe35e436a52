"""A later turn that changes a value ranks above what it changes, even when extraction
made no claim of it: "my $600 annual budget" in January, "my increased budget of $650"
in April. Real SQLite and index, the default (rule) extractor, which knows no budget
family; the pairing rules themselves are checked on records built here."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from memledger import Memory, SourceEvent
from memledger.domain.records import Role
from memledger.read.changes import Change, reorder
from memledger.testing.scenarios import actor, event

ASKED = datetime(2026, 5, 1, tzinfo=UTC)
JAN, APR = datetime(2026, 1, 10, tzinfo=UTC), datetime(2026, 4, 2, tzinfo=UTC)
OLD = "I've spent $575 on sneakers this year and I'm getting close to my $600 annual budget."
NEW = "I'm considering new sneakers with my increased budget of $650, where should I start?"
QUESTION = "What is my annual budget for buying sneakers?"


def _said(
    event_id: str, text: str, at: datetime, *, who: str = "user-9", role: Role = "user"
) -> SourceEvent:
    """A turn of ``who`` about user-9 (who holds every grant)."""
    speaker = actor("*", actor_id=who)
    return event(event_id, text, occurred_at=at, subject="user-9", who=speaker, role=role)


@pytest.fixture
def memory(indexed_memory: Callable[[datetime], Memory]) -> Memory:
    return indexed_memory(ASKED)


def _ranked(
    memory: Memory, *events: SourceEvent, query: str = QUESTION
) -> list[tuple[str, str | None]]:
    for each in events:
        memory.ingest(each)
    memory.process()
    result = memory.recall(query, tenant="acme", subject="user-9")
    return [(i.record.source_event_id, i.possibly_outdated_by) for i in result.items]


def test_a_missed_update_still_ranks_the_newer_turn_first(memory: Memory) -> None:
    found = _ranked(memory, _said("jan", OLD, JAN), _said("apr", NEW, APR))
    order = [event for event, _ in found]
    assert order.index("apr") < order.index("jan"), found
    newer = next(
        i
        for i in memory.recall(QUESTION, tenant="acme", subject="user-9").items
        if i.record.source_event_id == "apr"
    )
    marks = dict(found)
    assert marks["jan"] == newer.record.memory_id and marks["apr"] is None


@pytest.mark.parametrize(
    ("before", "after", "query"),
    [
        (  # a count of the same thing, with no word of change
            "My Zotero library has 45 sources, tagged by theme and date.",
            "I've got 52 sources in my Zotero library, how do I organise them?",
            "How many sources are in my Zotero library?",
        ),
        (  # a rate of the same thing
            "HR told me our AI screening accuracy is rated 87% now.",
            "How do I keep the screening tool's 90% accuracy free of bias?",
            "What accuracy does the AI screening tool achieve?",
        ),
        (  # a number that a word of change leads
            "My team has 8 engineers and a designer.",
            "We hired, so the engineers on my team increased to 11.",
            "How many engineers are on my team?",
        ),
    ],
)
def test_another_value_of_the_same_thing_changes_it(
    memory: Memory, before: str, after: str, query: str
) -> None:
    found = _ranked(memory, _said("jan", before, JAN), _said("apr", after, APR), query=query)
    assert [e for e, _ in found][:2] == ["apr", "jan"] and dict(found)["jan"] is not None


@pytest.mark.parametrize(
    ("later", "why"),
    [
        (_said("apr", NEW, APR, role="assistant"), "the assistant's words"),
        (_said("apr", NEW, APR, who="user-7"), "another speaker"),
        (_said("apr", NEW, datetime(2025, 12, 1, tzinfo=UTC)), "said before"),
        (
            _said("apr", "I'm considering new sneakers, 3 pairs for my sneaker budget.", APR),
            "a value of another kind (a count, not money) and of another thing",
        ),
    ],
)
def test_what_does_not_change_it(memory: Memory, later: SourceEvent, why: str) -> None:
    found = _ranked(memory, _said("jan", OLD, JAN), later)
    assert dict(found).get("jan") is None, why


def test_reorder_moves_each_change_above_what_it_changes_newest_last() -> None:
    ranked = [(0.9, "a", 1.0), (0.8, "x", 1.0), (0.5, "b", 1.0), (0.4, "c", 1.0)]
    found = [
        Change(older="a", newer="c", at=APR),
        Change(older="a", newer="b", at=JAN),
        Change(older="b", newer="c", at=APR),
    ]
    out, marks = reorder(ranked, found)
    assert [m for _, m, _ in out] == ["c", "b", "a", "x"]
    assert [s for s, _, _ in out] == sorted((s for s, _, _ in out), reverse=True)
    assert marks == {"a": "c", "b": "c"}
    assert reorder(ranked, []) == (ranked, {})


def test_the_packet_marks_what_a_later_turn_seems_to_change_and_replays_it(
    memory: Memory,
) -> None:
    _ranked(memory, _said("jan", OLD, JAN), _said("apr", NEW, APR))
    packet = memory.context(QUESTION, tenant="acme", subject="user-9", budget=1500)
    by_event = {i.fields["source"]["event"]: i for i in packet.memories}  # type: ignore[index]
    newer = by_event["apr"]
    limits = by_event["jan"].fields["does_not_prove"]
    assert f"current: possibly_changed_by {newer.memory_id}" in limits  # type: ignore[operator]
    assert not any("possibly" in str(x) for x in newer.fields.get("does_not_prove", []))  # type: ignore[union-attr]
    assert newer.relevance > by_event["jan"].relevance  # nearer the request
    assert f"possibly_changed_by {newer.memory_id}" in packet.text
    assert memory.replay(packet.trace_id, tenant="acme").matches


def test_a_value_deep_inside_a_pasted_document_changes_nothing(memory: Memory) -> None:
    filler = " ".join(f"Line {n} of the pasted report says nothing of shoes." for n in range(700))
    pasted = f"Here is the report. {filler} {NEW}"
    assert len(pasted) > 20_000
    found = _ranked(memory, _said("jan", OLD, JAN), _said("apr", pasted, APR))
    assert dict(found).get("jan") is None, found
