"""The routes of the tenant's administration and of the key itself, as calls: the
review queue (:func:`reviews`, :func:`accept`, :func:`reject`), API keys
(:func:`keys`, :func:`create_key`, :func:`revoke_key`), claim families
(:func:`families_of`, :func:`register_family`), who the key is (:func:`me`) and
whether the service is ready (:func:`ready`, a flow)."""

from __future__ import annotations

from collections.abc import Iterable

from memledger import wire_models as wm
from memledger.client._requests import Call, Flow, get_call, nothing, post_call, segment
from memledger.domain.families import Family
from memledger.domain.keys import KeyRole, PrincipalKind
from memledger.domain.records import Grant
from memledger.errors import InvalidInputError, StoreError

__all__ = [
    "accept",
    "create_key",
    "families_of",
    "keys",
    "me",
    "ready",
    "register_family",
    "reject",
    "reviews",
    "revoke_key",
]


def reviews(*, include_resolved: bool = False) -> Call[list[wm.Review]]:
    """Events whose batch waits for review (``include_resolved``: the decided ones too)."""
    return get_call("/v1/reviews", list[wm.Review], all=include_resolved)


def _resolve(review_id: str, decision: str, reason: str) -> Call[wm.ReviewResolution]:
    path = f"/v1/reviews/{segment(review_id)}/{decision}"
    return post_call(path, wm.ReviewResolution, {"reason": reason})


def accept(review_id: str, *, reason: str) -> Call[wm.ReviewResolution]:
    """Accept a held batch: it is committed as if the order rule had applied it, with the
    key's actor recorded as who decided and ``reason`` as why (admin keys)."""
    return _resolve(review_id, "accept", reason)


def reject(review_id: str, *, reason: str) -> Call[wm.ReviewResolution]:
    """Reject a held batch: nothing is committed; who and why are recorded (admin keys)."""
    return _resolve(review_id, "reject", reason)


def keys() -> Call[list[wm.Key]]:
    """The tenant's API keys, revoked ones included; never a token (admin keys)."""
    return get_call("/v1/keys", list[wm.Key])


def create_key(
    actor: str,
    *,
    principal: PrincipalKind = "user",
    role: KeyRole = "write",
    grants: Iterable[Grant | str] = (),
    label: str = "",
    reads: Iterable[str] = (),
) -> Call[wm.KeyCreated]:
    """A new API key of the tenant for ``actor``; its token is in the answer this once
    (admin keys). ``reads``: other agents' private namespaces (``agent:<id>``) it reads."""
    body = {
        "actor": actor,
        "principal": principal,
        "role": role,
        "grants": [str(g) for g in grants],
        "label": label,
        "reads": list(reads),
    }
    return post_call("/v1/keys", wm.KeyCreated, body)


def revoke_key(key_id: str) -> Call[wm.Key]:
    """Revoke an API key: from now on it authenticates nothing (admin keys)."""
    return post_call(f"/v1/keys/{segment(key_id)}/revoke", wm.Key)


def families_of() -> Call[list[wm.Family]]:
    """The claim families of the tenant: the built-in ones and those registered for it."""
    return get_call("/v1/families", list[wm.Family])


def register_family(family: Family) -> Call[wm.Family]:
    """Register a claim family for the tenant (admin keys); the same definition again is a
    no-op, another definition of the name a :class:`~memledger.errors.ConflictError`."""
    if not isinstance(family, Family):
        raise InvalidInputError(f"expected a Family, got {type(family).__name__}")
    body = {
        "name": family.name,
        "kinds": sorted(family.kinds),
        "description": family.description,
        "own_say": family.own_say,
    }
    return post_call("/v1/families", wm.Family, body)


def me() -> Call[wm.WhoAmI]:
    """Who the API key acts as: its tenant, actor, role and grants."""
    return get_call("/v1/me", wm.WhoAmI)


def ready() -> Flow[bool]:
    """Whether the service answers reads (``/readyz``): ``False`` when it is not ready or
    cannot be reached."""
    try:
        yield Call(method="GET", path="/readyz", read=nothing)
    except StoreError:
        return False
    return True
