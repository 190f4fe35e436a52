"""Numbered, append-only schema migrations, shared by the SQL stores.

A backend keeps its migrations as ``NNNN_name.sql`` files in a package of its own
(SQLite's in ``memledger.store.migrations``, PostgreSQL's in
``memledger.store.migrations_pg``). :func:`apply` runs the ones a database lacks,
inside the caller's transaction, and refuses a database that is newer than this
memledger or whose applied migrations differ from the packaged ones.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from memledger.domain.records import format_time
from memledger.errors import MigrationError

Migration = tuple[int, str, str]
"""``(version, name, sql)``."""

Execute = Callable[[str, Sequence[Any]], Any]
"""Runs one statement with ``?`` parameters and returns a cursor."""


def load(package: str) -> list[Migration]:
    """Every migration packaged in ``package``, in order."""
    found: list[Migration] = []
    for entry in resources.files(package).iterdir():
        match = re.fullmatch(r"(\d{4})_(\w+)\.sql", entry.name)
        if match:
            found.append((int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort()
    versions = [v for v, _, _ in found]
    if versions != list(range(1, len(versions) + 1)):
        raise MigrationError(f"packaged migrations are not numbered 1..n: {versions}")
    return found


def statements(sql: str) -> list[str]:
    """The statements of a migration file: ``--`` comment lines dropped, split at ``;``."""
    lines = [ln for ln in sql.splitlines() if not ln.lstrip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def checksum(sql: str) -> str:
    return hashlib.sha256(sql.encode()).hexdigest()


def apply(execute: Execute, known: Sequence[Migration], *, where: str) -> None:
    """Bring the schema of the database ``execute`` talks to up to ``known``, inside the
    caller's transaction. ``where`` names the database in errors."""
    execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
        " checksum TEXT NOT NULL, applied_at TEXT NOT NULL)",
        (),
    )
    applied = {
        row[0]: (row[1], row[2])
        for row in execute("SELECT version, name, checksum FROM schema_migrations", ()).fetchall()
    }
    newest = max(applied, default=0)
    if newest > len(known):
        raise MigrationError(
            f"{where} has schema version {newest}; this memledger knows "
            f"up to {len(known)}: upgrade memledger"
        )
    for version, name, sql in known:
        if version in applied:
            if applied[version][1] != checksum(sql):
                raise MigrationError(
                    f"migration {version} ({name}) in {where} differs from "
                    "the packaged one; migrations are append-only"
                )
            continue
        for statement in statements(sql):
            execute(statement, ())
        execute(
            "INSERT INTO schema_migrations VALUES (?, ?, ?, ?)",
            (version, name, checksum(sql), format_time(datetime.now(UTC))),
        )
