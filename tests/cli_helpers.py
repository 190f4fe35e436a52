"""Running the CLI in tests: hermetic invocation (``run``), one-error-line checks
(``assert_one_error``), store ``snapshot``s, and source events as ``memledger ingest``
reads them (``event_json``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from memledger.cli import app

runner = CliRunner()

HERMETIC = {"MEMLEDGER_URL": None, "MEMLEDGER_TENANT": None, "MEMLEDGER_DEBUG": None}
"""Environment variables cleared for every run, so the developer's shell cannot leak in."""


def run(
    args: Sequence[str], *, stdin: str | None = None, env: dict[str, str] | None = None
) -> Result:
    return runner.invoke(app, list(args), input=stdin, env={**HERMETIC, **(env or {})})


def event_json(event_id: str, *, grants: list[str], text: str, **fields: Any) -> dict[str, Any]:
    """A source event as ``memledger ingest`` reads it: ``text`` said in a chat by
    ``user-42`` of tenant ``acme``, holding ``grants``, on Oct 2 at 09:00 (sequence 1);
    ``fields`` over these."""
    body: dict[str, Any] = {
        "tenant": "acme",
        "event_id": event_id,
        "subject": "user-42",
        "actor": {"id": "user-42", "authenticated": True, "grants": grants},
        "channel": "chat",
        "sequence": 1,
        "occurred_at": "2026-10-02T09:00:00Z",
        "text": text,
    }
    body.update(fields)
    return body


def snapshot(db: Path) -> list[str]:
    """Everything a SQLite file holds, as SQL: equal snapshots mean nothing changed."""
    conn = sqlite3.connect(db)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def assert_one_error(result: Result, *fragments: str, code: int = 2) -> str:
    """The run failed with ``code`` and printed exactly one ``error:`` line, no traceback."""
    assert result.exit_code == code, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    (line,) = lines
    assert line.startswith("error: ")
    for fragment in fragments:
        assert fragment in line, line
    return line
