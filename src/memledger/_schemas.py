"""The schema each tenant writes under: the code's schema plus the tenant's registered families.

A family registered for a tenant (``Memory.register_family``, ``memledger schema
register``) is stored with the tenant and exists for that tenant only; the
schema given in code (``Memory(schema=...)``, by default :meth:`Schema.default`)
applies to every tenant and wins over a registration of the same name, with one
exception: a tenant may take the subject's own say away from a family of the code's
(registering it with the same kinds and ``own_say=False``), never give it.

Registrations are only ever added: a family cannot be changed (registering a
name again with other kinds or another ``own_say`` is a :class:`ConflictError`;
the same definition again is a no-op) nor removed. So a cached schema can only
lack a family that another process registered since, or still give own say that
the tenant has taken away since: the write path looks families up in the cache
and reloads the tenant's registrations from the store when one is missing, and
checks own say against the store inside the commit (:func:`own_say_taken`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from datetime import datetime

from memledger.domain.families import Family, Schema
from memledger.domain.records import require_id
from memledger.errors import ConflictError, InvalidInputError, InvalidQueryError
from memledger.ports import Store, UnitOfWork


class TenantSchemas:
    """Per-tenant schemas over one base schema, cached and reloaded on a miss."""

    def __init__(self, base: Schema, store: Store) -> None:
        self.base = base
        self._store = store
        self._cached: dict[str, Schema] = {}
        self._lock = threading.Lock()

    def _combine(self, registered: Sequence[Family]) -> Schema:
        extra = [
            f for f in registered if f.name not in self.base.families or _narrows(self.base, f)
        ]
        return self.base.with_families(*extra) if extra else self.base

    def _load(self, tenant: str) -> Schema:
        with self._store.read() as unit:
            schema = self._combine(unit.registered_families(tenant))
        with self._lock:
            self._cached[tenant] = schema
        return schema

    def of(self, tenant: str) -> Schema:
        """The tenant's schema as the store holds it now."""
        require_id(tenant, "tenant", InvalidQueryError)
        return self._load(tenant)

    def covering(self, tenant: str, families: Iterable[str] = ()) -> Schema:
        """The tenant's schema from the cache, reloaded if it lacks one of ``families``
        (a family it still lacks then is unknown: the caller's lookup says so)."""
        with self._lock:
            schema = self._cached.get(tenant)
        if schema is not None and all(name in schema.families for name in families):
            return schema
        return self._load(tenant)

    def register(self, unit: UnitOfWork, tenant: str, family: Family, *, at: datetime) -> Family:
        """Register ``family`` for ``tenant`` inside ``unit``; returns the family as it
        stands (the existing one when the same definition was registered before)."""
        require_id(tenant, "tenant", InvalidQueryError)
        if not isinstance(family, Family):
            raise InvalidInputError(f"expected a Family, got {type(family).__name__}")
        if ":" in family.name:
            raise InvalidInputError(
                f"family name {family.name!r} has a ':'; grants name a family before the "
                "first ':' (family:scope), so no grant could ever name it"
            )
        if "observation" in family.kinds:
            raise InvalidInputError(
                "'observation' is what an unauthorised claim becomes, in every family; "
                "it is not a kind a family is registered with"
            )
        registered = {f.name: f for f in unit.registered_families(tenant)}
        known, mine = self.base.families.get(family.name), registered.get(family.name)
        if known is not None and mine is not None and _narrows(self.base, mine):
            existing: Family | None = mine  # the tenant took own say away: that stands
        elif known is not None and mine is None and _narrows(self.base, family):
            existing = None  # taking own say away from a family of the code's
        else:
            existing = known or mine
        if existing is None:
            unit.register_family(tenant, family, at=at)
            registered[family.name] = family
            existing = family
        elif existing.kinds != family.kinds or existing.own_say != family.own_say:
            raise ConflictError(
                f"family {family.name!r} already exists for tenant {tenant!r} with kinds "
                f"{sorted(existing.kinds)} and own_say={existing.own_say}; a family's "
                f"definition cannot change (asked: kinds {sorted(family.kinds)}, "
                f"own_say={family.own_say})"
            )
        return existing

    def forget_cached(self, tenant: str) -> None:
        """Drop the tenant's cached schema (after a registration commits)."""
        with self._lock:
            self._cached.pop(tenant, None)


def _narrows(base: Schema, family: Family) -> bool:
    """Whether ``family`` is one of ``base``'s with the same kinds, the subject's own say
    taken away."""
    known = base.families.get(family.name)
    return (
        known is not None and known.kinds == family.kinds and known.own_say and not family.own_say
    )


def own_say_taken(unit: UnitOfWork, tenant: str) -> frozenset[str]:
    """The families whose own say ``tenant`` has taken away, as the store holds them now
    (read inside a commit: a cached schema may not know yet)."""
    return frozenset(f.name for f in unit.registered_families(tenant) if not f.own_say)
