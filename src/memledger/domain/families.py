"""Claim families: slots of mutually exclusive values for one subject.

A :class:`Schema` says which families exist and which kinds each allows. A
claim naming an unknown family, or a kind its family does not allow, is a
caller mistake. ``observation`` is always allowed: it is what an unauthorised
claim becomes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
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


_DEFAULTS = (
    Family(
        name="delivery_preference",
        kinds=frozenset({"preference"}),
        description="When and how the subject wants deliveries or digests.",
    ),
    Family(
        name="contact_preference",
        kinds=frozenset({"preference"}),
        description="How the subject wants to be contacted.",
    ),
    Family(
        name="home_city",
        kinds=frozenset({"fact"}),
        description="Where the subject lives or is based.",
        own_say=True,
    ),
    Family(
        name="employer",
        kinds=frozenset({"fact"}),
        description="Who the subject works for.",
        own_say=True,
    ),
    Family(
        name="role",
        kinds=frozenset({"fact"}),
        description="The subject's job or role.",
        own_say=True,
    ),
    Family(
        name="primary_framework",
        kinds=frozenset({"preference", "fact"}),
        description="The main framework or tool the subject works with.",
        own_say=True,
    ),
    Family(
        name="plan",
        kinds=frozenset({"fact"}),
        description="A plan and whether it stands; scope plan:<slug>, one per plan.",
        own_say=True,
    ),
    Family(
        name="relationship",
        kinds=frozenset({"fact"}),
        description="People the subject is related to; scope person:<slug>.",
        own_say=True,
    ),
    Family(
        name="likes",
        kinds=frozenset({"preference"}),
        description="Things the subject likes or dislikes; scope item:<slug>, "
        "value {item, sentiment}.",
        own_say=True,
    ),
    Family(
        name="tool",
        kinds=frozenset({"fact"}),
        description="Tools and frameworks the subject uses; scope tool:<slug>.",
        own_say=True,
    ),
    Family(
        name="habit",
        kinds=frozenset({"fact"}),
        description="What the subject does regularly; scope habit:<slug>.",
        own_say=True,
    ),
    Family(
        name="activity",
        kinds=frozenset({"fact"}),
        description="What the subject works on or builds; scope work:<slug>.",
        own_say=True,
    ),
    Family(
        name="language",
        kinds=frozenset({"preference"}),
        description="The language the subject wants answers in.",
        own_say=True,
    ),
    Family(
        name="timezone",
        kinds=frozenset({"fact"}),
        description="The subject's time zone.",
        own_say=True,
    ),
    Family(
        name="attribute",
        kinds=frozenset({"fact", "preference"}),
        description="What a person says about themself, or about someone they name, that "
        "no other family holds: scope <attribute> for one value at a time (diet, hometown, "
        "age), <attribute>:<item> where several hold at once (allergy:peanut, pet:dog-rex), "
        "person:<relation>/<attribute>... for someone else's (person:sister/role).",
        own_say=True,
    ),
    Family(
        name="workflow",
        kinds=frozenset({"procedure"}),
        description="How a task is to be done; needs an explicit, authorised source.",
    ),
    Family(
        name="instruction",
        kinds=frozenset({"procedure", "preference"}),
        description="How the subject wants to be answered: a standing instruction "
        "(procedure) or stated preference of the user's own; scope rule:<slug>, "
        "value {rule, when} (when: the requests it applies to, '' for all).",
        own_say=True,
    ),
    Family(
        name="conversation",
        kinds=frozenset({"episode", "working"}),
        description="Raw turns and session notes.",
    ),
)


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
