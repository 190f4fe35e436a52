"""Standing instructions and preferences (issue 10, item 3): found in the user's turns,
and surfaced by recall for a request in their scope even when ranking leaves them out."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memledger import Memory, SourceEvent
from memledger.domain.families import Schema
from memledger.domain.policy import authority
from memledger.domain.standing import standing
from memledger.index.derived import DerivedIndex
from memledger.read.recall import RecallResult, RecallSettings, recall
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.scenarios import actor, event
from memledger.write.extract.rules import RuleExtractor
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


def _recall(
    memory: Memory,
    index: DerivedIndex,
    asked: str,
    at: datetime,
    settings: RecallSettings | None = None,
) -> RecallResult:
    """The five most useful memories of tenant ``acme`` for ``asked``, valid at ``at``."""
    return recall(memory.reading, index, asked, tenant="acme", k=5, valid_at=at, settings=settings)


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
        speaker = actor(actor_id="ann" if n % 2 else "bob")
        said = event(
            f"t{n}", text, occurred_at=AT + timedelta(minutes=n), subject="u1", who=speaker
        )
        memory.ingest(said, [episode_of(said)])
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
        memory.ingest(
            event(
                f"t{n}",
                text,
                occurred_at=AT + timedelta(minutes=n),
                subject="u1",
                who=actor(actor_id=role),
                role=role,  # type: ignore[arg-type]
            )
        )
    memory.process(extractor=RuleExtractor())  # the instruction becomes a typed record
    asked = "Which library is used in this project?"
    with DerivedIndex(tmp_path / "m.index") as index:
        index.sync(memory.store)
        found = _recall(memory, index, asked, AT + timedelta(days=9))
        ids = [i.record.source_event_id for i in found.items]
        assert "t0" in ids[:5] and ids.index("t0") <= RecallSettings().standing_rank - 1
        item = next(i for i in found.items if i.record.source_event_id == "t0")
        assert "standing" in item.sources
        off = RecallSettings(standing_k=0)
        without = _recall(memory, index, asked, AT + timedelta(days=9), off)
        assert "t0" not in [i.record.source_event_id for i in without.items]
        # a request out of its scope does not bring it
        other = _recall(memory, index, "billing service team", AT + timedelta(days=9))
        assert "t0" not in [i.record.source_event_id for i in other.items]
    memory.close()


def user_turn(n: int, text: str, role: str | None = "user") -> SourceEvent:
    return event(
        f"i{n}",
        text,
        occurred_at=AT + timedelta(days=n),
        subject="u1",
        who=actor(actor_id=role or "ann"),
        role=role,  # type: ignore[arg-type]
    )


def test_a_users_instruction_is_kept_as_a_typed_record_of_their_own(tmp_path: Path) -> None:
    """No grant needed: how the user wants to be answered is the user's own say. A later
    instruction on the same matter closes the earlier one's window; nothing else
    (a peer's or the assistant's "always", an unauthenticated user) sets it."""
    clock = FrozenClock(AT)
    memory = Memory(open_store(tmp_path / "m.db"), clock=clock)
    for turn in (
        user_turn(0, "Always use semicolons when I ask about JavaScript."),
        user_turn(1, "Sure, I will always use semicolons.", "assistant"),
        user_turn(2, "Always end the answer with a joke.", None),  # between peers
        user_turn(3, "I prefer metric units, to be honest."),
        user_turn(4, "Never use semicolons."),
    ):
        clock.set(turn.occurred_at)
        memory.ingest(turn)
    clock.set(AT + timedelta(days=9))
    report = memory.process(extractor=RuleExtractor())
    assert report.outcomes == {"committed": 5}
    rules = sorted(memory.timeline("u1", "instruction", tenant="acme"), key=lambda r: r.valid_from)
    assert [(r.kind, r.value, r.authorised) for r in rules] == [
        ("procedure", {"rule": "Always use semicolons", "when": "JavaScript"}, True),
        ("preference", {"rule": "I prefer metric units", "when": ""}, True),
        ("procedure", {"rule": "Never use semicolons", "when": ""}, True),
    ]
    semicolons = [r for r in rules if "semicolons" in str(r.value)]
    assert semicolons[0].scope == semicolons[1].scope  # one matter: the later replaces
    assert semicolons[0].valid_until == semicolons[1].valid_from
    now = memory.current("u1", "instruction", tenant="acme", valid_at=AT + timedelta(days=9))
    assert sorted(str(r.value["rule"]) for r in now) == [  # type: ignore[index]
        "I prefer metric units",
        "Never use semicolons",
    ]
    memory.close()


@pytest.mark.parametrize("role", [None, "assistant", "tool"])
def test_only_a_users_turn_proposes_an_instruction(role: str | None) -> None:
    text = "Always use semicolons when I ask about JavaScript."
    said = RuleExtractor().extract(user_turn(0, text))
    assert [c.family for c in said.claims] == ["instruction"]
    other = RuleExtractor().extract(user_turn(0, text, role))
    assert "instruction" not in [c.family for c in other.claims]


def test_the_own_say_of_a_family_needs_the_users_own_authenticated_turn() -> None:
    kwargs = {"subject": "u1", "family": "instruction", "scope": "rule:x", "kind": "procedure"}
    said = user_turn(0, "Always answer in French.")
    assert authority(said, own_say=True, **kwargs).authorised  # type: ignore[arg-type]
    assert authority(said, **kwargs).reason == "no_grant"  # type: ignore[arg-type]
    for turn, reason in (
        (user_turn(0, "Always answer in French.", None), "no_grant"),
        (user_turn(0, "Always answer in French.", "assistant"), "agent_words"),
        (user_turn(0, "Always answer in French.", "tool"), "no_grant"),
        (replace(said, actor=actor(authenticated=False, actor_id="u1")), "unauthenticated"),
        (replace(said, actor=actor(actor_id="u1"), channel="document"), "untrusted_source"),
    ):
        found = authority(turn, own_say=True, **kwargs)  # type: ignore[arg-type]
        assert (found.authorised, found.reason) == (False, reason)
    other = dict(kwargs, subject="u2")
    assert authority(said, own_say=True, **other).reason == "foreign_subject"  # type: ignore[arg-type]
    assert Schema.default().family("instruction").own_say
    assert Schema.default().family("likes").own_say  # a personal attribute
    assert not Schema.default().family("delivery_preference").own_say  # a business setting


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (
            "I'm setting up Bootstrap 5.3 and I prefer it over Foundation, can you help?",
            "preference",
        ),
        ("Do I prefer tea or coffee?", None),
        ("Which do I prefer, the red one?", None),
        ("Should I always use tabs?", None),
    ],
)
def test_a_preference_stated_inside_a_request_counts(text: str, kind: str | None) -> None:
    found = standing(text)
    assert (found.kind if found else None) == kind


def test_an_instruction_in_scope_by_meaning_alone(tmp_path: Path) -> None:
    """ "Keeping my information safe online" shares no word with "data privacy"; the
    packaged semantic embedder finds that scope nearest, and recall brings the
    instruction. Words alone (``standing_cosine=0``) do not."""
    from memledger.index.embedders import default_embedder

    embedder = default_embedder()
    if embedder.name.startswith("hashing:"):
        pytest.skip("no semantic embedder installed")
    turns = [
        "Always include data encryption details when I ask about data privacy.",
        "Always include narrator details when I ask about audiobook recommendations.",
        *[f"Which trail should we hike on weekend number {n}?" for n in range(12)],
    ]
    clock = FrozenClock(AT)
    memory = Memory(open_store(tmp_path / "m.db"), clock=clock)
    for n, text in enumerate(turns):
        clock.set(AT + timedelta(days=n))  # queued in the order they were said
        memory.ingest(user_turn(n, text))
    memory.process(extractor=RuleExtractor())
    asked = "What should I know about keeping my information safe online?"
    with DerivedIndex(tmp_path / "m.index", embedder=embedder) as index:
        index.sync(memory.store)
        at = AT + timedelta(days=20)
        found = _recall(memory, index, asked, at)
        by_event = {i.record.source_event_id: i for i in found.items}
        assert "standing" in by_event["i0"].sources
        assert "i1" not in by_event  # the other instruction is out of scope
        words_only = RecallSettings(standing_cosine=0.0)
        found = _recall(memory, index, asked, at, words_only)
        assert "i0" not in [i.record.source_event_id for i in found.items]
        strict = RecallSettings(standing_min_cosine=0.95)
        found = _recall(memory, index, asked, at, strict)
        assert "i0" not in [i.record.source_event_id for i in found.items]
    memory.close()


def test_only_the_current_instruction_is_in_scope(tmp_path: Path) -> None:
    """ "Never ..." after "Always ..." on the same matter: the typed record of the first
    is closed, so recall brings the second only; a revoked instruction none."""
    clock = FrozenClock(AT)
    memory = Memory(open_store(tmp_path / "m.db"), clock=clock)
    turns = [
        "Always include version numbers when I ask about libraries.",
        "Never include version numbers when I ask about libraries.",
        *[f"Which trail should we hike on weekend number {n}?" for n in range(12)],
    ]
    for n, text in enumerate(turns):
        clock.set(AT + timedelta(days=n))
        memory.ingest(user_turn(n, text))
    memory.process(extractor=RuleExtractor())
    asked = "Which libraries does the billing service use?"
    at = AT + timedelta(days=30)
    clock.set(at)
    with DerivedIndex(tmp_path / "m.index") as index:
        index.sync(memory.store)
        found = _recall(memory, index, asked, at)
        standing_items = [i for i in found.items if "standing" in i.sources]
        assert [i.record.source_event_id for i in standing_items] == ["i1"]
        assert standing_items[0].record.family == "instruction"
        memory.revoke(standing_items[0].record.memory_id, tenant="acme", reason="asked")
        index.sync(memory.store)
        found = _recall(memory, index, asked, at)
        assert not [i for i in found.items if "standing" in i.sources]
    memory.close()


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("I prefer metric units, to be honest.", "I prefer metric units"),
        (
            "I'm drafting my essay, and I prefer Word over Google Docs, so what should I do?",
            "I prefer Word over Google Docs",
        ),
        ("I really prefer tea but my wife likes coffee.", "I really prefer tea"),
    ],
)
def test_a_preference_is_the_clause_that_states_it(text: str, rule: str) -> None:
    found = standing(text)
    assert found is not None and found.rule == rule
