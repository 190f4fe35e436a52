"""The checks every call makes of where it reads or writes: a tenant (and subject), a
family slot, a moment. Each raises :class:`~memledger.errors.InvalidQueryError` naming
what is wrong, before anything is read or written."""

from __future__ import annotations

from datetime import datetime

from memledger.domain.records import require_aware, require_id
from memledger.errors import InvalidQueryError

__all__ = ["check_moment", "check_slot", "check_tenant"]


def check_tenant(tenant: object, subject: object = None) -> None:
    """A tenant, and a subject when one is given: required identifiers."""
    require_id(tenant, "tenant", InvalidQueryError)
    if subject is not None:
        require_id(subject, "subject", InvalidQueryError)


def check_slot(tenant: object, subject: object, family: object) -> None:
    """A family slot's address: all three are required identifiers."""
    require_id(tenant, "tenant", InvalidQueryError)
    require_id(subject, "subject", InvalidQueryError)
    require_id(family, "family", InvalidQueryError)


def check_moment(value: datetime | None, what: str) -> datetime | None:
    """``value`` in UTC when given (an aware datetime), ``None`` when not."""
    return None if value is None else require_aware(value, what, InvalidQueryError)
