"""``memledger eval scenarios``: random interleavings find no violation of the invariants,
and the checks do find a planted bug (a test of the checker, not only of the code)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner

from memledger import RevocationReceipt
from memledger.cli import app
from memledger.eval import scenarios


def test_random_interleavings_break_no_invariant() -> None:
    report = scenarios.run(trials=30, seed=7, steps=30)
    assert report.trials == 30 and report.steps == 900
    assert sum(report.violations.values()) == 0, report.examples
    # every kind of step ran, not only the easy ones
    assert set(report.kinds) >= {
        "ingest", "queue", "work", "failing_write", "replay", "revoke", "forget", "erase",
        "expire",
    }  # fmt: skip


def test_a_revocation_that_writes_nothing_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    import memledger.write.revoke

    def nothing(unit: object, tenant: str, memory_id: str, **_: object) -> RevocationReceipt:
        return RevocationReceipt(  # acknowledged, and nothing written
            tenant=tenant,
            subject="-",
            family="-",
            revision=0,
            generation=0,
            revoked=(),
            acknowledged_at=datetime(2026, 1, 1, tzinfo=UTC),
            reason="-",
        )

    monkeypatch.setattr(memledger.write.revoke, "revoke_memory", nothing)
    report = scenarios.run(trials=15, seed=7, steps=30)
    assert report.violations["no_resurrection"] > 0


def test_a_hot_cache_that_never_reloads_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    import memledger.read.hot

    monkeypatch.setattr(memledger.read.hot, "stamp_of", lambda *a, **k: ())
    report = scenarios.run(trials=15, seed=7, steps=30)
    assert report.violations["no_resurrection"] > 0


def test_the_command_prints_trials_and_violations_per_invariant() -> None:
    done = CliRunner().invoke(
        app, ["eval", "scenarios", "--trials", "3", "--seed", "1", "--steps", "10", "--json"]
    )
    assert done.exit_code == 0, done.output
    body = json.loads(done.output)
    assert body["trials"] == 3 and body["steps"] == 30
    assert set(body["violations"]) == set(scenarios.INVARIANTS)
    table = CliRunner().invoke(app, ["eval", "scenarios", "--trials", "2", "--steps", "5"])
    assert table.exit_code == 0 and "no_resurrection: 0 violation(s)" in table.output
