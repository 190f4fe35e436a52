"""``memledger revoke`` takes a claim's words out of its event's other records,
``memledger forget`` stops using a whole event, ``history --include-revoked`` audits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_helpers import assert_one_error, run

TEXT = "Please deliver daily for the rest of October. I live in Lyon."


def _ok(args: list[str]) -> Any:
    result = run([*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_revoke_redacts_the_turn_and_forget_takes_the_rest(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    where = ["--db", str(db), "--tenant", "acme"]
    path = tmp_path / "event.json"
    path.write_text(json.dumps(_body()), encoding="utf-8")
    receipt = _ok(["ingest", str(path), "--db", str(db)])
    ids = {r["family"]: r["memory_id"] for r in receipt["results"]}

    revoked = _ok(["revoke", ids["delivery_preference"], *where])
    assert revoked["also"] == [] and revoked["redacted"] == [ids["conversation"]]
    (turn,) = _ok(
        ["current", "user-42", "conversation", *where, "--valid-at", "2026-10-03T00:00:00Z"]
    )
    assert turn["claim"] == "Please [redacted] for the rest of October. I live in Lyon."
    assert _ok(["history", "user-42", "delivery_preference", *where]) == []
    audit = _ok(["history", "user-42", "delivery_preference", *where, "--include-revoked"])
    assert [r["status"] for r in audit] == ["revoked"]

    table = run(["forget", "evt-1", "--reason", "user asked", *where])
    assert table.exit_code == 0, table.output
    assert "forgot event 'evt-1'" in table.stdout and "'home_city'" in table.stdout
    assert (
        _ok(["current", "user-42", "home_city", *where, "--valid-at", "2026-10-03T00:00:00Z"]) == []
    )
    again = _ok(["forget", "evt-1", *where])
    assert again["revocations"] == [] and again["event_id"] == "evt-1"
    assert "nothing more to revoke" in run(["forget", "evt-1", *where]).stdout
    assert_one_error(run(["forget", "evt-nope", *where]), "'evt-nope'")


def _body() -> dict[str, Any]:
    return {
        "tenant": "acme",
        "event_id": "evt-1",
        "subject": "user-42",
        "actor": {"id": "user-42", "authenticated": True, "grants": ["*"]},
        "channel": "chat",
        "occurred_at": "2026-10-02T09:00:00Z",
        "text": TEXT,
        "claims": [
            {
                "family": "delivery_preference",
                "kind": "preference",
                "statement": "Wants daily delivery",
                "value": "daily",
                "grounding": "deliver daily",
            },
            {
                "family": "home_city",
                "kind": "fact",
                "statement": "Lives in Lyon",
                "value": "Lyon",
                "grounding": "live in Lyon",
            },
            {
                "family": "conversation",
                "kind": "episode",
                "statement": TEXT,
                "value": {"text": TEXT, "speaker": "user-42", "session": "s1", "channel": "chat"},
                "scope": "turn:evt-1",
            },
        ],
    }
