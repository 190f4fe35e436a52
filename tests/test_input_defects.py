"""Bad input is refused with a MemledgerError and changes nothing (issue 9, item 5).

Each test names a defect of the issue: before the fix the input escaped as a
builtin exception (OverflowError, UnicodeEncodeError, RecursionError, TypeError)
from deep inside json or sqlite, or was accepted.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from cli_helpers import snapshot
from input_helpers import NOW, claim, event
from memledger import (
    InvalidClaimError,
    InvalidEventError,
    InvalidIntervalError,
    InvalidQueryError,
    MemledgerError,
    Memory,
    RecallSettings,
)
from memledger.domain.records import MAX_DEPTH, ExtractorInfo
from memledger.testing import FrozenClock

EARLY = datetime(1, 1, 1, 1, tzinfo=timezone(timedelta(hours=5)))  # before year 1 in UTC
LATE = datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5)))  # after 9999 in UTC


def nested(depth: int) -> object:
    return functools.reduce(lambda inner, _: [inner], range(depth), 1)


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(NOW)


@pytest.fixture
def memory(memory: Memory) -> Memory:
    """The shared fixture's memory, holding ``evt-0`` and its claim."""
    receipt = memory.ingest(event("evt-0"), [claim()])
    assert receipt.outcome == "committed"
    return memory


def refused(
    db: Path, call: Callable[[], object], error: type[MemledgerError], *fragments: str
) -> str:
    """``call`` raises ``error`` (nothing else) and the store file is unchanged."""
    before = snapshot(db)
    with pytest.raises(MemledgerError) as caught:
        call()
    assert isinstance(caught.value, error), repr(caught.value)
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message, message
    assert snapshot(db) == before
    return message


# -- datetimes that overflow when converted to UTC -> OverflowError ---------------------


@pytest.mark.parametrize("moment", [EARLY, LATE], ids=["early", "late"])
def test_a_datetime_outside_utc_range_is_refused(moment: datetime) -> None:
    with pytest.raises(InvalidEventError, match=r"occurred_at .* is out of range"):
        event(occurred_at=moment)
    for name in ("valid_from", "valid_until"):
        with pytest.raises(InvalidIntervalError, match=rf"{name} .* is out of range"):
            claim(**{name: moment})


@pytest.mark.parametrize("moment", [EARLY, LATE], ids=["early", "late"])
def test_a_read_at_a_datetime_outside_utc_range_is_refused(
    memory: Memory, db: Path, moment: datetime
) -> None:
    calls: list[Callable[[], object]] = [
        lambda: memory.current("user-42", "home_city", tenant="acme", valid_at=moment),
        lambda: memory.current("user-42", "home_city", tenant="acme", as_of=moment),
        lambda: memory.timeline("user-42", "home_city", tenant="acme", as_of=moment),
        lambda: memory.recall("Lyon", tenant="acme", valid_at=moment, sync=False),
    ]
    for call in calls:
        refused(db, call, InvalidQueryError, "out of range")


# -- a lone surrogate in text -> UnicodeEncodeError from sqlite --------------------------


def test_a_lone_surrogate_is_refused_wherever_text_goes(memory: Memory, db: Path) -> None:
    bad = "Lyon \ud800"
    (lyon,) = (r.memory_id for r in memory.current("user-42", "home_city", tenant="acme"))
    cases: dict[str, tuple[Callable[[], object], type[MemledgerError]]] = {
        "text": (lambda: memory.ingest(event(text=bad)), InvalidEventError),
        "metadata": (lambda: memory.ingest(event(metadata={"note": bad})), InvalidEventError),
        "metadata key": (lambda: memory.ingest(event(metadata={bad: 1})), InvalidEventError),
        "statement": (lambda: memory.ingest(event(), [claim(statement=bad)]), InvalidClaimError),
        "value": (
            lambda: memory.ingest(event(), [claim(value={"city": [bad]})]),
            InvalidClaimError,
        ),
        "grounding": (lambda: memory.ingest(event(), [claim(grounding=bad)]), InvalidClaimError),
        "extractor": (
            lambda: memory.ingest(event(), [claim()], extractor=ExtractorInfo(name=bad)),
            InvalidClaimError,
        ),
        "reason": (
            lambda: memory.revoke_family("user-42", "home_city", tenant="acme", reason=bad),
            MemledgerError,
        ),
        "reason of one": (lambda: memory.revoke(lyon, tenant="acme", reason=bad), MemledgerError),
        "query": (lambda: memory.recall(bad, tenant="acme", sync=False), InvalidQueryError),
    }
    for name, (call, error) in cases.items():
        message = refused(db, call, error, "lone surrogate")
        assert "'\\ud800'" in message, (name, message)
    head = memory.current("user-42", "home_city", tenant="acme")
    assert [r.value for r in head] == ["Lyon"]  # the revocation with a bad reason did nothing


# -- sequence=2**63 -> OverflowError from sqlite -----------------------------------------


