"""``memledger context``, ``memledger trace`` and ``memledger corpus`` through the real
CLI on SQLite files: a packet routed to the shared corpus beside the store, its trace
listed and rebuilt, and bad input as one error line."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import assert_one_error, run

EVENT = {
    "tenant": "acme",
    "event_id": "e1",
    "subject": "acct-9",
    "actor": {"id": "acct-9", "authenticated": True},
    "channel": "chat",
    "occurred_at": "2026-09-20T10:00:00Z",
    "text": "Thanks for releasing order 7311 as a one-time exception for our urgent shipment.",
    "metadata": {"session": "s1"},
}
HASHING = ["--embedder", "hashing"]


def ok(args: list[str]) -> str:
    result = run(args)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_context_with_the_corpus_beside_the_store_and_its_trace(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    events = tmp_path / "events.json"
    events.write_text(json.dumps([EVENT]))
    ok(["ingest", str(events), "--db", db])
    ok(["worker", "--drain", "--db", db])
    handbook = tmp_path / "handbook.md"
    handbook.write_text(
        "# Handbook\n\n## Credit hold\n\nHow to release an order on credit hold: "
        "Finance approval is required before release.\n"
    )
    ok(["corpus", "add", str(handbook), "--tenant", "acme", "--db", db, "--embedder", "hashing"])
    live = tmp_path / "live.json"
    live.write_text(
        json.dumps(
            {
                "live_order": {
                    "observed_at": "2026-10-28T09:15:00Z",
                    "source": "order-service",
                    "value": {"id": "7842", "status": "CREDIT_HOLD"},
                }
            }
        )
    )
    asked = "How do I release an order on credit hold?"
    packet = json.loads(
        ok(
            [
                "context",
                asked,
                "--tenant",
                "acme",
                "--db",
                db,
                "--live",
                str(live),
                "--budget",
                "900",
                *HASHING,
                "--json",
            ]
        )
    )
    assert packet["routing"]["corpus"] is True
    sections = [i["section"] for i in packet["items"]]
    assert sections[0] == "live_state" and "documents" in sections and sections[-1] == "request"
    assert "handbook.md > Credit hold" in packet["text"] and packet["tokens"] <= 900
    without = json.loads(
        ok(["context", asked, "--tenant", "acme", "--db", db, "--no-corpus", *HASHING, "--json"])
    )
    assert "documents" not in [i["section"] for i in without["items"]]
    listed = json.loads(ok(["trace", "list", "--tenant", "acme", "--db", db, "--json"]))
    assert [t["trace_id"] for t in listed][::-1] == [packet["trace_id"], without["trace_id"]]
    shown = json.loads(
        ok(["trace", "show", packet["trace_id"], "--tenant", "acme", "--db", db, "--json"])
    )
    assert shown["matches"] is True and shown["text"] == packet["text"]
    printed = run(["trace", "show", packet["trace_id"], "--tenant", "acme", "--db", db])
    assert "rebuilt exactly" in printed.stderr


def test_context_mistakes_are_one_error_line(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    events = tmp_path / "events.json"
    events.write_text(json.dumps([EVENT]))
    ok(["ingest", str(events), "--db", db])
    base = ["context", "release order 7842", "--tenant", "acme", "--db", db, *HASHING]
    assert_one_error(run([*base, "--budget", "3"]), "budget")
    assert_one_error(run([*base, "--section-budget", "memories"]), "NAME=TOKENS")
    assert_one_error(run([*base, "--section-budget", "footnotes=5"]), "unknown section")
    assert_one_error(run([*base, "--live", str(tmp_path / "nope.json")]), "cannot read")
    (tmp_path / "bad.json").write_text("[1, 2]")
    assert_one_error(run([*base, "--live", str(tmp_path / "bad.json")]), "JSON object")
    assert_one_error(run([*base, "--constraints", str(tmp_path / "bad.json")]), "{id, rule}")
    assert_one_error(run(["trace", "show", "ctx-none", "--tenant", "acme", "--db", db]), "no trace")
