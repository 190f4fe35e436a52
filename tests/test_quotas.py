"""Quotas that need no second store to check: the read rate and the packet size, the
token bucket, the quotas' own validation, and their HTTP status. The store-backed
ones (records held, jobs per minute, a flooding tenant) are in the conformance suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from memledger import InvalidInputError, Memory, QuotaExceededError, Quotas
from memledger.domain.quotas import RateGate
from memledger.index.derived import DerivedIndex
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.scenarios import TENANT, day, event, pref


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    index = DerivedIndex(tmp_path / "m.db.index", embedder=None)
    memory = Memory(open_store(tmp_path / "m.db"), clock=FrozenClock(day(10, 2)), index=index)
    memory.ingest(event("e1", "Fridays", occurred_at=day(10, 1)), [pref("friday")])
    return memory


def test_recalls_past_the_rate_are_refused_with_when_to_retry(memory: Memory) -> None:
    memory.set_quotas(Quotas(recalls_per_second=3), tenant=TENANT)
    for _ in range(3):  # a second's worth
        memory.recall("friday", tenant=TENANT)
    with pytest.raises(QuotaExceededError, match="recalls per second") as refused:
        memory.recall("friday", tenant=TENANT)
    assert refused.value.retry_after is not None and 0 < refused.value.retry_after <= 1 / 3
    with pytest.raises(QuotaExceededError):
        memory.context("when is my digest?", tenant=TENANT)  # packets count too
    memory.recall("friday", tenant="globex")  # another tenant's bucket is its own
    memory.close()


def test_a_packet_past_its_token_quota_is_refused(memory: Memory) -> None:
    memory.set_quotas(Quotas(packet_tokens=500), tenant=TENANT)
    with pytest.raises(QuotaExceededError, match="packet_tokens"):
        memory.context("when is my digest?", tenant=TENANT, budget=2000)
    assert memory.context("when is my digest?", tenant=TENANT, budget=500).tokens <= 500
    memory.close()


def test_the_bucket_refills_at_the_rate() -> None:
    now = [0.0]
    gate = RateGate(clock=lambda: now[0])
    assert [gate.take("a", 2) for _ in range(2)] == [0.0, 0.0]
    assert gate.take("a", 2) == pytest.approx(0.5)
    now[0] = 0.5
    assert gate.take("a", 2) == 0.0  # one token back after half a second
    slow = [gate.take("b", 0.5) for _ in range(2)]  # under one a second: one at a time
    assert slow[0] == 0.0 and slow[1] == pytest.approx(2.0)


@pytest.mark.parametrize(
    "bad",
    [
        {"max_records": 0},
        {"jobs_per_minute": 2.5},
        {"packet_tokens": True},
        {"recalls_per_second": 0},
        {"recalls_per_second": float("inf")},
    ],
)
def test_bad_quotas_are_refused_and_change_nothing(memory: Memory, bad: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError):
        Quotas(**bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        memory.set_quotas({"max_records": 3}, tenant=TENANT)  # type: ignore[arg-type]
    assert memory.quotas(tenant=TENANT) == Quotas()
    memory.close()


def test_quota_problems_are_429() -> None:
    from memledger.api._problems import problem_kind

    kind = problem_kind(QuotaExceededError("x", retry_after=1.0))
    assert kind is not None and (kind.status, kind.code) == (429, "quota_exceeded")


def test_quotas_on_the_command_line(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from memledger.cli import app

    db = str(tmp_path / "m.db")
    Memory(open_store(db)).close()
    base = ["quotas", "--db", db, "--tenant", TENANT, "--json"]
    runner = CliRunner()
    assert json.loads(runner.invoke(app, base).output)["max_records"] is None
    done = runner.invoke(app, [*base, "--max-records", "100", "--jobs-per-minute", "30"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output) == {
        "max_records": 100, "jobs_per_minute": 30, "recalls_per_second": None,
        "packet_tokens": None,
    }  # fmt: skip
    bad = runner.invoke(app, [*base, "--clear", "--max-records", "3"])
    assert bad.exit_code == 2 and "--clear" in bad.output
    cleared = runner.invoke(app, [*base, "--clear"])
    assert json.loads(cleared.output)["jobs_per_minute"] is None
