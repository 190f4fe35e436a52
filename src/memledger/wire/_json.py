"""What every output helper of :mod:`memledger.wire` shares: the :data:`JsonObject` it
builds, times as the wire writes them (:func:`isoformat`, :func:`iso_or_none`) and
grants as sorted strings (:func:`grant_strings`)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TypeAlias

from memledger.domain.records import Grant, JsonValue

__all__ = ["JsonObject", "grant_strings", "iso_or_none", "isoformat"]

JsonObject: TypeAlias = dict[str, JsonValue]
"""A JSON object as the output helpers build it."""


def isoformat(value: datetime) -> str:
    """ISO 8601 in UTC with a ``Z``: ``2026-10-02T09:00:00Z``."""
    return value.astimezone(UTC).isoformat().removesuffix("+00:00") + "Z"


def iso_or_none(value: datetime | None) -> str | None:
    """:func:`isoformat`, and ``None`` for no time."""
    return None if value is None else isoformat(value)


def grant_strings(grants: Iterable[Grant]) -> list[JsonValue]:
    """Grants as their text (``"family"``, ``"family:scope"``), sorted."""
    return [str(g) for g in sorted(grants, key=str)]
