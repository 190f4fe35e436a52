"""Documented, configurable input limits (issue 9, item 6, the input half).

Before: a 10 MB turn was accepted. Now ``Memory.ingest`` and ``Memory.commit_job``
check an event and its claims against ``memory.limits`` before the write
transaction; over a limit is a LimitExceededError naming it, and changes nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

import pytest

from cli_helpers import snapshot
from input_helpers import NOW, claim, event
from memledger import (
    Actor,
    Grant,
    InvalidInputError,
    LimitExceededError,
    Limits,
    Memory,
)
from memledger.domain.limits import check_claims, check_event
from memledger.testing import FrozenClock

MIB = 1024 * 1024


def nested(depth: int) -> object:
    return functools.reduce(lambda inner, _: [inner], range(depth - 1), [1])


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(NOW)


@pytest.fixture
def memory(memory: Memory) -> Memory:
    """The shared fixture's memory, holding ``evt-0`` and its claim."""
    memory.ingest(event("evt-0"), [claim()])
    return memory


def over(db: Path, call: Callable[[], object], message: str) -> None:
    before = snapshot(db)
    with pytest.raises(LimitExceededError) as caught:
        call()
    assert str(caught.value) == message
    assert snapshot(db) == before


def test_the_defaults_are_documented_and_usable() -> None:
    limits = Limits()
    assert (limits.max_text_chars, limits.max_statement_chars, limits.max_claims) == (
        8_388_608,
        10_000,
        256,
    )
    assert (limits.max_metadata_bytes, limits.max_metadata_depth) == (65_536, 16)
    assert (limits.max_value_bytes, limits.max_value_depth) == (65_536, 16)
    assert limits.max_id_chars == 255
    assert issubclass(LimitExceededError, InvalidInputError)
    assert issubclass(LimitExceededError, ValueError)
    for item in fields(Limits):
        assert f"{item.name}=" in (Limits.__doc__ or "") or item.name in _limits_page(), item.name


def _limits_page() -> str:
    return (Path(__file__).parent.parent / "docs" / "limits.md").read_text(encoding="utf-8")


def test_a_10_mb_turn_is_refused(memory: Memory, db: Path) -> None:
    over(
        db,
        lambda: memory.ingest(event(text="x" * (10 * MIB))),
        "text has 10,485,760 characters; the limit is max_text_chars=8,388,608",
    )
    assert memory.ingest(event("evt-2", text="x" * 100_001)).outcome == "queued"


def test_every_limit_is_checked_and_named(memory: Memory, db: Path) -> None:
    big = "x" * 70_000
    cases: dict[str, tuple[Callable[[], object], str]] = {
        "metadata size": (
            lambda: memory.ingest(event(metadata={"blob": big})),
            "metadata has 70,011 bytes of JSON; the limit is max_metadata_bytes=65,536",
        ),
        "metadata depth": (
            lambda: memory.ingest(event(metadata={"deep": nested(16)})),
            "metadata has 17 levels of nesting; the limit is max_metadata_depth=16",
        ),
        "value size": (
            lambda: memory.ingest(event(), [claim(), claim(value=[big])]),
            "claims[1].value has 70,004 bytes of JSON; the limit is max_value_bytes=65,536",
        ),
        "value depth": (
            lambda: memory.ingest(event(), [claim(value=nested(17))]),
            "claims[0].value has 17 levels of nesting; the limit is max_value_depth=16",
        ),
        "statement": (
            lambda: memory.ingest(event(), [claim(statement="s" * 10_001)]),
            "claims[0].statement has 10,001 characters; the limit is max_statement_chars=10,000",
        ),
        "grounding": (
            lambda: memory.ingest(event(), [claim(grounding="g" * 10_001)]),
            "claims[0].grounding has 10,001 characters; the limit is max_statement_chars=10,000",
        ),
        "claims": (
            lambda: memory.ingest(event(), [claim()] * 257),
            "the event has 257 claims; the limit is max_claims=256",
        ),
        "reason": (
            lambda: memory.revoke_family(
                "user-42", "home_city", tenant="acme", reason="r" * 10_001
            ),
            "reason has 10,001 characters; the limit is max_statement_chars=10,000",
        ),
    }
    for name, (call, message) in cases.items():
        try:
            over(db, call, message)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from exc
    # exactly at each limit is accepted
    at_limit = event("evt-at", metadata={"deep": nested(15)})
    check_event(at_limit, Limits())
    check_claims([claim(value=nested(16), statement="s" * 10_000)] * 256, Limits())


def test_claims_of_a_job_are_checked_before_its_transaction(memory: Memory, db: Path) -> None:
    job = memory.ingest(event("evt-job")).job_id
    assert job is not None
    over(
        db,
        lambda: memory.commit_job(job, [claim(statement="s" * 10_001)], tenant="acme"),
        "claims[0].statement has 10,001 characters; the limit is max_statement_chars=10,000",
    )
    assert memory.commit_job(job, [claim()], tenant="acme").job_id == job


def test_limits_are_configurable(tmp_path: Path) -> None:
    tight = Limits(max_text_chars=10, max_claims=1, max_id_chars=9, max_metadata_depth=1)
    path = tmp_path / "tight.db"
    with Memory.open(path, clock=FrozenClock(NOW), limits=tight) as memory:
        assert memory.limits is tight
        over(
            path,
            lambda: memory.ingest(event(text="a" * 11)),
            "text has 11 characters; the limit is max_text_chars=10",
        )
        over(
            path,
            lambda: memory.ingest(event("evt-123456789", text="short")),
            "event_id has 13 characters; the limit is max_id_chars=9",
        )
        over(
            path,
            lambda: memory.ingest(
                event(
                    text="short",
                    actor=Actor(
                        id="a", grants=frozenset({Grant(family="plan", scope="team:berlin")})
                    ),
                )
            ),
            "grant 'plan:team:berlin' scope has 11 characters; the limit is max_id_chars=9",
        )
        over(
            path,
            lambda: memory.ingest(event(text="short", metadata={"a": {}})),
            "metadata has 2 levels of nesting; the limit is max_metadata_depth=1",
        )
        over(
            path,
            lambda: memory.ingest(event(text="short"), [claim(), claim(value="Paris")]),
            "the event has 2 claims; the limit is max_claims=1",
        )
    roomy = Limits(max_text_chars=20 * MIB)
    with Memory(Memory.open(tmp_path / "roomy.db").store, limits=roomy) as memory:
        assert memory.ingest(event(text="x" * (10 * MIB))).outcome == "queued"
    assert Memory.open(tmp_path / "default.db").limits == Limits()


@pytest.mark.parametrize(
    "fields",
    [
        {"max_text_chars": 0},
        {"max_claims": -1},
        {"max_claims": 1.5},
        {"max_claims": True},
        {"max_value_depth": 65},
        {"max_metadata_depth": 100},
        {"max_id_chars": 256},
    ],
)
def test_a_limit_must_be_a_positive_whole_number_within_the_hard_ones(
    fields: dict[str, object],
) -> None:
    with pytest.raises(InvalidInputError, match=f"Limits.{next(iter(fields))}"):
        Limits(**fields)  # type: ignore[arg-type]


def test_memory_takes_only_a_limits(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="limits must be a Limits"):
        Memory.open(tmp_path / "x.db", limits={"max_text_chars": 5})  # type: ignore[arg-type]
    assert not (tmp_path / "x.db").exists()
