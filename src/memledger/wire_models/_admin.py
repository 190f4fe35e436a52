"""A tenant's administration on the wire: API keys (:class:`Key`, :class:`KeyCreated`,
:class:`WhoAmI`), claim families (:class:`Family`) and quotas (:class:`QuotasOut`)."""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime

from memledger.domain.keys import KeyRole, PrincipalKind
from memledger.domain.records import Kind
from memledger.wire_models._base import WireModel

__all__ = ["Family", "Key", "KeyCreated", "QuotasOut", "WhoAmI"]


class Key(WireModel):
    """:func:`memledger.wire.key_to_dict`: never the token."""

    key_id: str
    tenant: str
    actor: str
    principal: PrincipalKind
    role: KeyRole
    grants: list[str]
    label: str
    created_at: AwareDatetime
    revoked_at: AwareDatetime | None
    last_used_at: AwareDatetime | None
    reads: list[str]
    """Other agents' private namespaces (``agent:<id>``) the key may read."""


class KeyCreated(WireModel):
    """A new key and its token, shown this once (only its hash is stored)."""

    key: Key
    token: str
    shown_once: Literal[True]


class Family(WireModel):
    """:func:`memledger.wire.family_to_dict`."""

    name: str
    kinds: list[Kind]
    description: str
    own_say: bool
    source: Literal["code", "registered"]


class WhoAmI(WireModel):
    """Who an API key acts as: every field comes from the key."""

    key_id: str
    tenant: str
    actor: str
    principal: PrincipalKind
    role: KeyRole
    grants: list[str]
    namespace: str | None
    """The key's own private namespace (``agent:<id>``, agents' keys), else ``null``."""
    reads: list[str]
    """Other agents' namespaces the key may read (admin keys read every namespace)."""


class QuotasOut(WireModel):
    """A tenant's quotas (:class:`memledger.domain.quotas.Quotas`); null: no limit."""

    max_records: int | None
    jobs_per_minute: int | None
    recalls_per_second: float | None
    packet_tokens: int | None
