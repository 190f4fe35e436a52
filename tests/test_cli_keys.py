"""``memledger keys``, ``memledger schema`` and ``memledger reviews``, run for real
against SQLite files in ``tmp_path``: round trips, and one-line errors."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import assert_one_error, run, snapshot
from memledger import Memory
from memledger.domain.keys import REFUSED
from memledger.testing.scenarios import FAMILY, SUBJECT, TENANT, day, event, pref


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "mem.db"


def ok(args: Sequence[str]) -> str:
    result = run(args)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return result.stdout


def ok_json(args: Sequence[str]) -> Any:
    return json.loads(ok([*args, "--json"]))


def _files(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(path.parent.glob(f"{path.name}*")))


# -- keys -------------------------------------------------------------------------------


def test_keys_create_list_revoke(db: Path) -> None:
    where = ["--db", str(db), "--tenant", TENANT]
    shown = ok(["keys", "create", "--actor", SUBJECT, "--grant", FAMILY, "--label", "app", *where])
    (token_line,) = [ln for ln in shown.splitlines() if ln.startswith("token: ")]
    token = token_line.removeprefix("token: ")
    assert "shown once" in shown and "cannot be retrieved" in shown
    secret = token.partition(".")[2]
    assert secret and secret.encode() not in _files(db)
    made = ok_json(
        [
            "keys",
            "create",
            "--actor",
            "agent-7",
            "--principal",
            "agent",
            "--role",
            "read",
            "--grant",
            "home_city:global",
            *where,
        ]
    )
    assert made["shown_once"] is True and made["token"].startswith(made["key"]["key_id"] + ".")
    assert made["key"] | {"created_at": None, "key_id": None} == {
        "key_id": None,
        "tenant": TENANT,
        "actor": "agent-7",
        "principal": "agent",
        "role": "read",
        "grants": ["home_city:global"],
        "label": "",
        "created_at": None,
        "revoked_at": None,
        "last_used_at": None,
        "reads": [],
    }
    listed = ok_json(["keys", "list", *where])
    assert [k["actor"] for k in listed] == [SUBJECT, "agent-7"]
    assert token not in json.dumps(listed) and made["token"] not in json.dumps(listed)
    table = ok(["keys", "list", *where])
    assert "agent-7" in table and secret not in table
    with Memory.open(db) as memory:
        assert memory.authenticate(token).actor.id == SUBJECT
    key_id = listed[0]["key_id"]
    assert f"revoked API key {key_id}" in ok(["keys", "revoke", key_id, *where])
    again = ok_json(["keys", "revoke", key_id, *where])
    assert again["revoked_at"] is not None
    with Memory.open(db) as memory, pytest.raises(Exception, match=REFUSED):
        memory.authenticate(token)
    assert ok(["keys", "list", "--db", str(db), "--tenant", "beta"]).startswith("no API keys")


def test_without_a_tenant_a_key_is_of_tenant_default(db: Path) -> None:
    """Serve makes its first admin key for tenant 'default': so does keys create."""
    made = ok_json(["keys", "create", "--actor", SUBJECT, "--db", str(db)])
    assert made["key"]["tenant"] == "default"
    assert [k["key_id"] for k in ok_json(["keys", "list", "--db", str(db)])] == [
        made["key"]["key_id"]
    ]
    assert ok_json(["keys", "list", "--db", str(db), "--tenant", TENANT]) == []


def test_keys_errors_are_one_line(db: Path) -> None:
    where = ["--db", str(db), "--tenant", TENANT]
    assert_one_error(
        run(["keys", "create", "--actor", SUBJECT, "--role", "owner", *where]), "--role"
    )
    assert_one_error(
        run(["keys", "create", "--actor", SUBJECT, "--principal", "bot", *where]), "--principal"
    )
    assert_one_error(
        run(["keys", "create", "--actor", SUBJECT, "--grant", "no_such_family", *where]),
        "'no_such_family'",
    )
    ok(["keys", "list", *where])  # the first create made the store
    before = snapshot(db)
    assert_one_error(run(["keys", "revoke", "mlk_0123456789ab", *where]), "no API key")
    assert snapshot(db) == before


def test_keys_revoke_refuses_the_last_admin_key(db: Path) -> None:
    where = ["--db", str(db), "--tenant", TENANT]
    first = ok_json(["keys", "create", "--actor", "admin-1", "--role", "admin", *where])
    key_id = first["key"]["key_id"]
    before = snapshot(db)
    assert_one_error(run(["keys", "revoke", key_id, *where]), "last live admin key")
    assert snapshot(db) == before
    ok(["keys", "create", "--actor", "admin-2", "--role", "admin", *where])
    assert ok_json(["keys", "revoke", key_id, *where])["revoked_at"] is not None


# -- schema -----------------------------------------------------------------------------


def test_schema_register_and_list(db: Path, tmp_path: Path) -> None:
    where = ["--db", str(db), "--tenant", TENANT]
    said = ok(
        [
            "schema",
            "register",
            "diet",
            "--kinds",
            "preference, fact",
            "--description",
            "Food.",
            *where,
        ]
    )
    assert "'diet'" in said and "fact, preference" in said and "registered" in said
    listed = ok_json(["schema", "list", *where])
    assert {f["name"]: f["source"] for f in listed}["diet"] == "registered"
    assert {f["name"]: f["source"] for f in listed}["home_city"] == "code"
    (diet,) = [f for f in listed if f["name"] == "diet"]
    assert diet == {
        "name": "diet",
        "kinds": ["fact", "preference"],
        "description": "Food.",
        "own_say": False,
        "source": "registered",
    }
    other = ok_json(["schema", "list", "--db", str(db), "--tenant", "beta"])
    assert "diet" not in {f["name"] for f in other}
    assert "diet" in ok(["schema", "list", *where])
    again = ok_json(["schema", "register", "diet", "--kinds", "fact,preference", *where])
    assert again["description"] == "Food."  # the same definition: nothing changed
    # `ingest` checks claims against the tenant's families
    body = {
        "tenant": TENANT,
        "event_id": "evt-1",
        "subject": SUBJECT,
        "actor": {"id": SUBJECT, "authenticated": True, "grants": ["diet"]},
        "channel": "chat",
        "occurred_at": "2026-10-02T09:00:00Z",
        "text": "I am vegan.",
        "claims": [{"family": "diet", "kind": "fact", "statement": "Vegan", "value": "vegan"}],
    }
    source = tmp_path / "evt.json"
    source.write_text(json.dumps(body), encoding="utf-8")
    receipt = ok_json(["ingest", str(source), "--db", str(db)])
    assert [r["disposition"] for r in receipt["results"]] == ["current"]
    source.write_text(json.dumps(body | {"tenant": "beta"}), encoding="utf-8")
    assert_one_error(run(["ingest", str(source), "--db", str(db)]), "unknown family 'diet'")


def test_schema_errors_are_one_line(db: Path) -> None:
    where = ["--db", str(db), "--tenant", TENANT]
    ok(["schema", "register", "diet", "--kinds", "preference", *where])
    before = snapshot(db)
    assert_one_error(
        run(["schema", "register", "diet", "--kinds", "fact", *where]), "cannot change"
    )
    assert_one_error(run(["schema", "register", "x", "--kinds", "opinion", *where]), "--kinds")
    assert_one_error(run(["schema", "register", "a:b", "--kinds", "fact", *where]), "':'")
    assert_one_error(run(["schema", "register", "x", *where]), "--kinds")
    assert snapshot(db) == before


# -- reviews ----------------------------------------------------------------------------


def _two_held(db: Path) -> list[str]:
    with Memory.open(db) as memory:
        memory.ingest(
            event("evt-1", "Fridays", occurred_at=day(10, 2), sequence=1), [pref("friday")]
        )
        held = [
            memory.ingest(
                event(name, "Mondays", occurred_at=day(10, 3), sequence=1), [pref("monday")]
            ).review_id
            for name in ("evt-2", "evt-3")
        ]
    return [str(review_id) for review_id in held]


def test_reviews_list_accept_reject(db: Path) -> None:
    first, second = _two_held(db)
    where = ["--db", str(db), "--tenant", TENANT]
    assert [i["review_id"] for i in ok_json(["reviews", "list", *where])] == [first, second]
    said = ok(["reviews", "accept", first, "--by", "ann", "--reason", "phoned the user", *where])
    assert f"review {first} accepted by ann" in said and "committed" in said
    done = ok_json(["reviews", "reject", second, "--by", "bo", "--reason", "a duplicate", *where])
    assert done["duplicate"] is False and done["receipt"] is None
    assert (done["review"]["resolution"], done["review"]["resolved_by"]) == ("rejected", "bo")
    assert done["review"]["resolution_reason"] == "a duplicate"
    again = ok_json(["reviews", "accept", first, "--by", "ann", "--reason", "again", *where])
    assert again["duplicate"] is True and again["receipt"]["outcome"] == "committed"
    assert "already resolved" in ok(
        ["reviews", "reject", second, "--by", "bo", "--reason", "x", *where]
    )
    assert ok(["reviews", "list", *where]).strip() == "no review items"
    table = ok(["reviews", "list", "--all", *where])
    assert "accepted by ann: phoned the user" in table and "rejected by bo" in table
    assert [i["resolution"] for i in ok_json(["review", "--all", *where])] == [
        "accepted",
        "rejected",
    ]
    current = ok_json(["current", SUBJECT, FAMILY, "--valid-at", "2026-10-05T00:00:00Z", *where])
    assert [(r["value"], r["source_event_id"]) for r in current] == [("monday", "evt-2")]
    changes = ok_json(["changes", SUBJECT, FAMILY, *where])
    assert [c["note"] for c in changes if c["action"].startswith("review_")] == [
        "accepted by ann: phoned the user",
        "rejected by bo: a duplicate",
    ]


def test_reviews_errors_are_one_line(db: Path) -> None:
    first, second = _two_held(db)
    where = ["--db", str(db), "--tenant", TENANT]
    ok(["reviews", "accept", first, "--by", "ann", "--reason", "ok", *where])
    before = snapshot(db)
    assert_one_error(
        run(["reviews", "reject", first, "--by", "bo", "--reason", "no", *where]),
        "already accepted by 'ann'",
    )
    assert_one_error(
        run(["reviews", "accept", "rev-nope", "--by", "bo", "--reason", "no", *where]), "'rev-nope'"
    )
    assert_one_error(run(["reviews", "accept", second, "--reason", "no", *where]), "--by")
    assert_one_error(
        run(["reviews", "accept", second, "--by", "bo", "--reason", " ", *where]), "reason"
    )
    assert snapshot(db) == before
    missing = db.parent / "missing.db"
    assert_one_error(
        run(["reviews", "list", "--db", str(missing), "--tenant", TENANT]), "no memledger store"
    )
    assert not missing.exists()


def test_a_self_contradictory_batch_cannot_be_accepted_from_the_cli(db: Path) -> None:
    with Memory.open(db) as memory:
        review_id = memory.ingest(
            event("evt-1", "Mondays. No, Tuesdays.", occurred_at=day(10, 2)),
            [pref("monday"), pref("tuesday")],
        ).review_id
    assert review_id is not None
    where = ["--db", str(db), "--tenant", TENANT]
    assert_one_error(
        run(["reviews", "accept", review_id, "--by", "ann", "--reason", "ok", *where]),
        "cannot be accepted as it stands",
        "reject the review item",
    )


def test_reindex_prints_json(db: Path) -> None:
    with Memory.open(db) as memory:
        memory.ingest(event("evt-1", "Fridays", occurred_at=day(10, 2)), [pref("friday")])
    result = run(["reindex", "--embedder", "none", "--db", str(db), "--json"])  # progress: stderr
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "tenant": None,
        "applied": 1,
        "entries": 1,
        "vectors": 0,
        "embedder": None,
    }
