"""Claim families: slots of mutually exclusive values for one subject.

A :class:`Schema` says which families exist and which kinds each allows. A
claim naming an unknown family, or a kind its family does not allow, is a
caller mistake. ``observation`` is always allowed: it is what an unauthorised
claim becomes. The built-in families (:meth:`Schema.default`) are data:
``families.toml`` beside this module.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib.resources import files
from types import MappingProxyType

from memledger.domain.records import KINDS, Kind, require_id
from memledger.errors import InvalidInputError, UnknownFamilyError, UnknownKindError


@dataclass(frozen=True, slots=True, kw_only=True)
class Family:
    """One claim family and the kinds of claim it holds."""

    name: str
    kinds: frozenset[Kind] = frozenset({"preference", "fact"})
    description: str = ""
    own_say: bool = False
    """The subject's own say: what the subject's user states in an authenticated turn
    as the user (``role="user"``) sets it without a grant. For what is nobody else's
    to decide (where the subject lives, works, what it likes, how it wants to be
    answered), never for a business setting (a delivery or contact preference, a
    workflow), which needs a grant. A tenant may take it away from a built-in family
    by registering the family without it."""

    def __post_init__(self) -> None:
        require_id(self.name, "family name", InvalidInputError)
        unknown = set(self.kinds) - KINDS
        if unknown or not self.kinds:
            raise InvalidInputError(f"family {self.name!r} has unknown kinds {sorted(unknown)!r}")


def built_in() -> tuple[Family, ...]:
    """The built-in families, as ``families.toml`` beside this module writes them down."""
    table = tomllib.loads(files(__package__).joinpath("families.toml").read_text("utf-8"))
    return tuple(
        Family(
            name=entry["name"],
            kinds=frozenset(entry["kinds"]),
            description=entry["description"],
            own_say=entry.get("own_say", False),
        )
        for entry in table["family"]
    )


_DEFAULTS = built_in()


@dataclass(frozen=True, slots=True)
class Schema:
    """The families a store knows. Immutable; extend with :meth:`with_families`."""

    families: Mapping[str, Family] = field(default_factory=dict)

    @classmethod
    def default(cls) -> Schema:
        return cls.of(_DEFAULTS)

    @classmethod
    def of(cls, families: Iterable[Family]) -> Schema:
        table: dict[str, Family] = {}
        for family in families:
            if family.name in table:
                raise InvalidInputError(f"family {family.name!r} is defined twice")
            table[family.name] = family
        return cls(MappingProxyType(table))

    def with_families(self, *families: Family) -> Schema:
        """A schema with ``families`` added (or replacing ones of the same name)."""
        table = dict(self.families)
        table.update((f.name, f) for f in families)
        return Schema(MappingProxyType(table))

    def family(self, name: str) -> Family:
        try:
            return self.families[name]
        except KeyError:
            raise UnknownFamilyError(
                f"unknown family {name!r}; known families: {sorted(self.families)}"
            ) from None

    def check(self, family: str, kind: str) -> None:
        """Raise if ``family`` is unknown or does not allow ``kind``."""
        allowed = self.family(family).kinds
        if kind != "observation" and kind not in allowed:
            raise UnknownKindError(
                f"family {family!r} does not hold kind {kind!r}; it holds {sorted(allowed)}"
            )
