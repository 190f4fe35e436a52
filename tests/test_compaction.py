"""Episodic compaction from the outside: the command line, the wire, a context packet
(the store's side runs on both stores: memledger.testing.conformance._compaction)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from typer.testing import CliRunner

from memledger import Memory
from memledger import wire_models as wm
from memledger.cli import app
from memledger.index.derived import DerivedIndex
from memledger.store import open_store
from memledger.testing import FrozenClock
from memledger.testing.conformance._compaction import _session
from memledger.testing.scenarios import SUBJECT, TENANT, day
from memledger.wire import compaction_to_dict


def _memory(tmp_path: Path) -> Memory:
    index = DerivedIndex(tmp_path / "m.db.index", embedder=None)
    return Memory(open_store(tmp_path / "m.db"), clock=FrozenClock(day(10, 1)), index=index)


def _cli(*args: str) -> dict[str, object]:
    done = CliRunner().invoke(app, list(args))
    assert done.exit_code == 0, done.output
    found = json.loads(done.output)
    assert isinstance(found, dict)
    return found


def test_the_command_line_compacts_and_undoes(tmp_path: Path) -> None:
    memory = _memory(tmp_path)
    _session(memory)
    memory.close()
    base = ("--db", str(tmp_path / "m.db"), "--tenant", TENANT)
    dry = CliRunner().invoke(
        app, ["compact", "--dry-run", "--before", "2026-09-01T00:00:00Z", *base]
    )
    assert dry.exit_code == 0 and "would compact 1 session" in dry.output and "march" in dry.output
    # (the command line reads the system clock: the September session is old by now)
    done = _cli(
        "compact", "--before", "2026-09-01T00:00:00Z", "--max-tokens", "60", *base, "--json"
    )
    wm.Compaction.model_validate(done)
    (session,) = done["sessions"]  # type: ignore[misc]
    assert session["session"] == "march" and len(session["covers"]) == 3
    again = CliRunner().invoke(app, ["compact", "--before", "2026-09-01T00:00:00Z", *base])
    assert again.exit_code == 0 and "no session to compact" in again.output
    undone = _cli("undo", str(done["change_id"]), *base, "--json")
    assert undone["closed"] == [session["summary"]]
    for bad in (["--min-turns", "1"], ["--max-tokens", "3"], ["--older-than", "-2"]):
        failed = CliRunner().invoke(app, ["compact", *bad, *base])
        assert failed.exit_code == 2, failed.output
        assert bad[0].removeprefix("--").replace("-", "_") in failed.output.replace("-", "_")


def test_a_compaction_is_on_the_wire_as_it_is(tmp_path: Path) -> None:
    memory = _memory(tmp_path)
    _session(memory)
    data = compaction_to_dict(memory.compact(tenant=TENANT, older_than=timedelta(days=30)))
    parsed = wm.Compaction.model_validate(data)
    assert json.loads(parsed.model_dump_json()) == json.loads(json.dumps(data))
    assert data["sessions"] and "compacted" in {
        c.action for c in memory.changes(SUBJECT, "conversation", tenant=TENANT)
    }
    memory.close()


def test_a_packet_shows_the_summary_instead_of_the_turns(tmp_path: Path) -> None:
    memory = _memory(tmp_path)
    _session(memory)
    receipt = memory.compact(tenant=TENANT, older_than=timedelta(days=30))
    summary = receipt.sessions[0].summary
    packet = memory.context("greyhound Biscuit harbour lighthouse", tenant=TENANT, subject=SUBJECT)
    shown = {item.memory_id for item in packet.items if item.memory_id is not None}
    assert summary in shown
    assert not shown & set(receipt.sessions[0].covers)
    assert "Biscuit" in packet.text  # the summary's words reach the model
    memory.close()
