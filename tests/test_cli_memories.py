"""The short path on the command line (``add``, ``search``, ``memories``, ``delete``,
``history MEMORY_ID``), run with ``CliRunner`` against real SQLite files: text and
``--json`` output, and bad input answered with one ``error:`` line that writes
nothing."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from cli_helpers import assert_one_error, run, snapshot

PORTO = "I live in Porto."
HASHING = ["--embedder", "hashing"]


def ok(args: Sequence[str], **kwargs: Any) -> str:
    result = run(args, **kwargs)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return result.stdout


def ok_json(args: Sequence[str], **kwargs: Any) -> Any:
    return json.loads(ok([*args, "--json"], **kwargs))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "mem.db"


@pytest.fixture
def porto(db: Path) -> dict[str, Any]:
    """alice said she lives in Porto (tenant 'default'); what the add answered."""
    added: dict[str, Any] = ok_json(["add", PORTO, "--user", "alice", "--db", str(db)])
    return added


def fact_id(added: dict[str, Any]) -> str:
    (fact,) = [m for m in added["memories"] if m["kind"] == "fact"]
    assert isinstance(fact["id"], str)
    return fact["id"]


def test_add_remembers_the_turn_and_the_fact_it_tells(db: Path) -> None:
    shown = ok(["add", PORTO, "--user", "alice", "--session", "s1", "--db", str(db)])
    assert "remembered 1 turn(s) of user 'alice'" in shown
    assert "Lives in Porto" in shown and PORTO in shown and "home_city" in shown
    again = ok_json(["add", PORTO, "--user", "alice", "--session", "s1", "--db", str(db)])
    assert again["duplicate"] is True and again["pending"] == []
    assert {m["memory"] for m in again["memories"]} == {PORTO, "Lives in Porto"}
    (turn,) = [m for m in again["memories"] if m["kind"] == "episode"]
    assert (turn["user_id"], turn["session"], turn["role"]) == ("alice", "s1", "user")
    assert "already remembered" in ok(
        ["add", PORTO, "--user", "alice", "--session", "s1", "--db", str(db)]
    )
    # the tenant is 'default' unless told: another tenant holds nothing of it
    assert ok_json(["memories", "--user", "alice", "--db", str(db), "--tenant", "acme"]) == []


def test_search_finds_the_nearest_with_scores_and_a_relevant_mark(
    db: Path, porto: dict[str, Any]
) -> None:
    args = ["search", "where does alice live?", "--user", "alice", "--db", str(db), *HASHING]
    found = ok_json(args)["results"]
    assert found[0]["memory"] == "Lives in Porto" and found[0]["relevant"] is True
    assert all(isinstance(item["score"], float) for item in found)
    assert [item["score"] for item in found] == sorted((i["score"] for i in found), reverse=True)
    assert len(ok_json([*args, "-k", "1"])["results"]) == 1
    table = ok(args)
    assert "Lives in Porto" in table and "yes" in table and "relevant" in table
    # nothing near: the nearest are still shown, none marked relevant, and it says so
    far = ["search", "favourite colour of the sky", "--user", "alice", "--db", str(db), *HASHING]
    nearest = ok_json(far)["results"]
    assert nearest and not any(item["relevant"] for item in nearest)
    assert "none is relevant" in ok(far)
    assert ok_json(["search", "Porto", "--user", "bob", "--db", str(db), *HASHING]) == {
        "results": []
    }
    assert "no memories to search" in ok(["search", "Porto", "--user", "bob", "--db", str(db)])


def test_memories_lists_what_a_user_holds_newest_first(db: Path, porto: dict[str, Any]) -> None:
    ok(["add", "I work at Acme.", "--user", "alice", "--db", str(db)])
    listed = ok_json(["memories", "--user", "alice", "--db", str(db)])
    assert {m["memory"] for m in listed} >= {PORTO, "Lives in Porto", "I work at Acme."}
    assert [m["created_at"] for m in listed] == sorted(
        (m["created_at"] for m in listed), reverse=True
    )
    assert len(ok_json(["memories", "--user", "alice", "--limit", "1", "--db", str(db)])) == 1
    table = ok(["memories", "--user", "alice", "--db", str(db)])
    assert "memories of user 'alice'" in table and "Lives in Porto" in table
    assert "no memories of user 'bob'" in ok(["memories", "--user", "bob", "--db", str(db)])


def test_a_memory_s_history_and_its_deletion(db: Path, porto: dict[str, Any]) -> None:
    porto_id = fact_id(porto)
    moved = ok_json(["add", "I moved to Lisbon.", "--user", "alice", "--db", str(db)])
    lisbon_id = fact_id(moved)
    steps = ok_json(["history", porto_id, "--db", str(db)])
    assert [(s["memory_id"], s["action"]) for s in steps][:2] == [
        (porto_id, "recorded"),
        (porto_id, "closed"),
    ]
    assert lisbon_id in {s["memory_id"] for s in steps}
    assert f"history of {porto_id}" in ok(["history", porto_id, "--db", str(db)])
    # the family's history, SUBJECT FAMILY, still answers as it did
    records = ok_json(["history", "alice", "home_city", "--db", str(db)])
    assert {r["memory_id"] for r in records} >= {porto_id, lisbon_id}

    receipt = ok_json(["delete", lisbon_id, "--db", str(db)])
    assert receipt["revoked"] == [lisbon_id] and receipt["reason"] == "deleted"
    held = {m["id"] for m in ok_json(["memories", "--user", "alice", "--db", str(db)])}
    assert lisbon_id not in held
    assert ok_json(["history", lisbon_id, "--db", str(db)])[-1]["status"] == "revoked"
    work = fact_id(ok_json(["add", "I work at Acme.", "--user", "alice", "--db", str(db)]))
    shown = ok(["delete", work, "--db", str(db)])
    assert "revoked 1 record(s) of 'employer' for 'alice'" in shown and "undo it with" in shown


def test_add_takes_messages_from_a_file_or_stdin(db: Path, tmp_path: Path) -> None:
    chat = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": PORTO},
        {"role": "assistant", "content": "Porto is lovely."},
    ]
    source = tmp_path / "chat.json"
    source.write_text(json.dumps(chat), encoding="utf-8")
    args = ["add", "--file", str(source), "--user", "alice", "--agent", "helper", "--db", str(db)]
    added = ok_json(args)
    assert added["skipped"] == 1 and len(added["event_ids"]) == 2
    turns = {m["memory"]: m["role"] for m in added["memories"] if m["kind"] == "episode"}
    assert turns == {PORTO: "user", "Porto is lovely.": "assistant"}
    piped = ok_json([*args[:2], "-", *args[3:]], stdin=json.dumps(chat))
    assert piped["duplicate"] is True  # the same messages: nothing new
    notes = "I keep the release notes for the Porto office in the wiki."
    said = ok_json(["add", notes, "--role", "assistant", "--agent", "helper", "--db", str(db)])
    (turn,) = said["memories"]  # with no --user: the agent's own namespace
    assert (turn["role"], turn["agent_id"], turn["user_id"]) == ("assistant", "helper", None)


ADD = ["add", PORTO, "--user", "alice"]
BAD_ADDS = {
    "no_user": (["add", PORTO], ["--user"]),
    "empty_text": (["add", "", "--user", "alice"], ["TEXT is empty"]),
    "blank_text": (["add", "  \n", "--user", "alice"], ["TEXT is empty"]),
    "bad_role": ([*ADD, "--role", "boss"], ["--role", "'boss'"]),
    "no_text": (["add", "--user", "alice"], ["TEXT", "--file"]),
    "text_and_file": ([*ADD, "--file", "-"], ["TEXT", "--file"]),
    "role_with_file": (["add", "--file", "-", "--user", "alice", "--role", "user"], ["--role"]),
    "bad_user": (["add", PORTO, "--user", "al ice"], ["user_id"]),
    "bad_session": ([*ADD, "--session", "a b"], ["session"]),
    "bad_tenant": ([*ADD, "--tenant", "bad tenant"], ["tenant"]),
    "empty_tenant": ([*ADD, "--tenant", ""], ["tenant"]),
    "missing_file": (["add", "--file", "nowhere.json", "--user", "alice"], ["no such file"]),
}
BAD_STDIN = {
    "not_json": ("[{", ["not JSON"]),
    "no_messages": ("[]", ["empty"]),
    "bad_role_in_file": ('[{"role": "boss", "content": "hi"}]', ["role", "'boss'"]),
    "empty_content": ('[{"role": "user", "content": " "}]', ["empty"]),
    "not_messages": ("42", ["messages must be"]),
}


@pytest.mark.parametrize("name", sorted(BAD_ADDS))
def test_a_bad_add_is_one_error_line_and_creates_no_store(db: Path, name: str) -> None:
    args, fragments = BAD_ADDS[name]
    assert_one_error(run([*args, "--db", str(db)]), *fragments)
    assert_one_error(run([*args, "--db", str(db), "--json"]), *fragments)
    assert not db.exists()


@pytest.mark.parametrize("name", sorted(BAD_STDIN))
def test_bad_messages_on_stdin_write_nothing(db: Path, porto: dict[str, Any], name: str) -> None:
    text, fragments = BAD_STDIN[name]
    before = snapshot(db)
    args = ["add", "--file", "-", "--user", "alice", "--db", str(db)]
    assert_one_error(run(args, stdin=text), *fragments)
    assert snapshot(db) == before


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        ([*ADD, "--role", "boss"], ["--role"]),
        (["add", "", "--user", "alice"], ["TEXT is empty"]),
        (["add", PORTO], ["--user"]),
        (["memories"], ["--user"]),
        (["memories", "--user", "alice", "--limit", "0"], ["limit", "got 0"]),
        (["search", "", "--user", "alice", *HASHING], ["query"]),
        (["search", "Porto", "--user", "alice", "-k", "0", *HASHING], ["k must", "got 0"]),
        (["search", "Porto", "--user", "al ice", *HASHING], ["user_id"]),
        (["delete", "mem-nope"], ["no memory", "'mem-nope'"]),
        (["history", "mem-nope"], ["no memory", "history SUBJECT FAMILY"]),
        (["history", "mem-nope", "--include-revoked"], ["--include-revoked", "FAMILY"]),
    ],
)
def test_bad_input_on_a_store_is_one_error_line_and_changes_nothing(
    db: Path, porto: dict[str, Any], args: list[str], fragments: list[str]
) -> None:
    before = snapshot(db)
    assert_one_error(run([*args, "--db", str(db)]), *fragments)
    assert_one_error(run([*args, "--db", str(db), "--json"]), *fragments)
    assert snapshot(db) == before


def test_reads_of_a_missing_store_create_none(db: Path) -> None:
    for args in (
        ["search", "Porto", "--user", "alice", *HASHING],
        ["memories", "--user", "alice"],
        ["delete", "mem-x"],
        ["history", "mem-x"],
    ):
        assert_one_error(run([*args, "--db", str(db)]), "no memledger store")
    assert not db.exists()
