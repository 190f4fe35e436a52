"""``memledger corpus ...`` on real files: add, list, search, remove; JSON output, one error
line and the exit code on failure; reads never create a corpus file."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner, Result

from cli_helpers import HERMETIC, assert_one_error, snapshot
from memledger.cli._run import Group
from memledger.cli.corpus import corpus
from memledger.settings import Settings

SHIPPING = """\
# Shipping policy

Orders ship within three business days.

## Credit hold

An expedited order on credit hold waits until finance releases it.

| Tier | Credit limit |
|------|--------------|
| Gold | 10000 EUR    |
"""

app = typer.Typer(cls=Group, add_completion=False, pretty_exceptions_enable=False)


@app.callback()
def _root(ctx: typer.Context) -> None:
    ctx.obj = Settings.from_env(os.environ)


app.add_typer(corpus, name="corpus")
runner = CliRunner()


def run(args: Sequence[str], *, env: dict[str, str] | None = None) -> Result:
    return runner.invoke(app, ["corpus", *args], env={**HERMETIC, **(env or {})})


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "shipping.md").write_text(SHIPPING)
    (folder / "hours.txt").write_text("The support desk answers Monday to Friday.\n")
    (folder / "blob.txt").write_bytes(b"\x00\x01binary")
    return folder


def add(db: Path, *paths: Path, extra: Sequence[str] = ()) -> Result:
    return run(
        [
            "add",
            *map(str, paths),
            "--db",
            str(db),
            "--tenant",
            "acme",
            "--embedder",
            "hashing",
            *extra,
        ]
    )


def test_add_list_search_remove(tmp_path: Path, docs: Path) -> None:
    db = tmp_path / "m.db"
    added = add(db, docs, extra=["--json"])
    assert added.exit_code == 0, added.output
    report = json.loads(added.stdout)
    assert sorted(Path(p).name for p in report["added"]) == ["hours.txt", "shipping.md"]
    assert report["skipped"] == [
        {"path": str(docs / "blob.txt"), "reason": "not_text", "detail": "binary (holds NUL bytes)"}
    ]
    assert (tmp_path / "m.db.corpus").exists() and not db.exists()  # the store is not touched

    listed = run(["list", "--db", str(db), "--tenant", "acme", "--json"])
    assert listed.exit_code == 0
    assert [d["title"] for d in json.loads(listed.stdout)] == ["hours", "Shipping policy"]
    table = run(["list", "--db", str(db), "--tenant", "acme"])
    assert "Shipping policy" in table.stdout and "markdown" in table.stdout

    found = run(
        [
            *("search", "credit limit gold", "--db", str(db), "--tenant", "acme", "-k", "1"),
            *("--embedder", "hashing", "--json"),
        ]
    )
    assert found.exit_code == 0, found.output
    body = json.loads(found.stdout)
    assert body["found"] == 1 and body["message"] is None
    (hit,) = body["hits"]
    assert hit["chunk"]["is_table"] and hit["chunk"]["section"] == "Credit hold"
    assert hit["confidence"] == 1.0 and hit["stale"] is None
    shown = run(
        ["search", "credit hold", "--db", str(db), "--tenant", "acme", "--embedder", "none"]
    )
    assert "Shipping policy > Credit hold" in shown.stdout and "finance releases" in shown.stdout

    removed = run(["remove", str(docs / "shipping.md"), "--db", str(db), "--tenant", "acme"])
    assert removed.exit_code == 0 and "removed 3 chunk(s)" in removed.stdout
    add(db, docs / "shipping.md")
    as_json = run(
        ["remove", str(docs / "shipping.md"), "--db", str(db), "--tenant", "acme", "--json"]
    )
    assert json.loads(as_json.stdout) == {
        "tenant": "acme",
        "path": str(docs / "shipping.md"),
        "removed_chunks": 3,
    }
    again = run(["remove", str(docs / "shipping.md"), "--db", str(db), "--tenant", "acme"])
    assert_one_error(again, "no document at", code=2)


def test_nothing_relevant_is_said_not_hidden(tmp_path: Path, docs: Path) -> None:
    db = tmp_path / "m.db"
    add(db, docs / "shipping.md")
    args = ["search", "capital of France", "--db", str(db), "--tenant", "acme"]
    plain = run([*args, "--embedder", "hashing"])
    assert plain.exit_code == 0 and "no relevant document found" in plain.stdout
    as_json = json.loads(run([*args, "--embedder", "hashing", "--json"]).stdout)
    assert as_json["hits"] == [] and as_json["message"] == "no relevant document found"


def test_the_tenant_comes_from_the_environment_and_is_checked(tmp_path: Path, docs: Path) -> None:
    db = tmp_path / "m.db"
    result = run(
        ["add", str(docs / "hours.txt"), "--db", str(db), "--embedder", "none"],
        env={"MEMLEDGER_TENANT": "env-tenant"},
    )
    assert result.exit_code == 0, result.output
    listed = run(["list", "--db", str(db), "--json"], env={"MEMLEDGER_TENANT": "env-tenant"})
    assert len(json.loads(listed.stdout)) == 1
    other = run(["list", "--db", str(db), "--json", "--tenant", "other"])
    assert json.loads(other.stdout) == []
    assert json.loads(run(["list", "--db", str(db), "--json"]).stdout) == []  # of 'default'
    assert_one_error(run(["search", "x", "--db", str(db), "--tenant", "bad tenant"]), "tenant")


def test_nothing_added_fails_with_one_error_line(tmp_path: Path, docs: Path) -> None:
    db = tmp_path / "m.db"
    result = add(db, docs / "blob.txt", tmp_path / "gone.md")
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: nothing added: 2 file(s) skipped")
    assert "not_text" in result.stdout and "missing" in result.stdout


def test_bad_options_are_caller_mistakes(tmp_path: Path, docs: Path) -> None:
    db = tmp_path / "m.db"
    assert_one_error(add(db, docs, extra=["--chunk-tokens", "4"]), "--chunk-tokens")
    assert_one_error(
        add(db, docs, extra=["--chunk-tokens", "50", "--overlap-tokens", "30"]), "overlap_tokens"
    )
    bad_embedder = run(["add", str(docs), "--db", str(db), "--tenant", "a", "--embedder", "nope"])
    assert_one_error(bad_embedder, "--embedder must be one of")
    assert_one_error(run(["search", "x", "--db", str(db), "--tenant", "a", "-k", "0"]), "-k")
    assert_one_error(run(["list", "--db", str(tmp_path), "--tenant", "a"]), "is a directory")
    assert not (tmp_path / "m.db.corpus").exists()


def test_reads_never_create_a_corpus(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    listed = run(["list", "--db", str(db), "--tenant", "acme"])
    assert listed.exit_code == 0 and "no documents" in listed.stdout
    searched = run(["search", "anything", "--db", str(db), "--tenant", "acme", "--json"])
    assert json.loads(searched.stdout)["found"] == 0
    assert_one_error(run(["remove", "x.md", "--db", str(db), "--tenant", "acme"]), "no document")
    assert list(tmp_path.iterdir()) == []


def test_re_adding_unchanged_files_writes_nothing(tmp_path: Path, docs: Path) -> None:
    db = tmp_path / "m.db"
    add(db, docs)
    before = snapshot(tmp_path / "m.db.corpus")
    again = add(db, docs)
    assert again.exit_code == 0 and "2 unchanged" in again.stdout
    assert snapshot(tmp_path / "m.db.corpus") == before
