"""A later turn that changes a current value no claim changed is listed for review
("possible update not understood"), and recall ranks it above the value. Real SQLite
store and index, the default rule extractor (which knows no budget family)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from memledger import Claim, Memory, SourceEvent
from memledger.api import create_app
from memledger.cli.app import app
from memledger.domain.families import Family
from memledger.domain.records import ExtractorInfo
from memledger.errors import InvalidQueryError
from memledger.ports import Extraction
from memledger.testing.http import serve
from memledger.testing.scenarios import actor, event, fact
from memledger.write.extract.rules import RuleExtractor

ASKED = datetime(2026, 5, 1, tzinfo=UTC)
JAN, FEB, APR = (datetime(2026, m, d, tzinfo=UTC) for m, d in ((1, 10), (2, 3), (4, 2)))


def _budget(
    amount: int, statement: str, grounding: str, since: datetime, scope: str = "global"
) -> Claim:
    """A ``budget`` fact of ``amount`` US dollars, from ``since``."""
    value = {"amount": amount, "currency": "USD"}
    return fact("budget", statement, value, grounding=grounding, scope=scope, valid_from=since)


BUDGET = _budget(600, "Annual sneaker budget is $600", "my $600 annual budget", JAN)
SAID = "I've spent $575 on sneakers this year and I'm close to my $600 annual budget."
CHANGED = "I'm looking at new sneakers with my increased budget of $650, any tips?"
QUESTION = "What is my annual budget for sneakers?"


def _said(event_id: str, text: str, at: datetime, *, who: str = "user-9") -> SourceEvent:
    """A turn of ``who`` about user-9 (who holds every grant)."""
    speaker = actor("*", actor_id=who)
    return event(event_id, text, occurred_at=at, subject="user-9", who=speaker, role="user")


class _Adding:
    """The rule extractor, with one more claim for some events."""

    def __init__(self, more: dict[str, Claim]) -> None:
        self.rules = RuleExtractor()
        self.more = more

    @property
    def info(self) -> ExtractorInfo:
        return self.rules.info

    def extract(self, event: SourceEvent) -> Extraction:
        found = self.rules.extract(event)
        extra = self.more.get(event.event_id)
        return replace(found, claims=(*found.claims, extra)) if extra else found


@pytest.fixture
def memory(indexed_memory: Callable[[datetime], Memory]) -> Memory:
    opened = indexed_memory(ASKED)  # its store is the ``db`` fixture's
    opened.register_family("acme", Family(name="budget", kinds=frozenset({"fact"})))
    opened.ingest(_said("jan", SAID, JAN), [BUDGET])
    return opened


def test_a_turn_that_changes_a_value_no_claim_changed_is_listed(memory: Memory) -> None:
    memory.ingest(_said("feb", "Running is going well, three times a week.", FEB))
    memory.ingest(_said("apr", CHANGED, APR))
    memory.process()
    (current,) = memory.current("user-9", "budget", tenant="acme")
    (found,) = memory.possible_updates("user-9", tenant="acme")
    assert found.current == current
    assert (found.turn.kind, found.turn.source_event_id) == ("episode", "apr")
    assert found.reason == "possible update not understood"
    # and recall puts the turn above the value it seems to change, marked
    items = memory.recall(QUESTION, tenant="acme", subject="user-9").items
    order = [i.record.memory_id for i in items]
    assert order.index(found.turn.memory_id) < order.index(current.memory_id)
    (value,) = [i for i in items if i.record.memory_id == current.memory_id]
    assert value.possibly_outdated_by == found.turn.memory_id


def test_an_unrelated_turn_is_not_listed(memory: Memory) -> None:
    memory.ingest(_said("feb", "I ran 12 km on Sunday, a new record for me.", FEB))
    memory.process()
    assert memory.possible_updates("user-9", tenant="acme") == ()


def test_a_turn_whose_event_gave_a_claim_of_the_family_was_understood(memory: Memory) -> None:
    # its claim went to another scope: the old value stays current, but nothing was missed
    elsewhere = _budget(
        650, "Running shoe budget is $650", "increased budget of $650", APR, "running-shoes"
    )
    memory.ingest(_said("apr", CHANGED, APR))
    memory.process(extractor=_Adding({"apr": elsewhere}))
    assert {r.claim for r in memory.current("user-9", "budget", tenant="acme")} == {
        "Annual sneaker budget is $600",
        "Running shoe budget is $650",
    }
    assert memory.possible_updates("user-9", tenant="acme") == ()


def test_a_claim_with_another_number_updates_the_value_it_resembles(memory: Memory) -> None:
    changed = _budget(650, "Annual sneaker budget is $650", "increased budget of $650", APR)
    receipt = memory.ingest(_said("apr", CHANGED, APR), [changed])
    assert [r.decision for r in receipt.results] == ["update"]
    old, new = memory.timeline("user-9", "budget", tenant="acme")
    assert (old.claim, old.valid_until, new.claim) == (
        "Annual sneaker budget is $600",
        APR,
        "Annual sneaker budget is $650",
    )


def test_another_speakers_turn_and_a_value_in_the_past_are_not_listed(memory: Memory) -> None:
    memory.ingest(_said("apr", CHANGED, APR, who="friend-2"))
    memory.process()
    assert memory.possible_updates("user-9", tenant="acme") == ()
    memory.ingest(_said("apr-2", CHANGED, APR))
    memory.process()
    assert len(memory.possible_updates("user-9", tenant="acme")) == 1
    # before January nothing was current, so nothing could be changed
    before = datetime(2025, 12, 1, tzinfo=UTC)
    assert memory.possible_updates("user-9", tenant="acme", valid_at=before) == ()


def test_bad_arguments_are_clear_errors(memory: Memory) -> None:
    with pytest.raises(InvalidQueryError, match="subject"):
        memory.possible_updates("", tenant="acme")
    with pytest.raises(InvalidQueryError, match="valid_at"):
        memory.possible_updates("user-9", tenant="acme", valid_at=datetime(2026, 1, 1))


def test_the_cli_lists_them(memory: Memory, db: Path) -> None:
    memory.ingest(_said("apr", CHANGED, APR))
    memory.process()
    args = ["reviews", "updates", "user-9", "--db", str(db), "--tenant", "acme"]
    shown = CliRunner().invoke(app, args)
    assert shown.exit_code == 0, shown.output
    assert "possible update not understood" in shown.output and "$650" in shown.output
    listed = CliRunner().invoke(app, [*args, "--json"])
    assert listed.exit_code == 0, listed.output
    (item,) = json.loads(listed.output)
    assert item["reason"] == "possible update not understood"
    assert item["current"]["claim"] == "Annual sneaker budget is $600"
    assert item["turn"]["source_event_id"] == "apr"


def test_the_http_api_lists_them_to_a_reader_of_the_subject(memory: Memory) -> None:
    memory.ingest(_said("apr", CHANGED, APR))
    memory.process()
    _, reader = memory.create_key("acme", "auditor", role="read")
    _, stranger = memory.create_key("globex", "admin-g", role="admin", grants=["*"])
    with serve(create_app(memory)) as url:
        path = "/v1/subjects/user-9/possible-updates"
        listed = httpx.get(url + path, headers={"Authorization": f"Bearer {reader}"})
        assert listed.status_code == 200, listed.text
        (item,) = listed.json()
        assert (item["current"]["family"], item["turn"]["source_event_id"]) == ("budget", "apr")
        assert item["reason"] == "possible update not understood"
        # another tenant's key sees nothing of acme's subject
        theirs = httpx.get(url + path, headers={"Authorization": f"Bearer {stranger}"})
        assert theirs.status_code == 200 and theirs.json() == []
