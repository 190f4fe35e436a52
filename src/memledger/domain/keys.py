"""API keys and the principal a key stands for. Pure: no I/O, no clock, no randomness.

A key is bound to one tenant, one actor identity (a user, an agent or a service)
and a set of grants, with a role: ``read`` (reads only), ``write`` (reads, and
writes as its actor) or ``admin`` (also keys, families and the review queue).
Whoever presents the key *is* that actor of that tenant: the tenant and actor of
a request come from the key, never from its body.

**Namespaces (several agents).** A subject ``agent:<id>``, or under it
(``agent:<id>/user-42``: agent ``<id>``'s own notes about user-42), belongs to agent
``<id>``'s private namespace; every other subject is the tenant's shared namespace.
A key writes shared subjects and, if it is agent ``<id>``'s, its own namespace; it
reads shared subjects, its own namespace and the namespaces its key names in
``reads`` (``"agent:planner"``); admin keys read every namespace (audit), and write
only their own. :func:`namespace_of` tells a subject's namespace.

The token a caller presents is ``mlk_<12 hex>.<secret>``: the public key id, a
dot, and 256 random bits (``secrets.token_urlsafe(32)``, 43 characters). It is
shown once, when the key is created; the store keeps only a hash of it.

**Why a plain SHA-256.** Slow, salted password hashes (scrypt, PBKDF2) exist to
make guessing *low-entropy* secrets expensive after a database leaks. The secret
here is not chosen by a person: it is 256 uniformly random bits, so no amount of
hashing speed makes guessing it feasible, and a salt adds nothing (no two keys
share a secret, and precomputed tables over 2**256 values cannot exist). A fast
hash lets every request be authenticated in about a microsecond instead of the
tens of milliseconds scrypt would add to each one. The hash covers the whole
token, so a stored hash is bound to its key id; it is kept as ``sha256$<hex>``
so that another scheme could be told apart later, and compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, get_args

from memledger.domain.records import Actor, Grant, require_aware, require_id, require_text
from memledger.errors import AuthenticationError, InvalidInputError, PermissionDeniedError

__all__ = [
    "KEY_ROLES",
    "PRINCIPAL_KINDS",
    "REFUSED",
    "ApiKey",
    "KeyRole",
    "Principal",
    "PrincipalKind",
    "hash_token",
    "key_id_of",
    "namespace_of",
    "parse_token",
    "token_of",
    "verify_token",
]

PrincipalKind = Literal["user", "agent", "service"]
"""What a key stands for: a person, an AI agent, or another system (an account service).
Only a ``service`` key may send events on a setting channel (``system``,
``account_service``): a chat user or an agent cannot make its words a business setting."""

KeyRole = Literal["read", "write", "admin"]
"""``read``: reads only. ``write``: reads, and writes as the key's actor. ``admin``: also
manages keys, registers families and resolves the review queue of its tenant."""

PRINCIPAL_KINDS: frozenset[str] = frozenset(get_args(PrincipalKind))
KEY_ROLES: frozenset[str] = frozenset(get_args(KeyRole))

KEY_PREFIX = "mlk_"
MAX_LABEL_CHARS = 200

_KEY_ID = re.compile(r"mlk_[0-9a-f]{12}")
_TOKEN = re.compile(r"(mlk_[0-9a-f]{12})\.([A-Za-z0-9_-]{43})")
_HASH_SCHEME = "sha256$"

REFUSED = "API key not accepted: it is unknown, malformed or revoked"
"""The one message for every refused key: which of the three is not said."""


def key_id_of(random_hex: str) -> str:
    """The public id of a key made from 12 random hex digits (48 bits)."""
    if not re.fullmatch(r"[0-9a-f]{12}", random_hex):
        raise InvalidInputError("a key id is made of 12 lowercase hex digits")
    return KEY_PREFIX + random_hex


def token_of(key_id: str, secret: str) -> str:
    """The token a caller presents: ``mlk_<id>.<secret>``."""
    token = f"{key_id}.{secret}"
    if not _TOKEN.fullmatch(token):
        raise InvalidInputError(
            "a key token is mlk_<12 hex>.<43 url-safe characters> (secrets.token_urlsafe(32))"
        )
    return token


def parse_token(token: object) -> str:
    """The key id of a well-formed token, else :class:`AuthenticationError` (:data:`REFUSED`)."""
    if not isinstance(token, str):
        raise AuthenticationError(REFUSED)
    match = _TOKEN.fullmatch(token.strip())
    if match is None:
        raise AuthenticationError(REFUSED)
    return match[1]


def hash_token(token: str) -> str:
    """What the store keeps of a token: ``sha256$<hex>`` over the whole token."""
    return _HASH_SCHEME + hashlib.sha256(token.strip().encode()).hexdigest()


def verify_token(token: str, stored: str) -> bool:
    """Whether ``token`` hashes to ``stored``, compared in constant time."""
    return hmac.compare_digest(hash_token(token).encode(), stored.encode())


AGENT_PREFIX = "agent:"


def namespace_of(subject: str) -> str | None:
    """The private namespace a subject is in (``"agent:planner"`` for ``agent:planner``
    and ``agent:planner/user-42``), or ``None``: the tenant's shared namespace."""
    if not subject.startswith(AGENT_PREFIX):
        return None
    agent = subject[len(AGENT_PREFIX) :].split("/", 1)[0]
    return AGENT_PREFIX + agent if agent else None


