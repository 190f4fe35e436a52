"""Namespace visibility as a SQL condition, so that a store query leaves out another
agent's private namespace itself: a subject the caller may not read is no row at all,
found and answered exactly as a missing one (the same work, the same time).

The condition is :func:`memledger.domain.keys.namespace_of` written in SQL that both
backends run alike (``substr`` and ``length`` count characters in SQLite and
PostgreSQL): a subject is private when it starts with ``agent:`` followed by a
non-empty agent id (``agent:<id>`` or ``agent:<id>/...``); it is visible when it is
shared, ``NULL`` (a trace across the tenant), or in one of the given namespaces.

A trace also keeps the private namespaces its packet held memories of (a packet
across the tenant holds those its caller could read), written by :func:`held_text`;
:func:`held_sql` leaves out a trace that held one the reader may not read.
"""

from __future__ import annotations

from collections.abc import Iterable

from memledger.domain.keys import AGENT_PREFIX

__all__ = ["held_sql", "held_text", "visible_sql"]

_START = len(AGENT_PREFIX)


def visible_sql(column: str, namespaces: frozenset[str] | None) -> tuple[str, tuple[object, ...]]:
    """``" AND (...)"`` and its parameters: rows of ``column`` the reader may see, given
    the private ``namespaces`` it reads (``None``: every namespace, no condition)."""
    if namespaces is None:
        return "", ()
    parts = [
        f"{column} IS NULL",
        f"substr({column}, 1, {_START}) <> ?",
        f"length({column}) = {_START}",
        f"substr({column}, {_START + 1}, 1) = '/'",
    ]
    params: list[object] = [AGENT_PREFIX]
    for name in sorted(namespaces):
        parts.append(f"{column} = ? OR substr({column}, 1, ?) = ?")
        params.extend((name, len(name) + 1, name + "/"))
    return f" AND ({' OR '.join(parts)})", tuple(params)


def held_text(namespaces: Iterable[str]) -> str:
    """The text a trace's ``namespaces`` column keeps: each ``|agent:<id>|``, in order."""
    return "".join(f"|{name}|" for name in sorted(set(namespaces)))


def held_sql(column: str, namespaces: frozenset[str] | None) -> tuple[str, tuple[object, ...]]:
    """``" AND ..."`` and its parameters: rows whose ``column`` (:func:`held_text`) names
    only namespaces among ``namespaces`` (``None``: every namespace, no condition)."""
    if namespaces is None:
        return "", ()
    names = sorted(namespaces)
    left = column
    for _ in names:
        left = f"replace({left}, ?, '')"
    return f" AND {left} = ''", tuple(f"|{name}|" for name in names)
