"""The ``Memledger-Consistency`` header: :class:`ConsistencyToken`, revision floors per
(subject, family), written as ``user-42/delivery_preference@3,user-42/home_city@1``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import quote, unquote

from memledger import errors as e
from memledger.domain.records import FamilyRevision, require_id
from memledger.wire_models._events import RevisionToken

__all__ = ["CONSISTENCY_HEADER", "MAX_FLOORS", "MAX_REVISION", "ConsistencyToken"]

CONSISTENCY_HEADER = "Memledger-Consistency"
_SAFE = "._:+-"
"""Characters of an identifier kept as they are in a token; ``/`` and ``@`` (allowed in
identifiers) are percent-escaped, so that they separate the parts unambiguously."""
MAX_FLOORS = 256
MAX_REVISION = 2**63 - 1


@dataclass(frozen=True, slots=True)
class ConsistencyToken:
    """Revision floors per (subject, family): a read given the token must not answer
    below any of them that concern it.

    As text (the ``Memledger-Consistency`` header): comma-separated
    ``<subject>/<family>@<revision>``, the identifiers percent-escaped where they
    hold ``/``, ``@``, ``,`` or ``%``, sorted:
    ``user-42/delivery_preference@3,user-42/home_city@1``.
    """

    floors: Mapping[tuple[str, str], int]

    @classmethod
    def of(cls, revisions: Iterable[FamilyRevision | RevisionToken]) -> ConsistencyToken:
        """The token of a receipt's revisions (the highest per family)."""
        floors: dict[tuple[str, str], int] = {}
        for r in revisions:
            key = (r.subject, r.family)
            floors[key] = max(floors.get(key, 0), r.revision)
        return cls(floors)

    @classmethod
    def parse(cls, text: str) -> ConsistencyToken:
        """The token written as ``text``; :class:`~memledger.errors.InvalidQueryError`
        saying what is wrong when it is malformed."""
        floors: dict[tuple[str, str], int] = {}
        parts = [p.strip() for p in text.split(",")]
        if not text.strip() or len(parts) > MAX_FLOORS:
            raise e.InvalidQueryError(
                f"malformed consistency token: expected 1 to {MAX_FLOORS} comma-separated "
                "'<subject>/<family>@<revision>' parts"
            )
        for n, part in enumerate(parts, 1):
            slot, at, revision = part.rpartition("@")
            names = slot.split("/")
            if not at or len(names) != 2 or not revision.isascii() or not revision.isdigit():
                raise e.InvalidQueryError(
                    f"malformed consistency token: part {n} is not "
                    "'<subject>/<family>@<revision>' (a receipt's token, as the "
                    f"{CONSISTENCY_HEADER} header of a write returned it)"
                )
            what = f"malformed consistency token: part {n}:"
            try:
                subject, family = (unquote(name, errors="strict") for name in names)
            except UnicodeDecodeError:
                raise e.InvalidQueryError(f"{what} a percent-escape is not UTF-8") from None
            require_id(subject, f"{what} subject", e.InvalidQueryError)
            require_id(family, f"{what} family", e.InvalidQueryError)
            if len(revision) > 19 or int(revision) > MAX_REVISION:
                raise e.InvalidQueryError(f"{what} revision {revision} is too large")
            key = (subject, family)
            floors[key] = max(floors.get(key, 0), int(revision))
        return cls(floors)

    def __str__(self) -> str:
        return ",".join(
            f"{quote(s, safe=_SAFE)}/{quote(f, safe=_SAFE)}@{r}"
            for (s, f), r in sorted(self.floors.items())
        )

    def __bool__(self) -> bool:
        return bool(self.floors)

    def merge(self, other: ConsistencyToken) -> ConsistencyToken:
        """Both tokens' floors, the higher where they name the same family."""
        floors = dict(self.floors)
        for key, revision in other.floors.items():
            floors[key] = max(floors.get(key, 0), revision)
        return ConsistencyToken(floors)

    def floor(self, subject: str, family: str) -> int | None:
        return self.floors.get((subject, family))

    def of_subject(self, subject: str) -> dict[str, int]:
        """The floors of ``subject``'s families, by family."""
        return {f: r for (s, f), r in self.floors.items() if s == subject}
