"""Undo and rollback from the command line, on a real SQLite file, and seed 000's
guarantee under undo: an undone revocation brings back exactly what it closed, and a
revocation made again stops it again, with a late job and a warmed cache in between.
The store-level checks run on every backend (``memledger.testing.conformance._undo``)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from memledger import Memory
from memledger.cli import app
from memledger.domain.records import Claim, SourceEvent
from memledger.store import open_store
from memledger.testing import FrozenClock, FunctionExtractor
from memledger.testing.scenarios import SUBJECT, TENANT, actor, day, event, fact
from memledger.write.worker import WorkerSettings, episode_of

ANYONE = actor("*")
TEXT = "I moved to Bangalore two weeks ago."


def _bad(source: SourceEvent) -> list[Claim]:
    """The bug of issue 10: the trailing time phrase kept in the value."""
    city = "Bangalore two weeks"
    return [fact("home_city", f"Lives in {city}", city, grounding=source.text.rstrip("."))]


def _setup(path: Path) -> None:
    memory = Memory(open_store(path), clock=FrozenClock(day(6, 1)))
    said = event("evt-delhi", "I moved to Delhi.", occurred_at=day(3, 1), who=ANYONE)
    delhi = fact("home_city", "Lives in Delhi", "Delhi", grounding="moved to Delhi")
    memory.ingest(said, [delhi, episode_of(said)])
    memory.ingest(event("evt-move", TEXT, occurred_at=day(5, 1), who=ANYONE))
    bad = FunctionExtractor(_bad, name="bad", version="1")
    assert memory.process(extractor=bad, tenant=TENANT, settings=WorkerSettings()).jobs == 1
    memory.close()


def _cli(*args: str) -> dict[str, object] | list[object]:
    done = CliRunner().invoke(app, list(args))
    assert done.exit_code == 0, done.output
    return json.loads(done.output)  # type: ignore[no-any-return]


def _cities(db: str) -> list[object]:
    found = _cli("timeline", SUBJECT, "home_city", "--db", db, "--tenant", TENANT, "--json")
    assert isinstance(found, list)
    return [r["value"] for r in found]  # type: ignore[index]


def test_the_command_line_rolls_back_re_derives_and_undoes(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    _setup(tmp_path / "m.db")
    base = ("--db", db, "--tenant", TENANT)
    assert _cities(db) == ["Delhi", "Bangalore two weeks"]
    rolled = _cli("rollback", "--extractor", "bad@1", "--rederive", "rules", *base, "--json")
    assert isinstance(rolled, dict)
    assert rolled["events"] == ["evt-move"] and rolled["rederived"]
    assert _cities(db) == ["Delhi", "Bangalore"]  # the rule extractor reads it right
    log = _cli("change-log", *base, "--json")
    assert [c["kind"] for c in log] == ["rollback"]  # type: ignore[index]
    undone = _cli("undo", str(rolled["change_id"]), *base, "--json")
    assert isinstance(undone, dict) and undone["kind"] == "rollback"
    assert _cities(db) == ["Delhi", "Bangalore two weeks"]
    # the text forms name what happened and how to take it back
    text = CliRunner().invoke(app, ["rollback", "--extractor", "bad@1", *base])
    assert text.exit_code == 0 and "undo it with: memledger undo chg-" in text.output
    listed = CliRunner().invoke(app, ["change-log", *base])
    assert "rollback" in listed.output and "undo of" in listed.output
    bad = CliRunner().invoke(app, ["rollback", "--extractor", "bad", *base])
    assert bad.exit_code == 2 and "NAME@VERSION" in bad.output


def test_the_command_line_restores_a_revoked_memory(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    _setup(tmp_path / "m.db")
    base = ("--db", db, "--tenant", TENANT)
    current = _cli("current", SUBJECT, "home_city", *base, "--json")
    (record,) = current  # type: ignore[misc]
    revoked = _cli("revoke", record["memory_id"], *base, "--json")  # type: ignore[index]
    assert isinstance(revoked, dict) and str(revoked["change_id"]).startswith("chg-")
    assert "Bangalore two weeks" not in _cities(db)
    restored = _cli("restore", record["memory_id"], *base, "--json")  # type: ignore[index]
    assert isinstance(restored, dict) and restored["undid"] == revoked["change_id"]
    assert _cities(db) == ["Delhi", "Bangalore two weeks"]
    again = CliRunner().invoke(app, ["undo", str(revoked["change_id"]), *base])
    assert again.exit_code == 0 and "was undone before" in again.output
    missing = CliRunner().invoke(app, ["undo", "chg-nothing", *base])
    assert missing.exit_code == 2 and "no change or event" in missing.output


def test_seed_000_holds_across_an_undo(tmp_path: Path) -> None:
    """Revoke, undo, revoke again: after the second revocation neither a job queued
    before it nor the warmed hot cache nor the index brings the value back."""
    clock = FrozenClock(day(6, 1))
    memory = Memory(open_store(tmp_path / "m.db"), clock=clock)
    said = event("evt-delhi", "I moved to Delhi.", occurred_at=day(3, 1), who=ANYONE)
    delhi = fact("home_city", "Lives in Delhi", "Delhi", grounding="moved to Delhi")
    (made,) = [
        r.memory_id
        for r in memory.ingest(said, [delhi, episode_of(said)]).results
        if r.family == "home_city"
    ]
    first = memory.revoke(made, tenant=TENANT)
    assert first.change_id is not None
    memory.undo(first.change_id, tenant=TENANT)
    assert "home_city" in memory.hot.current(memory.reading, tenant=TENANT, subject=SUBJECT).values
    late = memory.ingest(event("evt-late", "I moved to Delhi.", occurred_at=day(3, 2), who=ANYONE))
    assert late.outcome == "queued"
    (back,) = memory.current(SUBJECT, "home_city", tenant=TENANT)
    memory.revoke(back.memory_id, tenant=TENANT)
    extractor = FunctionExtractor(lambda e: [delhi], name="late", version="1")
    memory.process(extractor=extractor, tenant=TENANT, settings=WorkerSettings())
    assert memory.current(SUBJECT, "home_city", tenant=TENANT) == ()
    hot = memory.hot.current(memory.reading, tenant=TENANT, subject=SUBJECT).values
    assert not hot.get("home_city")
    hits = memory.recall("where does the user live?", tenant=TENANT, subject=SUBJECT)
    assert "Delhi" not in [item.record.value for item in hits.items]


def test_the_command_line_consolidates_and_undoes(tmp_path: Path) -> None:
    memory = Memory(open_store(tmp_path / "m.db"), clock=FrozenClock(day(6, 1)))
    for event_id, scope, month in (("evt-a", "music:jazz", 3), ("evt-b", "music:Jazz", 2)):
        said = event(event_id, "Likes jazz.", occurred_at=day(month, 1), who=ANYONE)
        claim = Claim(family="likes", kind="preference", statement="Likes jazz", value="jazz",
                      scope=scope, grounding="Likes jazz")  # fmt: skip
        memory.ingest(said, [claim])
    memory.close()
    base = ("--db", str(tmp_path / "m.db"), "--tenant", TENANT)
    dry = CliRunner().invoke(app, ["consolidate", "--dry-run", *base])
    assert dry.exit_code == 0 and "would merge 1 group" in dry.output
    done = _cli("consolidate", "--subject", SUBJECT, "--family", "likes", *base, "--json")
    assert isinstance(done, dict) and len(done["merges"]) == 1  # type: ignore[arg-type]
    merged = _cli("timeline", SUBJECT, "likes", *base, "--json")
    assert [r["mentions"] for r in merged] == [2]  # type: ignore[index]
    _cli("undo", str(done["change_id"]), *base, "--json")
    assert len(_cli("timeline", SUBJECT, "likes", *base, "--json")) == 2
    bad = CliRunner().invoke(app, ["consolidate", "--threshold", "2", *base])
    assert bad.exit_code == 2 and "threshold" in bad.output
