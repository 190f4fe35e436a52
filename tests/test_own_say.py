"""The subject's own say: what an authenticated user says about themself as the user
sets their personal attributes without a grant (where they live, work, what they
like...); a business setting (a delivery or contact preference) still needs a grant,
and nobody else's words (a peer's, the assistant's, an unauthenticated source's) are
the subject's say. A tenant can take the default away,
family by family, and a process whose cached schema has not seen that yet still
obeys it. Real SQLite, the default rule extractor."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memledger import Actor, Family, Memory, SourceEvent
from memledger.domain.records import Role
from memledger.errors import ConflictError

AT = datetime(2026, 10, 2, 9, tzinfo=UTC)


def _said(
    n: int,
    text: str,
    *,
    who: str = "user-5",
    role: Role | None = "user",
    authenticated: bool = True,
    tenant: str = "acme",
) -> SourceEvent:
    return SourceEvent(
        tenant=tenant,
        event_id=f"e{n}",
        subject="user-5",
        actor=Actor(id=who, authenticated=authenticated),  # no grant at all
        channel="chat",
        occurred_at=AT.replace(day=n),
        text=text,
        role=role,
    )


def _outcome(memory: Memory, event: SourceEvent, family: str) -> list[tuple[str, str | None]]:
    memory.ingest(event)
    memory.process()
    records = [
        r
        for r in memory.history("user-5", family, tenant=event.tenant)
        if r.source_event_id == event.event_id
    ]
    assert records, f"no {family} claim of {event.text!r}"
    return [(r.kind, r.exclusion) for r in records]


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    opened = Memory.open(f"sqlite:///{tmp_path / 'm.db'}")
    yield opened  # type: ignore[misc]
    opened.close()


def test_a_user_sets_where_they_live_without_a_grant(memory: Memory) -> None:
    assert _outcome(memory, _said(2, "I live in Lisbon these days."), "home_city") == [
        ("fact", None)
    ]
    assert [r.value for r in memory.current("user-5", "home_city", tenant="acme")] == ["Lisbon"]


@pytest.mark.parametrize(
    ("event", "why"),
    [
        (_said(2, "I live in Lisbon these days.", role=None), "not said as the user"),
        (_said(2, "I live in Lisbon these days.", role="assistant"), "the assistant's words"),
        (_said(2, "I live in Lisbon these days.", authenticated=False), "unauthenticated"),
    ],
)
def test_only_the_subjects_own_turn_is_their_say(
    memory: Memory, event: SourceEvent, why: str
) -> None:
    memory.ingest(event)
    memory.process()
    kinds = {r.kind for r in memory.history("user-5", "home_city", tenant="acme")}
    assert kinds <= {"observation"}, why
    assert memory.current("user-5", "home_city", tenant="acme") == (), why


def test_a_business_setting_still_needs_a_grant(memory: Memory) -> None:
    found = _outcome(memory, _said(2, "Please send my digest on Fridays."), "delivery_preference")
    assert found == [("observation", "no_grant")]


def test_a_tenant_takes_the_default_away_and_every_process_obeys(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    with Memory.open(url) as first, Memory.open(url) as second:
        assert _outcome(second, _said(2, "I live in Lisbon these days."), "home_city") == [
            ("fact", None)
        ]  # second's schema is cached now, with own say
        narrowed = Family(name="home_city", kinds=frozenset({"fact"}))
        assert first.register_family("acme", narrowed) == narrowed
        assert first.register_family("acme", narrowed) == narrowed  # again: a no-op
        assert not first.families_of("acme").family("home_city").own_say
        assert second.schema_for("acme", ["home_city"]).family("home_city").own_say  # stale
        found = _outcome(second, _said(3, "Actually I moved to Porto."), "home_city")
        assert found == [("observation", "no_grant")]
        assert [r.value for r in second.current("user-5", "home_city", tenant="acme")] == ["Lisbon"]
        # another tenant keeps the default; own say cannot be given back
        assert _outcome(first, _said(4, "I live in Oslo now.", tenant="globex"), "home_city") == [
            ("fact", None)
        ]
        with pytest.raises(ConflictError, match="cannot change"):
            first.register_family(
                "acme", Family(name="home_city", kinds=frozenset({"fact"}), own_say=True)
            )
