"""Per-tenant quotas through ``Memory`` on a real SQLite file: each kind enforced at
exactly its limit and one past it, the refused request changing nothing; the token
bucket, the quotas' own validation, their HTTP status and the command line. Over
HTTP: ``tests/api/test_api_quotas.py``; a flooding tenant: the conformance suite."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from memledger import InvalidInputError, Memory, QuotaExceededError, Quotas
from memledger.domain.quotas import RateGate
from memledger.index.derived import DerivedIndex
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.scenarios import TENANT, day, event, pref, snapshot


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(day(10, 2))


@pytest.fixture
def memory(tmp_path: Path, clock: FrozenClock) -> Memory:
    index = DerivedIndex(tmp_path / "m.db.index", embedder=None)
    memory = Memory(open_store(tmp_path / "m.db"), clock=clock, index=index)
    memory.ingest(event("e1", "Fridays", occurred_at=day(10, 1)), [pref("friday")])
    return memory


def _still(memory: Memory) -> list[float]:
    """Hold the time of ``memory``'s recall buckets still: a test moves it by hand."""
    now = [0.0]
    memory._tenant_quotas.rates = RateGate(clock=lambda: now[0])
    return now


def _reads(memory: Memory) -> tuple[object, ...]:
    """What a recall or a packet leaves behind: read counters and stored traces."""
    with memory.store.read() as unit:
        traces = tuple(t.trace_id for t in unit.traces(TENANT))
    return (memory.read_stats.snapshot(), traces)


def test_records_are_refused_one_past_the_quota_and_the_refusal_changes_nothing(
    memory: Memory,
) -> None:
    memory.set_quotas(Quotas(max_records=3), tenant=TENANT)  # e1 holds one
    subjects = ["s2", "s3", "s4", "user-42"]
    for n in (2, 3):  # up to exactly the quota
        said = event(f"e{n}", "Fridays", occurred_at=day(10, 1), subject=f"s{n}")
        assert memory.ingest(said, [pref("friday")]).outcome == "committed"
    before = snapshot(memory, subjects=subjects, event_ids=["e4", "q4"])
    with pytest.raises(QuotaExceededError, match="max_records") as refused:
        memory.ingest(event("e4", "Fridays", occurred_at=day(10, 1), subject="s4"),
                      [pref("friday")])  # fmt: skip
    assert refused.value.retry_after is None  # not until the tenant holds less
    with pytest.raises(QuotaExceededError, match="max_records"):  # nor queued for extraction
        memory.ingest(event("q4", "Fridays suit me.", occurred_at=day(10, 1), subject="s4"))
    assert snapshot(memory, subjects=subjects, event_ids=["e4", "q4"]) == before
    assert memory.jobs(tenant=TENANT) == ()
    # another tenant holds its own count
    other = event("g1", "Fridays", occurred_at=day(10, 1), tenant="globex")
    assert memory.ingest(other, [pref("friday")]).outcome == "committed"
    # a closed record makes room for one, and one only
    (held,) = memory.current("s2", "delivery_preference", tenant=TENANT)
    memory.revoke(held.memory_id, tenant=TENANT)
    said = event("e4", "Fridays", occurred_at=day(10, 1), subject="s4")
    assert memory.ingest(said, [pref("friday")]).outcome == "committed"
    with pytest.raises(QuotaExceededError, match="max_records"):
        memory.ingest(event("e5", "Fridays", occurred_at=day(10, 1), subject="s5"),
                      [pref("friday")])  # fmt: skip
    memory.close()


def test_jobs_are_refused_one_past_the_minute_quota_and_the_refusal_changes_nothing(
    memory: Memory, clock: FrozenClock
) -> None:
    memory.set_quotas(Quotas(jobs_per_minute=3), tenant=TENANT)
    start = clock.now()
    for n in range(3):  # exactly the quota, a second apart
        said = event(f"j{n}", "Fridays suit me.", occurred_at=day(10, 1))
        assert memory.ingest(said).outcome == "queued"
        clock.advance(timedelta(seconds=1))
    before = snapshot(memory, event_ids=["j3"])
    with pytest.raises(QuotaExceededError, match="jobs_per_minute") as refused:
        memory.ingest(event("j3", "Fridays suit me.", occurred_at=day(10, 1)))
    assert refused.value.retry_after == 60.0
    assert snapshot(memory, event_ids=["j3"]) == before and len(memory.jobs(tenant=TENANT)) == 3
    # claims given with the event queue no job: not counted, not refused
    stated = event("c1", "Thursdays", occurred_at=day(10, 1), subject="s1")
    assert memory.ingest(stated, [pref("thursday")]).outcome == "committed"
    memory.ingest(event("g1", "Fridays suit me.", occurred_at=day(10, 1), tenant="globex"))
    # a minute after the first job it leaves the window; the two after it are still in
    clock.set(start + timedelta(minutes=1, milliseconds=1))
    assert memory.ingest(event("j3", "Fridays suit me.", occurred_at=day(10, 1))).outcome == (
        "queued"
    )
    with pytest.raises(QuotaExceededError, match="jobs_per_minute"):
        memory.ingest(event("j4", "Fridays suit me.", occurred_at=day(10, 1)))
    memory.close()


def test_recalls_are_refused_one_past_a_seconds_worth_and_the_refusal_changes_nothing(
    memory: Memory,
) -> None:
    now = _still(memory)
    memory.set_quotas(Quotas(recalls_per_second=3), tenant=TENANT)
    for _ in range(3):  # a second's worth, exactly
        assert memory.recall("friday", tenant=TENANT).items
    before = _reads(memory)
    with pytest.raises(QuotaExceededError, match="recalls per second") as refused:
        memory.recall("friday", tenant=TENANT)
    assert refused.value.retry_after == pytest.approx(1 / 3)
    with pytest.raises(QuotaExceededError, match="recalls per second"):
        memory.context("when is my digest?", tenant=TENANT)  # packets count too
    assert _reads(memory) == before
    memory.recall("friday", tenant="globex")  # another tenant's bucket is its own
    now[0] = 1 / 3  # one token back
    memory.recall("friday", tenant=TENANT)
    with pytest.raises(QuotaExceededError):
        memory.recall("friday", tenant=TENANT)
    memory.close()


def test_a_packet_at_its_token_quota_is_served_and_one_past_it_is_refused(
    memory: Memory,
) -> None:
    _still(memory)
    memory.set_quotas(Quotas(packet_tokens=500, recalls_per_second=1), tenant=TENANT)
    before = _reads(memory)
    with pytest.raises(QuotaExceededError, match="packet_tokens") as refused:
        memory.context("when is my digest?", tenant=TENANT, budget=501)
    assert refused.value.retry_after is None  # a smaller budget, not a later one
    assert _reads(memory) == before
    # the refused packet took no recall: the one recall a second is still there
    assert memory.context("when is my digest?", tenant=TENANT, budget=500).tokens <= 500
    memory.close()


def test_the_bucket_refills_at_the_rate() -> None:
    now = [0.0]
    gate = RateGate(clock=lambda: now[0])
    assert [gate.take("a", 2) for _ in range(2)] == [0.0, 0.0]
    assert gate.take("a", 2) == pytest.approx(0.5)
    now[0] = 0.5
    assert gate.take("a", 2) == 0.0  # one token back after half a second
    now[0] = 0.75
    assert gate.take("a", 2) == pytest.approx(0.25)  # half a token back: the rest to wait
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