def test_a_sequence_beyond_64_bits_is_refused(memory: Memory, db: Path) -> None:
    refused(db, lambda: memory.ingest(event(sequence=2**63)), InvalidEventError, "2**63 - 1")
    receipt = memory.ingest(event("evt-max", sequence=2**63 - 1))
    assert receipt.outcome == "queued"
    assert memory.event("evt-max", tenant="acme").sequence == 2**63 - 1


# -- a value nested 100,000 deep -> RecursionError from json ----------------------------


def test_a_value_nested_100000_deep_is_refused_without_recursion(memory: Memory, db: Path) -> None:
    deep = nested(100_000)
    with pytest.raises(InvalidClaimError, match=f"value nests more than {MAX_DEPTH} levels"):
        claim(value=deep)
    with pytest.raises(InvalidEventError, match=f"metadata nests more than {MAX_DEPTH} levels"):
        event(metadata={"deep": deep})
    looped: list[object] = []
    looped.append(looped)
    with pytest.raises(InvalidClaimError, match="nests more than"):
        claim(value=looped)
    assert claim(value=nested(MAX_DEPTH)).value == nested(MAX_DEPTH)


# -- min_revision="5", ingest(event, 5) -> TypeError ------------------------------------


def test_min_revision_must_be_a_whole_number(memory: Memory, db: Path) -> None:
    for bad in ("5", 5.0, True, -1, [5]):
        calls: list[Callable[[], object]] = [
            lambda bad=bad: memory.current("user-42", "home_city", tenant="acme", min_revision=bad),
            lambda bad=bad: memory.timeline(
                "user-42", "home_city", tenant="acme", min_revision=bad
            ),
            lambda bad=bad: memory.recall(
                "Lyon", tenant="acme", subject="user-42", min_revision=bad, sync=False
            ),
        ]
        for call in calls:
            refused(db, call, InvalidQueryError, "min_revision must be a whole number")
    assert memory.current("user-42", "home_city", tenant="acme", min_revision=1)


def test_claims_must_be_a_sequence_of_claims(memory: Memory, db: Path) -> None:
    message = refused(db, lambda: memory.ingest(event(), 5), InvalidClaimError)  # type: ignore[arg-type]
    assert message == "claims must be a sequence of Claim (or None), got int"
    for bad in ("Lives in Lyon", [{"family": "home_city"}], [claim(), None]):
        refused(db, lambda bad=bad: memory.ingest(event(), bad), InvalidClaimError, "claim")  # type: ignore[arg-type]
    refused(db, lambda: memory.ingest(event(), [claim()], complete="yes"), InvalidClaimError)  # type: ignore[arg-type]
    refused(db, lambda: memory.ingest(event(), [claim()], extractor="me"), InvalidClaimError)  # type: ignore[arg-type]
    job = memory.ingest(event("evt-job")).job_id
    assert job is not None
    refused(
        db,
        lambda: memory.commit_job(job, 5, tenant="acme"),  # type: ignore[arg-type]
        InvalidClaimError,
        "claims must be a sequence",
    )


# -- RecallSettings(context_anchors=1.5) -> TypeError when recall slices ----------------


@pytest.mark.parametrize(
    "fields",
    [
        {"context_anchors": 1.5},
        {"candidates": 1.5},
        {"candidates": "50"},
        {"candidates": True},
        {"candidates": 2**63},
        {"context_anchors": -1},
        {"tau_days": "180"},
        {"tau_days": float("inf")},
        {"floor": True},
        {"context_after": 0.5},
        {"context_after": ("0.5",)},
    ],
)
def test_recall_settings_must_be_numbers_of_the_right_kind(fields: dict[str, object]) -> None:
    with pytest.raises(InvalidQueryError, match=next(iter(fields))):
        RecallSettings(**fields)  # type: ignore[arg-type]


def test_recall_refuses_settings_of_another_type(memory: Memory, db: Path) -> None:
    refused(
        db,
        lambda: memory.recall("Lyon", tenant="acme", settings={"floor": 0}, sync=False),  # type: ignore[arg-type]
        InvalidQueryError,
        "settings must be a RecallSettings",
    )


# -- other arguments that used to escape as builtin exceptions --------------------------


def test_unhashable_names_are_refused_not_type_errors(memory: Memory, db: Path) -> None:
    with pytest.raises(InvalidEventError, match="channel"):
        event(channel=["chat"])
    with pytest.raises(InvalidClaimError, match="kind"):
        claim(kind=["fact"])
    with pytest.raises(InvalidClaimError, match="grounding"):
        claim(grounding=5)
    for call in (
        lambda: memory.current("user-42", ["home_city"], tenant="acme"),  # type: ignore[arg-type]
        lambda: memory.current("user-42", "home_city", tenant="acme", scope=["global"]),  # type: ignore[arg-type]
        lambda: memory.revoke_family("user-42", ["home_city"], tenant="acme"),  # type: ignore[arg-type]
        lambda: memory.revoke("mem-\ud800", tenant="acme"),
        lambda: memory.revoke_family(None, "home_city", tenant="acme"),  # type: ignore[arg-type]
        lambda: memory.timeline(None, "home_city", tenant="acme"),  # type: ignore[arg-type]
        lambda: memory.commit_job("job-\ud800", [], tenant="acme"),
    ):
        refused(db, call, InvalidQueryError)
