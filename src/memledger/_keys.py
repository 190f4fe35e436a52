"""API keys over the store: creation (where the randomness comes from), authentication
and revocation. The record, the token format and the hashing are pure, in
:mod:`memledger.domain.keys` (which also says why a plain SHA-256 is the right hash)."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta

from memledger.domain.families import Schema
from memledger.domain.keys import (
    REFUSED,
    ApiKey,
    KeyRole,
    Principal,
    PrincipalKind,
    hash_token,
    key_id_of,
    parse_token,
    token_of,
    verify_token,
)
from memledger.domain.records import Grant
from memledger.errors import (
    AuthenticationError,
    InvalidInputError,
    KeyNotFoundError,
    LastAdminKeyError,
    StoreLockedError,
)
from memledger.ports import Store, UnitOfWork

TOUCH_EVERY = timedelta(minutes=1)
"""``last_used_at`` is written at most this often per key: authenticating is a read,
and a busy key must not turn every request into a write."""

_UNKNOWN = hash_token("mlk_000000000000." + "0" * 43)
"""Compared against when a key id is unknown, so that an unknown id costs what a
known one does."""


def create_key(
    unit: UnitOfWork,
    tenant: str,
    actor: str,
    *,
    principal: PrincipalKind,
    role: KeyRole,
    grants: Iterable[Grant | str],
    label: str,
    schema: Schema,
    now: datetime,
    reads: Iterable[str] = (),
) -> tuple[ApiKey, str]:
    """A new key and its token (shown once: only its hash is stored). Grants must name
    families of the tenant's schema (or ``"*"``): a misspelt grant would grant nothing."""
    if isinstance(grants, str | bytes):
        raise InvalidInputError("grants must be a collection of grants, not one string")
    if isinstance(reads, str | bytes) or not isinstance(reads, Iterable):
        raise InvalidInputError("reads must be a collection of namespaces, not one string")
    key = ApiKey(
        key_id=key_id_of(secrets.token_hex(6)),
        tenant=tenant,
        actor_id=actor,
        principal=principal,
        role=role,
        grants=frozenset(g if isinstance(g, Grant) else Grant.parse(g) for g in grants),
        label=label,
        created_at=now,
        reads=frozenset(reads),
    )
    for grant in key.grants:
        if grant.family != "*":
            schema.family(grant.family)  # UnknownFamilyError
    while unit.get_key(key.key_id) is not None:  # 48 random bits: a clash is all but impossible
        key = replace(key, key_id=key_id_of(secrets.token_hex(6)))
    token = token_of(key.key_id, secrets.token_urlsafe(32))
    unit.add_key(key, token_hash=hash_token(token))
    return key, token


def authenticate(store: Store, token: object, *, now: datetime, touch: bool) -> Principal:
    """The principal a token stands for, or :class:`AuthenticationError` with one message
    for an unknown, malformed or revoked key."""
    key_id = parse_token(token)
    assert isinstance(token, str)  # parse_token refused anything else
    with store.read() as unit:
        stored = unit.get_key(key_id)
    matches = verify_token(token, stored.token_hash if stored is not None else _UNKNOWN)
    if stored is None or not matches or stored.key.revoked:
        raise AuthenticationError(REFUSED)
    key = stored.key
    if touch and (key.last_used_at is None or now - key.last_used_at >= TOUCH_EVERY):
        try:
            with store.write() as unit:
                unit.touch_key(key.key_id, at=now)
        except StoreLockedError:  # a usage stamp is not worth failing a request for
            pass
    return key.principal_of()


def revoke_key(unit: UnitOfWork, tenant: str, key_id: str, *, now: datetime) -> ApiKey:
    """Revoke a key of ``tenant``; revoking it again returns it as it was revoked.

    The tenant's last live admin key is not revoked (:class:`LastAdminKeyError`): no
    key could manage keys after it. The rule is checked after the write, in the same
    unit, which then rolls back: the store takes a tenant's key revocations one at a
    time, so two admin keys revoked at once cannot both see the other as live."""
    stored = unit.get_key(key_id)
    if stored is None or stored.key.tenant != tenant:
        raise KeyNotFoundError(f"no API key {key_id!r} for tenant {tenant!r}")
    if stored.key.revoked:
        return stored.key
    unit.revoke_key(tenant, key_id, at=now)
    if stored.key.role == "admin" and not any(
        key.role == "admin" and not key.revoked for key in unit.keys(tenant)
    ):
        raise LastAdminKeyError(
            f"API key {key_id!r} is the last live admin key of tenant {tenant!r}; "
            "create another admin key before revoking it"
        )
    return replace(stored.key, revoked_at=now)
