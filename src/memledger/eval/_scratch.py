"""Scratch stores for benchmarks: a SQLite file in a temporary folder, or a fresh
database on a PostgreSQL server (created for the run, dropped after it)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

from memledger.errors import InvalidInputError


def is_postgres(url: str | None) -> bool:
    return url is not None and url.split("://", 1)[0] in ("postgresql", "postgres")


@contextmanager
def scratch_database(
    server: str, *, prefix: str = "memledger_bench", template: str | None = None
) -> Iterator[str]:
    """A new database on the server ``server`` (a ``postgresql://`` URL of any database
    there the user may connect to, with the right to create databases): empty, or a
    file-level copy of the database at the URL ``template`` (no one may be connected to
    it); its URL; dropped on exit."""
    try:
        import psycopg
    except ImportError as exc:
        raise InvalidInputError(
            "a PostgreSQL scratch store needs the postgres extra: pip install 'memledger[postgres]'"
        ) from exc
    name = f"{prefix}_{secrets.token_hex(6)}"
    copied = "" if template is None else f' TEMPLATE "{database_of(template)}"'
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"{copied}')  # names made here: nothing to escape
    try:
        yield urlunsplit(urlsplit(server)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def database_of(url: str) -> str:
    """The database a scratch URL names (one :func:`scratch_database` made)."""
    name = urlsplit(url).path.lstrip("/")
    if not name.replace("_", "").isalnum():
        raise InvalidInputError(f"not a scratch database: {url!r}")
    return name
