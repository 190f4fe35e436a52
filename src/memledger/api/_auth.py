"""Authentication and authorisation: who a request acts as, and whether it may.

``Authorization: Bearer mlk_...`` is checked by :meth:`Memory.authenticate`; the
:class:`~memledger.domain.keys.Principal` it gives is the request's tenant and actor,
whatever the body or the query says. ``Authorization: Token mlk_...`` (the scheme
mem0's clients send) carries the same key on every route. A ``tenant`` named anywhere
else (a body field, a ``?tenant=`` parameter) must be the key's own, or the request is
refused (403) before anything is read or written. A query parameter the route does not
read is refused too (422).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from memledger.api._services import Svc
from memledger.domain.keys import Principal
from memledger.errors import AuthenticationError, PermissionDeniedError

__all__ = ["Admin", "Reader", "Writer", "bearer", "readable", "same_tenant"]

bearer = HTTPBearer(
    auto_error=False,
    scheme_name="apiKey",
    description="An API key, `Authorization: Bearer mlk_<id>.<secret>` (`memledger keys "
    "create`, or `POST /v1/keys` with an admin key); `Authorization: Token mlk_...`, as "
    "mem0's clients send it, is the same key. The key decides the tenant and the actor of "
    "every request.",
)

MISSING = "This route needs an API key: send 'Authorization: Bearer mlk_<id>.<secret>'."


def same_tenant(principal: Principal, named: str | None) -> None:
    """Refuse a request naming another tenant than its key's (nothing is read or written)."""
    if named is not None and named != principal.tenant:
        raise PermissionDeniedError(
            f"API key {principal.key_id!r} acts for tenant {principal.tenant!r}; the request "
            "names another tenant. The tenant comes from the key: leave it out."
        )


def readable(principal: Principal, subject: str | None) -> None:
    """Refuse a read of another agent's private namespace (``agent:<id>...``) that the
    key does not name in its ``reads`` (:mod:`memledger.domain.keys`)."""
    principal.require_read(subject)


def principal(
    request: Request,
    svc: Svc,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Principal:
    token = credentials.credentials if credentials is not None else _token_scheme(request)
    if token is None:
        raise AuthenticationError(MISSING)
    found = svc.memory.authenticate(token)
    for named in request.query_params.getlist("tenant"):
        same_tenant(found, named)
    unknown = sorted(set(request.query_params) - _declared(request.scope.get("route")))
    if unknown:
        raise RequestValidationError(
            [
                {"type": "extra_forbidden", "loc": ("query", name), "msg": "Unknown parameter"}
                for name in unknown[:20]
            ]
        )
    return found


def _token_scheme(request: Request) -> str | None:
    """The key of an ``Authorization: Token <key>`` header, else ``None``."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "token" and token else None


def _declared(route: object) -> frozenset[str]:
    """The query parameters a route reads (and ``tenant``, checked above): any other is
    refused, so that a misspelt ``valid_at`` is not silently read as "now"."""
    names = {"tenant"}
    stack: list[Any] = [getattr(route, "dependant", None)]
    while stack:
        found = stack.pop()
        if found is not None:
            names.update(str(field.alias) for field in found.query_params)
            stack.extend(found.dependencies)
    return frozenset(names)


async def writer(who: Annotated[Principal, Depends(principal)]) -> Principal:
    if not who.may_write:
        raise PermissionDeniedError(f"API key {who.key_id!r} is read-only: it cannot write")
    return who


async def admin(who: Annotated[Principal, Depends(principal)]) -> Principal:
    if not who.may_admin:
        raise PermissionDeniedError(
            f"API key {who.key_id!r} has role {who.role!r}; this route needs an admin key"
        )
    return who


Reader = Annotated[Principal, Depends(principal)]
"""Any valid key of the tenant."""
Writer = Annotated[Principal, Depends(writer)]
"""A ``write`` or ``admin`` key."""
Admin = Annotated[Principal, Depends(admin)]
"""An ``admin`` key."""
