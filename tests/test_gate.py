"""The action gate (issue 11, item 8): live state only, fails closed, never takes a
memory or a packet as evidence, and records its decision against the trace."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memledger import InvalidInputError, Memory
from memledger.gate import Verdict, decisions
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.scenarios import actor, event

NOW = datetime(2026, 10, 28, 9, 15, tzinfo=UTC)
ORDERS = {"7842": {"status": "CREDIT_HOLD", "finance_approval": None}}


def on_hold() -> Verdict:
    order = ORDERS["7842"]
    return Verdict(
        ok=order["status"] != "CREDIT_HOLD",
        reason=f"order 7842 is {order['status']}",
        source="order-service",
        observed_at=NOW,
        evidence={"status": order["status"]},
    )


def approved() -> Verdict:
    found = ORDERS["7842"]["finance_approval"]
    return Verdict(
        ok=found is not None,
        reason="Finance approval recorded" if found else "no Finance approval recorded",
        source="approvals",
        observed_at=NOW,
    )


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    memory = Memory(open_store(tmp_path / "m.db"), clock=FrozenClock(NOW))
    said = "You released order 7311 as a one-time exception last month."
    memory.ingest(
        event("e1", said, occurred_at=NOW, subject="acct-9", who=actor(actor_id="acct-9"))
    )
    memory.process()
    yield memory
    memory.close()


def test_the_gate_decides_on_live_state_and_records_it_against_the_trace(
    memory: Memory,
) -> None:
    packet = memory.context("Release order 7842 like order 7311", tenant="acme", budget=600)
    checks = {"credit_hold": on_hold, "finance_approval": approved}
    denied = memory.gate("release order 7842", checks, tenant="acme", trace_id=packet.trace_id)
    assert not denied.allowed
    assert denied.reasons == [
        "credit_hold: order 7842 is CREDIT_HOLD",
        "finance_approval: no Finance approval recorded",
    ]
    ORDERS["7842"] = {"status": "RELEASABLE", "finance_approval": None}
    try:  # one check of two passing is not enough
        half = memory.gate("release order 7842", checks, tenant="acme", trace_id=packet.trace_id)
    finally:
        ORDERS["7842"] = {"status": "CREDIT_HOLD", "finance_approval": None}
    assert not half.allowed and half.reasons == ["finance_approval: no Finance approval recorded"]
    ORDERS["7842"] = {"status": "RELEASABLE", "finance_approval": "fin-31"}
    try:
        allowed = memory.gate("release order 7842", checks, tenant="acme", trace_id=packet.trace_id)
    finally:
        ORDERS["7842"] = {"status": "CREDIT_HOLD", "finance_approval": None}
    assert allowed.allowed and allowed.reasons == []
    recorded = decisions(memory.store, tenant="acme", trace_id=packet.trace_id)
    assert [d["allowed"] for d in recorded] == [False, False, True]
    assert recorded[0]["checks"]["credit_hold"]["source"] == "order-service"  # type: ignore[index]


def test_a_check_that_fails_denies(memory: Memory) -> None:
    def down() -> Verdict:
        raise TimeoutError("order service timed out")

    decision = memory.gate("release order 7842", {"credit_hold": down}, tenant="acme")
    assert not decision.allowed
    assert decision.reasons == ["credit_hold: check failed (TimeoutError: order service timed out)"]


def test_memory_is_never_evidence(memory: Memory) -> None:
    packet = memory.context("order 7311 exception", tenant="acme", budget=600)
    (record,) = memory.timeline("acct-9", "conversation", tenant="acme")
    remembered = memory.recall("order 7311 exception", tenant="acme")
    for answer in (record, packet, packet.items[0], remembered, remembered.items[0]):
        with pytest.raises(InvalidInputError, match="memory is not evidence"):
            memory.gate("release", {"x": lambda answer=answer: answer}, tenant="acme")
    with pytest.raises(InvalidInputError, match="memory is not evidence"):
        Verdict(ok=True, reason="remembered", source="memory", observed_at=NOW)
    with pytest.raises(InvalidInputError, match="memory is not evidence"):
        Verdict(ok=True, reason="remembered", source=record.memory_id, observed_at=NOW)
    with pytest.raises(InvalidInputError, match="not a value"):
        memory.gate("release", {"x": True}, tenant="acme")  # type: ignore[dict-item]
    with pytest.raises(InvalidInputError, match="at least one check"):
        memory.gate("release", {}, tenant="acme")
    with pytest.raises(InvalidInputError, match="no trace"):
        memory.gate("release", {"x": approved}, tenant="acme", trace_id="ctx-unknown")
    with memory.store.read() as unit:  # nothing refused was recorded
        assert unit.decisions("acme", trace_id=packet.trace_id) == []