def _namespaces(value: object) -> frozenset[str]:
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise InvalidInputError(
            f"key reads must be a collection of namespaces ('agent:<id>'), "
            f"got {type(value).__name__}"
        )
    found = set()
    for name in value:
        if not isinstance(name, str) or namespace_of(name) != name:
            raise InvalidInputError(f"a namespace a key reads is 'agent:<id>', got {name!r}")
        require_id(name, "namespace", InvalidInputError)
        found.add(name)
    return frozenset(found)


def _grants(value: object) -> frozenset[Grant]:
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise InvalidInputError(
            f"key grants must be a set of Grant or 'family:scope' strings, "
            f"got {type(value).__name__}"
        )
    return Actor(id="grants", grants=frozenset(value)).grants  # the actor's own parsing


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiKey:
    """A stored API key, without its secret (which is never stored)."""

    key_id: str
    tenant: str
    actor_id: str
    principal: PrincipalKind
    role: KeyRole
    grants: frozenset[Grant]
    created_at: datetime
    label: str = ""
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None
    reads: frozenset[str] = frozenset()
    """Other agents' namespaces (``"agent:<id>"``) the key may read."""

    def __post_init__(self) -> None:
        if not isinstance(self.key_id, str) or not _KEY_ID.fullmatch(self.key_id):
            raise InvalidInputError(f"key id {self.key_id!r} is not mlk_<12 hex>")
        require_id(self.tenant, "tenant", InvalidInputError)
        require_id(self.actor_id, "actor id", InvalidInputError)
        if not isinstance(self.principal, str) or self.principal not in PRINCIPAL_KINDS:
            raise InvalidInputError(
                f"unknown principal {self.principal!r}; expected one of {sorted(PRINCIPAL_KINDS)}"
            )
        if not isinstance(self.role, str) or self.role not in KEY_ROLES:
            raise InvalidInputError(
                f"unknown role {self.role!r}; expected one of {sorted(KEY_ROLES)}"
            )
        object.__setattr__(self, "grants", _grants(self.grants))
        object.__setattr__(self, "reads", _namespaces(self.reads))
        label = require_text(self.label, "label", InvalidInputError)
        if len(label) > MAX_LABEL_CHARS or "\n" in label:
            raise InvalidInputError(f"a key label is one line of at most {MAX_LABEL_CHARS} chars")
        for what in ("created_at", "revoked_at", "last_used_at"):
            value = getattr(self, what)
            if value is not None or what == "created_at":
                object.__setattr__(self, what, require_aware(value, what, InvalidInputError))

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def principal_of(self) -> Principal:
        """Who presents this key: its tenant, and its actor, authenticated, with its grants."""
        return Principal(
            tenant=self.tenant,
            actor=Actor(id=self.actor_id, authenticated=True, grants=self.grants),
            role=self.role,
            kind=self.principal,
            key_id=self.key_id,
            reads=self.reads,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Principal:
    """Who an authenticated request acts as. Every field comes from the key."""

    tenant: str
    actor: Actor
    role: KeyRole
    kind: PrincipalKind
    key_id: str
    reads: frozenset[str] = frozenset()

    @property
    def own_namespace(self) -> str | None:
        """``agent:<id>`` for an agent's key (its private namespace), else ``None``."""
        return AGENT_PREFIX + self.actor.id if self.kind == "agent" else None

    def may_read(self, subject: str) -> bool:
        """Whether the key may read ``subject``: shared, its own namespace, one it names in
        ``reads``, or any with an admin key."""
        namespace = namespace_of(subject)
        return (
            namespace is None
            or namespace == self.own_namespace
            or namespace in self.reads
            or self.may_admin
        )

    @property
    def namespaces(self) -> frozenset[str] | None:
        """The private namespaces the key reads besides the shared one (its own and those
        in ``reads``), or ``None``: every namespace (an admin key). What a store query
        filters by, so that another agent's namespace is not even a row."""
        if self.may_admin:
            return None
        own = self.own_namespace
        return self.reads if own is None else self.reads | {own}

    def may_write_to(self, subject: str) -> bool:
        """Whether the key may write about ``subject``: shared, or its own namespace."""
        namespace = namespace_of(subject)
        return self.may_write and (namespace is None or namespace == self.own_namespace)

    def require_read(self, subject: str | None) -> None:
        """:class:`PermissionDeniedError` unless the key may read ``subject`` (``None``:
        the whole tenant, filtered record by record instead)."""
        if subject is not None and not self.may_read(subject):
            raise PermissionDeniedError(
                f"API key {self.key_id!r} may not read {subject!r}: it is another agent's "
                "private namespace"
            )

    def require_write_to(self, subject: str) -> None:
        """:class:`PermissionDeniedError` unless the key may write about ``subject``: a
        read-only key is told it is read-only, a writer that it is another agent's
        private namespace."""
        if not self.may_write:
            raise PermissionDeniedError(
                f"API key {self.key_id!r} is read-only: it cannot change {subject!r}"
            )
        if not self.may_write_to(subject):
            raise PermissionDeniedError(
                f"API key {self.key_id!r} may not change {subject!r}: it is another agent's "
                f"private namespace ({namespace_of(subject)!r})"
            )

    @property
    def may_write(self) -> bool:
        """Whether the key may write (ingest, revoke): ``write`` and ``admin`` keys."""
        return self.role in ("write", "admin")

    @property
    def may_admin(self) -> bool:
        """Whether the key may manage keys, families and the review queue of its tenant."""
        return self.role == "admin"
